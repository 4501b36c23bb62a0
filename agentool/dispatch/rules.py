"""Dispatch rules: each looks at a turn's prompt (and deps) and either names an agentool input or declines.

A rule never runs anything: the capability validates and runs the `Dispatch` it returns.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, cast

from pydantic import BaseModel
from pydantic_ai import RunContext
from pydantic_core import from_json

from .._options import refuse
from ..core.definition import DEFAULT_MAX_INPUT_BYTES
from ..core.registry import AgenToolRegistry
from ..errors import ConfigurationError, DispatchTargetError, InputTooLargeError, clip, did_you_mean, quote, suggest

__all__ = (
    'OnInvalid',
    'DispatchRequest',
    'Dispatch',
    'DispatchRule',
    'JsonRule',
    'CommandRule',
    'PredicateRule',
    'AGENTOOL_KEY',
    'Candidates',
    'unknown_target',
)

OnInvalid = Literal['fall_through', 'raise']
"""What a matched rule does when its input fails validation: let the model answer, or raise."""

AGENTOOL_KEY = 'agentool'
"""A JSON prompt may name its agentool under this key (removed before validation)."""

DispatchInput = str | Mapping[str, Any] | BaseModel
"""An agentool input: JSON text, a mapping or a model, as `injector.call` takes it."""


class Candidates(Mapping[str, Sequence[str]]):
    """Each candidate agentool's operations, each looked up only when a rule asks for it."""

    def __init__(self, registry: AgenToolRegistry, names: Sequence[str] | None) -> None:
        self._registry = registry
        self._names = names

    @cached_property
    def _candidates(self) -> list[str]:
        registry = self._registry
        for name in self._names or ():
            if name not in registry:
                suggestions = suggest(name, registry.list_names())
                raise ConfigurationError(
                    f'DispatchCapability(agentools=...) names {quote(name)}, which is not registered'
                    f'{did_you_mean(suggestions)}',
                    option='agentools',
                    value=quote(name),
                    suggestions=suggestions,
                )
        return registry.list_names() if self._names is None else list(self._names)

    def max_input_bytes(self, name: str | None) -> int:
        """The input limit of agentool `name` (the default if not registered); with `None`, the largest candidate's."""
        if name is not None:
            return self._registry.require(name).max_input_bytes if name in self._registry else DEFAULT_MAX_INPUT_BYTES
        limits = [self._registry.require(candidate).max_input_bytes for candidate in self._candidates]
        return max(limits, default=DEFAULT_MAX_INPUT_BYTES)

    def __contains__(self, key: object) -> bool:
        # Every registered agentool is a candidate unless `agentools=` lists them (a short list).
        return key in self._registry if self._names is None else key in self._candidates

    def __getitem__(self, key: str) -> Sequence[str]:
        if key not in self:
            raise KeyError(key)
        # From the configuration, not the manager: an agentool that cannot run refuses only when a prompt picks it.
        return list(self._registry.require(key).routing_config.operation_map)

    def __iter__(self) -> Iterator[str]:
        return iter(self._candidates)

    def __len__(self) -> int:
        return len(self._candidates)


def unknown_target(rule: str, name: str, known: Iterable[str], *, scope: str = '') -> DispatchTargetError:
    """The error for rule `rule` naming agentool `name`, not among `known`; `scope` ends "which is not registered"."""
    suggestions = suggest(name, known)
    return DispatchTargetError(
        f'rule {rule!r} names agentool {quote(name)}, which is not registered{scope}{did_you_mean(suggestions)}',
        rule=rule,
        target=clip(name),
        target_length=len(name),
        suggestions=suggestions,
    )


@dataclass(frozen=True, kw_only=True)
class DispatchRequest:
    """What a rule sees of a turn: the prompt as text, the run's deps and its context."""

    prompt: str
    deps: Any
    ctx: RunContext[Any]


@dataclass(frozen=True, kw_only=True)
class Dispatch:
    """A rule's decision to answer a turn: run `agentool` on `input`."""

    agentool: str
    input: DispatchInput


@dataclass(frozen=True, kw_only=True)
class DispatchRule(ABC):
    """Base of every rule (a rule of your own implements `match`; the dispatch guide shows how)."""

    name: str = ''
    """Shown in spans, counters and errors; a rule derives one from its settings (or its class) when empty."""
    on_invalid: OnInvalid = 'raise'
    """`'raise'` (`InvalidInputError`) by default: a command meant for a service should not reach an LLM."""

    def __post_init__(self) -> None:
        name, on_invalid = cast(object, self.name), cast(object, self.on_invalid)
        if not isinstance(name, str):
            raise refuse('name', 'a string', name, what=f'{type(self).__name__}(name=...)')
        if on_invalid not in ('fall_through', 'raise'):
            raise _refused(self, 'on_invalid', "'fall_through' or 'raise'")
        target = cast(object, getattr(self, 'agentool', None))
        if target is not None and not (isinstance(target, str) and target):
            raise refuse('agentool', 'an agentool name', target, what=f'{type(self).__name__}(agentool=...)', rule=name)

    @property
    def label(self) -> str:
        """The rule's name, or the one derived from its settings."""
        return self.name or self._default_name()

    def _default_name(self) -> str:
        words = type(self).__name__
        words = words.removesuffix('Rule') or words
        return re.sub(r'(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])', '_', words).lower()

    @abstractmethod
    def match(self, request: DispatchRequest, operations: Mapping[str, Sequence[str]]) -> Dispatch | None:
        """The agentool input for this turn, or `None` to decline; `ValueError` if it cannot build one.

        `operations` holds each candidate agentool's operations, for rules that find their target.
        """


@dataclass(frozen=True, kw_only=True)
class JsonRule(DispatchRule):
    """A prompt that is a JSON object goes to `agentool`, else to the one it names (the dispatch guide)."""

    agentool: str | None = None
    operation_field: str = 'operation'
    """The key naming the operation, used to find the target when `agentool` is not set."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not _is_name(self.operation_field):
            raise _refused(self, 'operation_field', 'a field name (a non-empty string)')

    def _default_name(self) -> str:
        return f'json:{self.agentool}' if self.agentool else 'json'

    def match(self, request: DispatchRequest, operations: Mapping[str, Sequence[str]]) -> Dispatch | None:
        text = request.prompt.strip()
        if not (text.startswith('{') and text.endswith('}')):
            return None
        # Size first: an object no candidate may take is refused before any parsing.
        if (error := _too_large(self, request, operations, 'the JSON prompt')) is not None:
            raise error
        try:
            # Braces around valid JSON make an object.
            value = cast('dict[str, Any]', from_json(text))
        except (ValueError, TypeError):  # not JSON (TypeError: a lone surrogate, which no JSON can hold)
            return None  # free text for the model
        if self.agentool is not None:  # the key `"agentool"`, if any, is an ordinary field here
            return Dispatch(agentool=self.agentool, input=text)
        keyed = AGENTOOL_KEY in value
        if isinstance(named := value.pop(AGENTOOL_KEY, None), str):
            if named not in operations:  # unknown, or left out by `DispatchCapability(agentools=...)`
                raise unknown_target(self.label, named, operations, scope=' or not one this dispatch may run')
            return Dispatch(agentool=named, input=value)
        operation = value.get(self.operation_field)
        if not isinstance(operation, str):  # no operation names it (every operation is a string)
            return None
        matches = [name for name, ops in operations.items() if operation in ops]
        if not matches:
            return None
        if len(matches) > 1:
            raise DispatchTargetError(
                f'rule {self.label!r}: operation {operation!r} belongs to several agentools ({", ".join(matches)}); '
                f'name one under the key {AGENTOOL_KEY!r}',
                rule=self.label,
                operation=operation,
                candidates=matches,
            )
        # The object without its `"agentool"` key; the text itself when it had none (the fast path).
        return Dispatch(agentool=matches[0], input=value if keyed else text)


Parser = Callable[[re.Match[str]], Mapping[str, Any] | BaseModel | str | None]
"""Turns a command's match into the agentool's input; `None` declines, `ValueError` means invalid."""


@dataclass(frozen=True, kw_only=True)
class CommandRule(DispatchRule):
    """A command such as `/status 123`, matched by `pattern` or `prefix`, parsed into the agentool's input.

    The dispatch guide gives what each form claims and passes on.
    """

    agentool: str
    pattern: str | re.Pattern[str] | None = None
    prefix: str | None = None
    operation: str | None = None
    parse: Parser | None = None
    _regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.pattern is None) == (self.prefix is None):
            raise ConfigurationError(
                'CommandRule takes exactly one of pattern= and prefix=', agentool=self.agentool, rule=self.name
            )
        if (prefix := cast(object, self.prefix)) is not None and not (isinstance(prefix, str) and prefix):
            raise _refused(self, 'prefix', 'a non-empty string')
        if self.operation is not None and not _is_name(self.operation):
            raise _refused(self, 'operation', 'an operation name (a non-empty string) or None')
        if self.parse is not None and not callable(self.parse):
            raise _refused(self, 'parse', 'a function of the match (re.Match) or None')
        pattern = cast(object, self.pattern)
        if self.prefix is not None:
            regex = re.compile(re.escape(self.prefix) + r'(?:\s+(?P<args>.*))?', re.DOTALL)
        elif isinstance(pattern, re.Pattern):
            regex = cast('re.Pattern[str]', pattern)
        elif not isinstance(pattern, str):
            raise _refused(self, 'pattern', 'a string or a compiled re.Pattern')
        else:
            try:
                regex = re.compile(pattern)
            except re.error as error:
                raise ConfigurationError(
                    f'CommandRule(pattern={pattern!r}) is not a valid regular expression: {error}',
                    agentool=self.agentool,
                    rule=self.name,
                    option='pattern',
                    pattern=pattern,
                    error=str(error),
                ) from None
        object.__setattr__(self, '_regex', regex)

    def _default_name(self) -> str:
        return f'command:{self.prefix}' if self.prefix is not None else f'command:{self._regex.pattern}'

    def match(self, request: DispatchRequest, operations: Mapping[str, Sequence[str]]) -> Dispatch | None:
        text = request.prompt.strip()
        # The pattern never reads more than the agentool would take (a user's regex may backtrack).
        if (error := _too_large(self, request, operations, 'the command')) is not None:
            # Refused when the prompt is the prefix alone or followed by whitespace, as its regex reads it.
            prefix = self.prefix
            if prefix is None or not (text == prefix or (text.startswith(prefix) and text[len(prefix)].isspace())):
                return None
            raise error
        found = self._regex.fullmatch(text)
        if found is None:
            return None
        if self.parse is None:
            value: dict[str, Any] = {k: v for k, v in found.groupdict().items() if v is not None}
            if self.prefix is not None and (args := value.pop('args', None)):
                # Dropping them would run the command without what the user typed after it.
                raise ValueError(
                    f'{self.prefix!r} takes no arguments (the rule has no parse= to read them); got {quote(args)}'
                )
            if self.operation is not None:
                value['operation'] = self.operation
            return Dispatch(agentool=self.agentool, input=value)
        parsed = self.parse(found)
        if parsed is None:
            return None
        if self.operation is not None and isinstance(parsed, Mapping):
            parsed = {'operation': self.operation, **parsed}
        return Dispatch(agentool=self.agentool, input=parsed)


def _is_name(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _refused(rule: DispatchRule, option: str, expected: str) -> ConfigurationError:
    agentool = cast('str | None', getattr(rule, 'agentool', None))
    what = f'{type(rule).__name__}({option}=...)'
    return refuse(option, expected, cast(object, getattr(rule, option)), agentool, what=what, rule=rule.name)


@dataclass(frozen=True, kw_only=True)
class PredicateRule(DispatchRule):
    """When `when(request)` holds, `build(request)` (default: the prompt) is the input, or `None`."""

    agentool: str
    when: Callable[[DispatchRequest], bool]
    build: Callable[[DispatchRequest], DispatchInput | None] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for option in ('when', 'build'):
            value = cast(object, getattr(self, option))
            if not callable(value) and (option == 'when' or value is not None):
                raise _refused(self, option, 'a function of the request')

    def _default_name(self) -> str:
        return f'predicate:{getattr(self.when, "__name__", "when")}'

    def match(self, request: DispatchRequest, operations: Mapping[str, Sequence[str]]) -> Dispatch | None:
        if not self.when(request):
            return None
        if self.build is None:
            return Dispatch(agentool=self.agentool, input=request.prompt)
        built = self.build(request)
        return None if built is None else Dispatch(agentool=self.agentool, input=built)


def _too_large(
    rule: DispatchRule, request: DispatchRequest, operations: Mapping[str, Sequence[str]], what: str
) -> InputTooLargeError | None:
    """The error for a prompt over its target's `max_input_bytes` (no target: every candidate's), else `None`."""
    agentool = cast('str | None', getattr(rule, 'agentool', None))
    limit = operations.max_input_bytes(agentool) if isinstance(operations, Candidates) else DEFAULT_MAX_INPUT_BYTES
    prompt = request.prompt
    if len(prompt) * 4 <= limit:
        return None
    size = len(prompt) if prompt.isascii() else len(prompt.encode('utf-8', 'surrogatepass'))
    if size <= limit:
        return None
    whose = f'agentool {agentool!r}' if agentool else 'any agentool this rule may send it to'
    return InputTooLargeError(
        f'rule {rule.label!r}: {what} is {size} bytes, over the limit of {limit} bytes '
        f'(max_input_bytes) of {whose}; refused before parsing',
        agentool=agentool,
        rule=rule.label,
        size=size,
        limit=limit,
    )
