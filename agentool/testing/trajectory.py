"""What an agent did, from any run: a pydantic-ai result or its messages, a replay, a cassette, a double.

A `Trajectory` is the run as a test reads it: one `TrajectoryStep` per model request (the tools the model
called, its text, its finish reason, tokens and cost), every tool call with its result in a
`CallLog`, and the output. The call log's assertions (`assert_called` with arguments as a subset
and `unittest.mock.ANY` inside, `assert_not_called`, `assert_order`, `times=`) work on it, with
`assert_requests` and `assert_output` beside them; a failure prints the expected and the actual
trajectory side by side, and pytest hides these frames from its traceback.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from pydantic import ValidationError
from pydantic_ai import AgentRunResult
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart

from ..errors import CassetteError, ConfigurationError, ExpectationError, clip, quote
from .cassette import Cassette, Exchange, RecordedRun, canonical_args
from .cassette_model import CassetteModel
from .double import AgentDouble
from .log import CallLog, CallRecord, Expected, side_by_side

__all__ = ('TrajectoryStep', 'Trajectory', 'trajectory')

_OUTPUT_TOOL_PREFIX = 'final_result'
"""pydantic-ai's default output tool name (with a suffix per type of a union): the output, not a tool call."""


@dataclass(frozen=True, kw_only=True)
class TrajectoryStep:
    """One model request and what the model answered."""

    number: int
    """Counting from 1."""
    calls: tuple[CallRecord, ...]
    """The function tools the model called in this answer."""
    text: str
    """The answer's text parts, joined."""
    output_call: dict[str, Any] | None = None
    """The output tool's arguments, when the model answered through one."""
    finish_reason: str | None = None
    model_name: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal | None = None
    """In the provider's currency (USD), where pydantic-ai's price data knows the model."""

    def describe(self) -> str:
        """One line: the tools called, or the text, and the finish reason."""
        said: list[str] = [call.describe() for call in self.calls]
        if self.output_call is not None:
            said.append(f'output {CallRecord(tool="", args=self.output_call, call_id="").describe()[1:-1]}')
        if self.text:
            said.append(quote(self.text))
        finish = f' [{self.finish_reason}]' if self.finish_reason else ''
        return f'{self.number}. {", ".join(said) or "(nothing)"}{finish}'


@dataclass(kw_only=True)
class Trajectory:
    """A run (or several) as a test reads it: steps, tool calls, output, and assertions on them."""

    steps: list[TrajectoryStep] = field(default_factory=list[TrajectoryStep])
    calls: CallLog = field(default_factory=CallLog)
    """Every function tool call, in order, with its result when it came back."""
    output: Any = None
    has_output: bool = False
    """Whether the output is known (a double or an unfinished run has none)."""
    source: str = 'the run'

    @classmethod
    def of(cls, source: object, *, output_tools: Iterable[str] = ()) -> Trajectory:
        """The trajectory of `source`: an `AgentRunResult`, a list of `ModelMessage`s, a `Cassette`
        (or its file's path), a `CassetteModel` (what it holds), an `AgentDouble` (what it saw), or
        anything with `all_messages()` (a streamed run's result).

        `output_tools` names output tools beyond pydantic-ai's default `final_result...`, for
        messages (a cassette knows its own).

        Raises:
            ConfigurationError: `source` is none of these.
        """
        extra = frozenset(output_tools)
        if isinstance(source, Trajectory):
            return source
        if isinstance(source, AgentRunResult):
            run = cast('AgentRunResult[Any]', source)
            found = _from_messages(run.all_messages(), extra)
            found.output, found.has_output, found.source = run.output, True, 'the run'
            return found
        if isinstance(source, CassetteModel):
            path = str(source.path) if source.path else None
            found = _from_cassette(source.cassette, extra, path)
            found.source = f'cassette {path or "(in memory)"}'
            return found
        if isinstance(source, Cassette):
            return _from_cassette(source, extra, None)
        if isinstance(source, str | os.PathLike):
            path = os.fspath(cast('str | os.PathLike[str]', source))
            found = _from_cassette(Cassette.load(path), extra, path)
            found.source = f'cassette {path}'
            return found
        if isinstance(source, AgentDouble):
            return _from_double(source)
        if isinstance(source, Sequence) and all(
            isinstance(m, ModelRequest | ModelResponse) for m in cast('Sequence[object]', source)
        ):
            return _from_messages(cast('Sequence[ModelMessage]', source), extra)
        all_messages: object = getattr(cast(object, source), 'all_messages', None)
        if callable(all_messages):  # a streamed run's result, an `AgentRun`: their messages so far
            messages: object = all_messages()
            if isinstance(messages, list):
                return _from_messages(cast('list[ModelMessage]', messages), extra)
        shown = quote(cast(object, source))
        raise ConfigurationError(
            'a trajectory comes from an AgentRunResult, a list of ModelMessages, a Cassette (or its path), '
            f'a CassetteModel or an AgentDouble; got {shown}',
            option='source',
            value=shown,
        )

    # --- reading -------------------------------------------------------------------------------

    @property
    def requests(self) -> int:
        """How many model requests were made."""
        return len(self.steps)

    @property
    def input_tokens(self) -> int:
        return sum(step.input_tokens for step in self.steps)

    @property
    def output_tokens(self) -> int:
        return sum(step.output_tokens for step in self.steps)

    @property
    def cost(self) -> Decimal | None:
        """The total cost, when every step's is known."""
        costs = [step.cost for step in self.steps]
        return None if not costs or any(c is None for c in costs) else sum(cast('list[Decimal]', costs), Decimal(0))

    @property
    def text(self) -> str:
        """The last step's text."""
        return self.steps[-1].text if self.steps else ''

    def describe(self) -> list[str]:
        """The trajectory, one line per step, then the output."""
        lines = [step.describe() for step in self.steps] or ['(no model request)']
        if self.has_output:
            lines.append(f'output: {quote(self.output)}')
        return lines

    # --- assertions ----------------------------------------------------------------------------

    def call_count(self, tool: str) -> int:
        """How many times `tool` was called."""
        return self.calls.call_count(tool)

    def assert_called(
        self, tool: str, args: Mapping[str, Any] | None = None, /, *, times: int | None = None, subset: bool = True
    ) -> None:
        """Assert `tool` was called with `args` (a subset; `ANY` inside), `times` times or at least once."""
        __tracebackhide__ = True
        self.calls.assert_called(tool, args, times=times, subset=subset, trajectory=self.describe())

    def assert_not_called(self, tool: str) -> None:
        """Assert `tool` was never called."""
        __tracebackhide__ = True
        self.calls.assert_not_called(tool, trajectory=self.describe())

    def assert_order(self, *expected: Expected, subset: bool = True) -> None:
        """Assert these calls happened in this order (others may come between; arguments as subsets)."""
        __tracebackhide__ = True
        self.calls.assert_order(*expected, subset=subset, trajectory=self.describe())

    def assert_requests(self, count: int) -> None:
        """Assert the run made exactly `count` model requests."""
        __tracebackhide__ = True
        if not isinstance(cast(object, count), int) or isinstance(count, bool) or count < 0:
            raise ConfigurationError(f'count must be an int of at least 0; got {count!r}', option='count')
        if self.requests != count:
            raise ExpectationError(
                f'{self.source} made {self.requests} model request(s), expected {count}\n'
                + side_by_side([f'{count} model request(s)'], self.describe()),
                expected=count,
                actual=self.requests,
                trajectory=self.describe(),
            )

    def assert_output(self, expected: Any) -> None:
        """Assert the output equals `expected` (compared with `expected` first, so `ANY` works inside)."""
        __tracebackhide__ = True
        if not self.has_output:
            raise ExpectationError(
                f'{self.source} has no output to compare (an AgentDouble, or a run that did not finish)',
                expected=quote(expected),
            )
        if not (expected == self.output):
            raise ExpectationError(
                f'{self.source} gave another output\n' + side_by_side([f'output: {expected!r}'], self.describe()),
                expected=quote(expected),
                actual=quote(self.output),
                trajectory=self.describe(),
            )


def trajectory(source: object, *, output_tools: Iterable[str] = ()) -> Trajectory:
    """`Trajectory.of(source)`: what a run, a replay, a cassette or a double did, with assertions."""
    return Trajectory.of(source, output_tools=output_tools)


# --- building ---------------------------------------------------------------------------------------


def _from_messages(messages: Sequence[ModelMessage], output_tools: frozenset[str]) -> Trajectory:
    found = Trajectory()
    returns = {
        part.tool_call_id: part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }
    for message in messages:
        if isinstance(message, ModelResponse):
            for record in _add_step(found, message, output_tools):
                answered = returns.get(record.call_id)
                if answered is not None:
                    record.returned, record.result, record.outcome = True, answered.content, answered.outcome
    return found


def _from_cassette(cassette: Cassette, output_tools: frozenset[str], path: str | None) -> Trajectory:
    found = Trajectory(source='the cassette')
    pending: dict[str, deque[CallRecord]] = {}
    recorded = {(call.tool, _key(call.args)): call.result for call in cassette.tool_calls}
    for exchange in cassette.exchanges:
        _settle(pending, exchange)
        for record in _add_step(found, _response(exchange, path), output_tools | _output_names(exchange)):
            key = (record.tool, _key(record.args))
            if key in recorded:
                record.returned, record.result, record.outcome = True, recorded[key], 'success'
            else:
                pending.setdefault(record.tool, deque()).append(record)
    for run in cassette.runs:
        _add_run(found, run, recorded)
    return found


def _add_run(found: Trajectory, run: RecordedRun, recorded: Mapping[tuple[str, str], Any]) -> None:
    """Add a run recorded at the tool level: a step per model answer with calls, then its output."""
    for step in run.steps:
        calls = tuple(CallRecord(tool=call.tool, args=call.args, call_id='') for call in step)
        for record in calls:
            key = (record.tool, _key(record.args))
            if key in recorded:
                record.returned, record.result, record.outcome = True, recorded[key], 'success'
            found.calls.add(record)
        found.steps.append(TrajectoryStep(number=len(found.steps) + 1, calls=calls, text=''))
    output: object = run.output
    text = output if isinstance(output, str) else ''
    output_call = cast('dict[str, Any]', output) if isinstance(output, dict) else None
    found.steps.append(TrajectoryStep(number=len(found.steps) + 1, calls=(), text=text, output_call=output_call))
    found.output, found.has_output = output, True


def _add_step(found: Trajectory, response: ModelResponse, output_tools: frozenset[str]) -> list[CallRecord]:
    """Add `response` as the next step of `found`; the function tool calls it made (results to settle)."""
    calls: list[CallRecord] = []
    output_call: dict[str, Any] | None = None
    for part in response.parts:
        if not isinstance(part, ToolCallPart):
            continue
        if _is_output(part.tool_name, output_tools):
            output_call = part.args_as_dict()
            continue
        record = CallRecord(tool=part.tool_name, args=part.args_as_dict(), call_id=part.tool_call_id)
        calls.append(record)
        found.calls.add(record)
    found.steps.append(_step(len(found.steps) + 1, response, calls, output_call))
    if output_call is not None:
        found.output, found.has_output = output_call, True
    elif response.text is not None and not calls:
        found.output, found.has_output = response.text, True
    return calls


def _from_double(double: AgentDouble) -> Trajectory:
    # A double keeps its requests and calls, not its answers: one step per request, calls in the log.
    found = Trajectory(calls=double.calls, source=f'double {double.name!r}')
    for number, request in enumerate(double.requests, start=1):
        text = f'(script {request.script}, step {request.step})' if request.script is not None else ''
        found.steps.append(TrajectoryStep(number=number, calls=(), text=text, model_name=double.name))
    return found


def _response(exchange: Exchange, path: str | None) -> ModelResponse:
    __tracebackhide__ = True
    try:
        return exchange.model_response()
    except (ValidationError, ValueError) as error:
        where = f'cassette {path!r}' if path is not None else 'the cassette'
        raise CassetteError(
            f'{where} holds a response pydantic-ai cannot read: {clip(str(error))}', path=path, reason='invalid'
        ) from None


def _settle(pending: dict[str, deque[CallRecord]], exchange: Exchange) -> None:
    # A cassette's requests keep tool returns without ids: a return settles the oldest open call of its tool.
    messages: list[dict[str, Any]] = exchange.request.get('messages', [])
    if not messages or not pending:
        return
    for part in cast('list[dict[str, Any]]', messages[-1].get('parts', [])):
        waiting = pending.get(str(part.get('tool_name')))
        if part.get('part_kind') == 'tool-return' and waiting:
            match = waiting.popleft()
            match.returned, match.result, match.outcome = True, part.get('content'), part.get('outcome', 'success')


def _output_names(exchange: Exchange) -> frozenset[str]:
    tools: list[dict[str, Any]] = exchange.request.get('parameters', {}).get('output_tools', [])
    return frozenset(str(tool.get('name')) for tool in tools)


def _is_output(name: str, output_tools: frozenset[str]) -> bool:
    return name in output_tools or name.startswith(_OUTPUT_TOOL_PREFIX)


def _step(
    number: int, response: ModelResponse, calls: list[CallRecord], output_call: dict[str, Any] | None
) -> TrajectoryStep:
    text = ''.join(part.content for part in response.parts if isinstance(part, TextPart))
    return TrajectoryStep(
        number=number,
        calls=tuple(calls),
        text=text,
        output_call=output_call,
        finish_reason=response.finish_reason,
        model_name=response.model_name,
        input_tokens=response.usage.input_tokens,
        output_tokens=response.usage.output_tokens,
        cost=_cost(response),
    )


def _cost(response: ModelResponse) -> Decimal | None:
    if not response.model_name or not (response.usage.input_tokens or response.usage.output_tokens):
        return None
    try:
        return response.cost().total_price
    except (LookupError, ValueError):  # genai-prices does not know the model, or the usage is incomplete
        return None


def _key(args: Mapping[str, Any]) -> str:
    return canonical_args(args)
