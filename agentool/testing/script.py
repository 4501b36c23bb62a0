"""Scripts for `AgentDouble`: which prompts a script answers, and the steps it plays."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

from pydantic_ai.messages import ModelMessage
from pydantic_core import PydanticSerializationError, to_json

from .._options import check_function, check_instance, check_limit, check_text, refuse
from ..errors import ConfigurationError, ExpectationError, quote
from .log import CallRecord

__all__ = (
    'Matcher',
    'Operation',
    'Regex',
    'Prompt',
    'Predicate',
    'ScriptRun',
    'Call',
    'Output',
    'OutputFrom',
    'Step',
    'Script',
)


@runtime_checkable
class Matcher(Protocol):
    """Decides whether a script answers a prompt."""

    def matches(self, prompt: str) -> bool: ...

    def describe(self) -> str:
        """A short description for failure messages."""
        ...


@dataclass(frozen=True)
class Operation:
    """Matches a JSON prompt whose `field` (by default `operation`) equals `value`."""

    value: str
    field: str = field(default='operation', kw_only=True)

    def __post_init__(self) -> None:
        check_text('value', self.value)
        if not (isinstance(cast(object, self.field), str) and self.field):
            raise refuse('field', 'a field name', self.field, what='Operation(field=...)')

    def matches(self, prompt: str) -> bool:
        try:
            data: object = json.loads(prompt)
        except ValueError:
            return False
        return isinstance(data, dict) and cast('dict[str, Any]', data).get(self.field) == self.value

    def describe(self) -> str:
        return f'{self.field}={self.value!r}'


@dataclass(frozen=True)
class Regex:
    """Matches a prompt in which `pattern` is found (`re.search`)."""

    pattern: str | re.Pattern[str]
    flags: int = field(default=0, kw_only=True)

    def __post_init__(self) -> None:
        # A bytes pattern cannot search a text prompt.
        check_instance('pattern', self._source, str, expected='a string or a compiled re.Pattern of text')
        check_instance('flags', cast(object, self.flags), int, expected='re flags (an int)')
        try:
            re.compile(self.pattern, self.flags)  # cached by `re`, so `matches` pays nothing more
        except (re.error, ValueError) as error:  # ValueError: flags given with a compiled pattern
            raise ConfigurationError(
                f'Regex({self.pattern!r}) is not a valid regular expression: {error}',
                option='pattern',
                pattern=self._source,
                error=str(error),
            ) from None

    @property
    def _source(self) -> str:
        return cast(str, getattr(self.pattern, 'pattern', self.pattern))

    def matches(self, prompt: str) -> bool:
        return re.search(self.pattern, prompt, self.flags) is not None

    def describe(self) -> str:
        return f'regex {self._source!r}'


@dataclass(frozen=True)
class Prompt:
    """Matches exactly this prompt text."""

    text: str

    def __post_init__(self) -> None:
        check_text('text', self.text)

    def matches(self, prompt: str) -> bool:
        return prompt == self.text

    def describe(self) -> str:
        return f'prompt {self.text!r}'


@dataclass(frozen=True)
class Predicate:
    """Matches a prompt for which `function` returns true."""

    function: Callable[[str], bool]
    description: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        check_function('function', self.function)
        check_text('description', self.description, optional=True)

    def matches(self, prompt: str) -> bool:
        return bool(self.function(prompt))

    def describe(self) -> str:
        return self.description or f'predicate {getattr(self.function, "__name__", repr(self.function))}'


@dataclass(frozen=True, kw_only=True)
class ScriptRun:
    """What a script's functions see: the run's prompt and the tool calls made so far, with results."""

    prompt: str
    calls: Sequence[CallRecord]
    messages: Sequence[ModelMessage]

    def result(self, tool: str) -> Any:
        """The latest result `tool` returned in this run (an `ExpectationError` when it has not)."""
        for record in reversed(self.calls):
            if record.tool == tool and record.returned:
                return record.result
        made = ', '.join(repr(r.tool) for r in self.calls) or 'none'
        raise ExpectationError(
            f'the script asked for the result of tool {tool!r}, which has not returned in this run '
            f'(calls so far: {made})',
            tool=tool,
        )

    def json(self) -> Any:
        """The prompt parsed as JSON (an `ExpectationError` when it is not JSON)."""
        try:
            return json.loads(self.prompt)
        except ValueError as error:
            raise ExpectationError(
                f'the script read the prompt as JSON, but it is not JSON ({error}): {quote(self.prompt)}',
                prompt=self.prompt,
                error=str(error),
            ) from None


Args: TypeAlias = Mapping[str, Any] | Callable[[ScriptRun], Mapping[str, Any]]
"""Arguments of a scripted call: a mapping, or a function of the run so far that returns one."""


@dataclass(frozen=True)
class Call:
    """One call to a tool of the agent, by name; `args` may be a function of the run so far."""

    tool: str
    args: Args = field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        tool, args = cast(object, self.tool), cast(object, self.args)
        if not (isinstance(tool, str) and tool):
            raise refuse('tool', 'a tool name', tool, what='Call(tool=...)')
        if not (isinstance(args, Mapping) or callable(args)):
            hint = ' (parse JSON text first: Call(tool, json.loads(text)))' if isinstance(args, str | bytes) else ''
            raise self._refused(f'Call({tool!r}) args must be a mapping (a dict) or a function of the run{hint}', args)

    def arguments(self, run: ScriptRun) -> dict[str, Any]:
        """The arguments for this call in `run`: a `ConfigurationError` unless a JSON-compatible mapping."""
        args = cast(object, self.args(run) if callable(self.args) else self.args)
        if not isinstance(args, Mapping):
            raise self._refused(f'the args function of Call({self.tool!r}) must return a mapping (a dict)', args)
        arguments = dict(cast('Mapping[str, Any]', args))
        try:
            to_json(arguments)
        except PydanticSerializationError as error:
            said = f'Call({self.tool!r}) args must be JSON-compatible, as a model sends them: {error}'
            raise ConfigurationError(said, tool=self.tool, option='args', value=repr(arguments)) from None
        return arguments

    def _refused(self, said: str, args: object) -> ConfigurationError:
        return ConfigurationError(f'{said}; got {args!r}', tool=self.tool, option='args', value=repr(args))


@dataclass(frozen=True)
class Output:
    """The run's final output; `tool` names the output tool to answer through (by default the one it fits)."""

    value: Any
    tool: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class OutputFrom:
    """The final output of the run, computed from the run so far (sync or async function)."""

    function: Callable[[ScriptRun], Any | Awaitable[Any]]

    def __post_init__(self) -> None:
        check_function('function', self.function)


Step: TypeAlias = Call | Sequence[Call] | Output | OutputFrom
"""One model response: a call, several calls made together, or the final output."""

_Step: TypeAlias = tuple[Call, ...] | Output | OutputFrom


class Script:
    """Steps a double plays for the prompts `when` matches (every prompt when `when` is `None`).

    `steps` are tool calls, then one final `Output` or `OutputFrom`; `times` bounds the runs it answers;
    `name` (by default its position and matcher) is shown in failure messages.
    """

    __slots__ = ('name', 'steps', 'times', 'when')

    def __init__(
        self,
        *steps: Step,
        when: Matcher | Callable[[str], bool] | None = None,
        name: str | None = None,
        times: int | None = None,
    ) -> None:
        if when is not None and not isinstance(when, Matcher) and not callable(when):
            raise ConfigurationError(
                f'Script(when=...) takes a Matcher or a function of the prompt; got {when!r}',
                option='when',
                value=repr(when),
            )
        self.steps: tuple[_Step, ...] = tuple(_normalise(step) for step in steps)
        self.when: Matcher | None = when if when is None or isinstance(when, Matcher) else Predicate(when)
        check_text('name', name, optional=True)
        self.name = name
        self.times = times
        if not self.steps or not isinstance(self.steps[-1], Output | OutputFrom):
            raise ConfigurationError(
                'a script must end with its final output: Output(value) or OutputFrom(function)', option='steps'
            )
        if any(isinstance(step, Output | OutputFrom) for step in self.steps[:-1]):
            raise ConfigurationError('a script has one final output, as its last step', option='steps')
        check_limit('times', times, optional=True)

    def matches(self, prompt: str) -> bool:
        return self.when is None or self.when.matches(prompt)

    def label(self, index: int) -> str:
        """The script's name in messages: its `name`, else its position and matcher."""
        if self.name is not None:
            return repr(self.name)
        where = f' ({self.when.describe()})' if self.when is not None else ''
        return f'#{index + 1}{where}'

    def __repr__(self) -> str:
        return f'Script(steps={len(self.steps)}, when={self.when!r}, name={self.name!r}, times={self.times!r})'


def _normalise(step: Step) -> _Step:
    if isinstance(step, Call):
        return (step,)
    if isinstance(step, Output | OutputFrom):
        return step
    # Checked at run time: a test may pass anything here.
    anything = cast(object, step)
    items = tuple(cast('Iterable[object]', anything)) if isinstance(anything, Iterable) else ()
    calls = tuple(item for item in items if isinstance(item, Call))
    if not calls or len(calls) != len(items):
        raise ConfigurationError(
            f'a script step is a Call, a non-empty sequence of Calls or an output; got {step!r}',
            option='steps',
            value=repr(step),
        )
    return calls
