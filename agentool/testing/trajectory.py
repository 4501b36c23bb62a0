"""What an agent did, from any run: a pydantic-ai result or its messages, a replay, a cassette, a double."""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from pydantic import ValidationError
from pydantic_ai import AgentRunResult, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart

from .._bounds import MAX_MESSAGE_CHARS
from .._options import check_limit
from ..errors import CassetteError, ConfigurationError, ExpectationError, clip, quote
from ._fingerprint import tool_returns
from .cassette import Cassette, Exchange, RecordedRun, canonical, canonical_args
from .cassette_model import CassetteModel
from .double import AgentDouble
from .log import ARG_CHARS, ARGS_SHOWN, CallLog, CallRecord, Expected, bounded_args, side_by_side

__all__ = ('TrajectoryStep', 'Trajectory', 'trajectory')

_OUTPUT_TOOL_PREFIX = 'final_result'  # pydantic-ai's default output tool name (a suffix per union member)


@dataclass(frozen=True, kw_only=True)
class TrajectoryStep:
    """One model request and what the model answered."""

    number: int
    """Counting from 1."""
    calls: tuple[CallRecord, ...]
    """The function tools the model called in this answer."""
    text: str
    output_call: dict[str, Any] | None = None
    """The output tool's arguments, when the model answered through one."""
    finish_reason: str | None = None
    model_name: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal | None = None
    """In the provider's currency (USD), where pydantic-ai's price data knows the model."""

    def describe(self, *, width: int = ARG_CHARS, count: int = ARGS_SHOWN) -> str:
        """One line: the tools called, or the text, and the finish reason (arguments as `CallRecord.describe`)."""
        said = [call.describe(width=width, count=count) for call in self.calls]
        if self.output_call is not None:
            said.append(f'output {bounded_args(self.output_call, width=width, count=count)}')
        if self.text:
            said.append(quote(self.text))
        finish = f' [{self.finish_reason}]' if self.finish_reason else ''
        return f'{self.number}. {", ".join(said) or "(nothing)"}{finish}'


@dataclass(kw_only=True)
class Trajectory:
    """A run (or several) as a test reads it: steps, tool calls, output, and assertions on them."""

    steps: list[TrajectoryStep] = field(default_factory=list[TrajectoryStep])
    calls: CallLog = field(default_factory=CallLog)
    output: Any = None
    has_output: bool = False
    """Whether the output is known (an unfinished run has none)."""
    source: str = 'the run'

    @classmethod
    def of(cls, source: object, *, output_tools: Iterable[str] = ()) -> Trajectory:
        """The trajectory of a run, its messages, a cassette (or its path), a `CassetteModel` or `AgentDouble`;
        `output_tools` names output tools beyond `final_result...`."""
        extra: dict[str, str | None] = dict.fromkeys(output_tools)
        if isinstance(source, Trajectory):
            return source
        if isinstance(source, AgentRunResult):
            run = cast('AgentRunResult[Any]', source)
            messages = run.all_messages()
            found = _from_messages(messages, {**extra, **_output_tool(messages, run.output)})
            found.output, found.has_output = run.output, True
            return found
        if isinstance(source, CassetteModel):
            path = str(source.path) if source.path else None
            return _from_cassette(source.cassette, extra, path, f'cassette {path or "(in memory)"}')
        if isinstance(source, Cassette):
            return _from_cassette(source, extra, None, 'the cassette')
        if isinstance(source, str | os.PathLike):
            path = os.fspath(cast('str | os.PathLike[str]', source))
            return _from_cassette(Cassette.load(path), extra, path, f'cassette {path}')
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

    @property
    def requests(self) -> int:
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

    def describe(self, *, width: int = ARG_CHARS, count: int = ARGS_SHOWN) -> list[str]:
        """The trajectory, one line per step (as `TrajectoryStep.describe`), then the output."""
        lines = [step.describe(width=width, count=count) for step in self.steps] or ['(no model request)']
        if self.has_output:
            lines.append(f'output: {quote(self.output)}')
        return lines

    def call_count(self, tool: str) -> int:
        return self.calls.call_count(tool)

    def assert_called(
        self, tool: str, args: Mapping[str, Any] | None = None, /, *, times: int | None = None, subset: bool = True
    ) -> None:
        """Assert `tool` was called with `args` (a subset; `ANY` inside), `times` times or at least once."""
        __tracebackhide__ = True
        self.calls.assert_called(tool, args, times=times, subset=subset, trajectory=self.describe())

    def assert_not_called(self, tool: str) -> None:
        __tracebackhide__ = True
        self.calls.assert_not_called(tool, trajectory=self.describe())

    def assert_order(self, *expected: Expected, subset: bool = True) -> None:
        """Assert these calls happened in this order (others may come between; arguments as subsets)."""
        __tracebackhide__ = True
        self.calls.assert_order(*expected, subset=subset, trajectory=self.describe())

    def assert_requests(self, count: int) -> None:
        __tracebackhide__ = True
        check_limit('count', count, minimum=0)
        if self.requests != count:
            head = f'{self.source} made {self.requests} model request(s), expected {count}'
            raise self._failure(head, f'{count} model request(s)', expected=count, actual=self.requests)

    def output_matches(self, expected: Any) -> bool:
        """Whether the output is known and equals `expected`, as given (`ANY` works inside) or as JSON."""
        return self.has_output and _same(expected, self.output)

    def assert_output(self, expected: Any) -> None:
        """Assert the output equals `expected` (see `output_matches`): the same on every source."""
        __tracebackhide__ = True
        if not self.has_output:
            raise ExpectationError(
                f'{self.source} has no output to compare (a run that did not finish)', expected=quote(expected)
            )
        if not self.output_matches(expected):
            head = f'{self.source} gave another output'
            raise self._failure(head, f'output: {quote(expected)}', expected=quote(expected), actual=quote(self.output))

    def _failure(self, head: str, wanted: str, **details: Any) -> ExpectationError:
        # The side-by-side table fits whole in what an error message keeps after `head`.
        table = side_by_side([wanted], self.describe(), budget=MAX_MESSAGE_CHARS - len(head) - 1)
        return ExpectationError(f'{head}\n{table}', trajectory=self.describe(), **details)


def trajectory(source: object, *, output_tools: Iterable[str] = ()) -> Trajectory:
    """`Trajectory.of(source)`: what a run, a replay, a cassette or a double did, with assertions."""
    return Trajectory.of(source, output_tools=output_tools)


_Outputs = Mapping[str, str | None]
"""The output tools known, by name, each with the `outer_typed_dict_key` its arguments wrap the output in."""

_JSON_TEXT_MODES = ('native', 'prompted')  # output modes whose output is text holding JSON


def _from_messages(messages: Sequence[ModelMessage], outputs: _Outputs) -> Trajectory:
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
            for record in _add_step(found, message, outputs):
                if (answered := returns.get(record.call_id)) is not None:
                    _settle(record, answered.content, answered.outcome)
    return found


def _output_tool(messages: Sequence[ModelMessage], output: object) -> dict[str, str | None]:
    """The output tool a finished run answered through: the one call of its final response, or the
    call whose arguments are the output (or wrap it under one key)."""
    final = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
    calls = [] if final is None else [p for p in final.parts if isinstance(p, ToolCallPart)]
    if not calls or isinstance(output, DeferredToolRequests):
        return {}
    for call in calls:
        args = call.args_as_dict()
        if _same(args, output):
            return {call.tool_name: None}
        if len(args) == 1 and _same(next(iter(args.values())), output):
            return {call.tool_name: next(iter(args))}
    return {calls[0].tool_name: None} if len(calls) == 1 else {}


def _from_cassette(cassette: Cassette, outputs: _Outputs, path: str | None, source: str) -> Trajectory:
    found = Trajectory(source=source)
    pending: dict[str, deque[CallRecord]] = {}
    recorded = {(call.tool, canonical_args(call.args)): call.result for call in cassette.tool_calls}
    for exchange in cassette.exchanges:
        _settle_returns(pending, exchange)
        parameters: dict[str, Any] = exchange.request.get('parameters', {})
        tools: list[dict[str, Any]] = parameters.get('output_tools', [])
        keys = {str(tool.get('name')): tool.get('outer_typed_dict_key') for tool in tools}
        try:
            response = exchange.model_response()
        except (ValidationError, ValueError) as error:
            where = f'cassette {path!r}' if path is not None else 'the cassette'
            raise CassetteError(
                f'{where} holds a response pydantic-ai cannot read: {clip(str(error))}', path=path, reason='invalid'
            ) from None
        for record in _add_step(found, response, {**outputs, **keys}):
            if not _answer(record, recorded):
                pending.setdefault(record.tool, deque()).append(record)
        if parameters.get('output_mode') in _JSON_TEXT_MODES:
            found.output = _parsed(found.output)
    for run in cassette.runs:
        _add_run(found, run, recorded)
    return found


def _add_run(found: Trajectory, run: RecordedRun, recorded: Mapping[tuple[str, str], Any]) -> None:
    """Add a run recorded at the tool level: a step per model answer with calls, then its output."""
    for step in run.steps:
        calls = tuple(CallRecord(tool=call.tool, args=call.args, call_id='') for call in step)
        for record in calls:
            _answer(record, recorded)
            found.calls.add(record)
        found.steps.append(TrajectoryStep(number=len(found.steps) + 1, calls=calls, text=''))
    output: object = run.output
    text = output if isinstance(output, str) else ''
    output_call = cast('dict[str, Any]', output) if isinstance(output, dict) else None
    found.steps.append(TrajectoryStep(number=len(found.steps) + 1, calls=(), text=text, output_call=output_call))
    found.output, found.has_output = output, True


def _add_step(
    found: Trajectory, response: ModelResponse, outputs: _Outputs, calls: list[CallRecord] | None = None
) -> list[CallRecord]:
    """Add `response` as the next step of `found`, with its output; return its function tool calls
    (new records joining `found.calls`, unless a double's own are given)."""
    if calls is None:
        calls = [
            CallRecord(tool=part.tool_name, args=part.args_as_dict(), call_id=part.tool_call_id)
            for part in _function_calls(response, outputs)
        ]
        for record in calls:
            found.calls.add(record)
    output_call, output = _output_of(response, outputs)
    usage = response.usage
    found.steps.append(
        TrajectoryStep(
            number=len(found.steps) + 1,
            calls=tuple(calls),
            text=''.join(part.content for part in response.parts if isinstance(part, TextPart)),
            output_call=output_call,
            finish_reason=response.finish_reason,
            model_name=response.model_name,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost=_cost(response),
        )
    )
    if output_call is not None:
        found.output, found.has_output = output, True
    elif response.text is not None and not calls:
        found.output, found.has_output = response.text, True
    return calls


def _function_calls(response: ModelResponse, outputs: _Outputs) -> list[ToolCallPart]:
    return [p for p in response.parts if isinstance(p, ToolCallPart) and not _is_output(p.tool_name, outputs)]


def _output_of(response: ModelResponse, outputs: _Outputs) -> tuple[dict[str, Any] | None, Any]:
    """The output tool's arguments in `response` (`None` when it called none), and the output they carry."""
    for part in response.parts:
        if isinstance(part, ToolCallPart) and _is_output(part.tool_name, outputs):
            args = part.args_as_dict()
            key = outputs.get(part.tool_name)
            return args, args.get(key) if key is not None and key in args else args
    return None, None


def _from_double(double: AgentDouble) -> Trajectory:
    # The double's own call log holds every call with its result; each step takes its calls from it.
    found = Trajectory(calls=double.calls, source=f'double {double.name!r}')
    by_id = {record.call_id: record for record in double.calls}
    for request in double.requests:
        if request.response is None:  # refused: no script answered it
            continue
        outputs = {tool.name: tool.outer_typed_dict_key for tool in request.output_tools}
        parts = _function_calls(request.response, outputs)
        _add_step(found, request.response, outputs, [by_id[p.tool_call_id] for p in parts if p.tool_call_id in by_id])
        if request.output_mode in _JSON_TEXT_MODES and found.has_output:
            found.output = _parsed(found.output)
    return found


def _settle(record: CallRecord, result: Any, outcome: str | None = 'success') -> None:
    record.returned, record.result, record.outcome = True, result, outcome


def _answer(record: CallRecord, recorded: Mapping[tuple[str, str], Any]) -> bool:
    """Settle `record` with the result the cassette holds for it; whether it holds one."""
    key = (record.tool, canonical_args(record.args))
    if key in recorded:
        _settle(record, recorded[key])
    return key in recorded


def _settle_returns(pending: dict[str, deque[CallRecord]], exchange: Exchange) -> None:
    # A cassette's requests keep tool returns without ids: a return settles the oldest open call of its tool.
    if not pending:
        return
    for part in tool_returns(exchange.request):
        if waiting := pending.get(str(part.get('tool_name'))):
            _settle(waiting.popleft(), part.get('content'), part.get('outcome', 'success'))


def _is_output(name: str, outputs: _Outputs) -> bool:
    return name in outputs or name.startswith(_OUTPUT_TOOL_PREFIX)


def _parsed(output: object) -> object:
    """A native or prompted output's text as the JSON it holds (the text itself when it holds none)."""
    if not isinstance(output, str):
        return output
    try:
        return json.loads(output)
    except ValueError:
        return output


def _same(expected: object, actual: object) -> bool:
    """Equal as given (so `ANY` inside `expected` works), or in the canonical JSON form (`2.0` and `2`)."""
    if expected == actual:
        return True
    try:
        return canonical(expected) == canonical(actual)
    except ValueError:  # nested past the serialiser's depth: only plain equality applies
        return False


def _cost(response: ModelResponse) -> Decimal | None:
    if not response.model_name or not (response.usage.input_tokens or response.usage.output_tokens):
        return None
    try:
        return response.cost().total_price
    except (LookupError, ValueError):  # genai-prices does not know the model, or the usage is incomplete
        return None
