"""The run result of a dispatched turn: the answer in the agent's output type, and the turn in the history.

The turn is a `ModelRequest` and a `ModelResponse` (the answer as text) marked with
`DISPATCH_PROVIDER` and `metadata[DISPATCH_METADATA_KEY]` (`dispatch_record` reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, cast, get_origin

from pydantic import TypeAdapter, ValidationError
from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.run import AgentRunResult
from pydantic_core import to_json

from ..catalog import type_label
from ..core.output import json_data, json_output_text, output_value_type
from ..errors import DispatchOutputError, OutputError

DISPATCH_PROVIDER = 'agentool-dispatch'
"""`provider_name` of the response that records a dispatched turn."""
DISPATCH_METADATA_KEY = 'agentool_dispatch'
"""Key, in that response's `metadata`, of the rule, agentool and operation."""

_ADAPTERS: dict[int, tuple[object, TypeAdapter[Any] | None]] = {}
_MAX_ADAPTERS = 256
"""Output specs whose validator is kept: agents built per request must not grow the cache without end."""


@dataclass(frozen=True, kw_only=True)
class DispatchRecord:
    """What a dispatched turn's response records: which rule sent it to which agentool operation."""

    rule: str
    agentool: str
    operation: str


def dispatch_record(message: ModelMessage) -> DispatchRecord | None:
    """The dispatch record of `message` if it is the response of a dispatched turn, else `None`."""
    if not isinstance(message, ModelResponse) or message.provider_name != DISPATCH_PROVIDER:
        return None
    record = (message.metadata or {}).get(DISPATCH_METADATA_KEY)
    if not isinstance(record, dict):
        return None
    values = [cast(dict[str, Any], record).get(key) for key in ('rule', 'agentool', 'operation')]
    if not all(isinstance(value, str) for value in values):  # not a record this module wrote
        return None
    rule, agentool, operation = cast(list[str], values)
    return DispatchRecord(rule=rule, agentool=agentool, operation=operation)


def _adapter(spec: object) -> TypeAdapter[Any] | None:
    """A validator for an agent's output spec; `None` when the spec is plain `str`."""
    if (cached := _ADAPTERS.get(id(spec))) is not None and cached[0] is spec:
        return cached[1]
    target = output_value_type(spec)
    if target is None:  # an output function (`TextOutput(f)`, a function): only the model's run calls it
        raise TypeError('it holds an output function, which only a model run calls')
    adapter = None if target is str else TypeAdapter[Any](target)
    if len(_ADAPTERS) >= _MAX_ADAPTERS:
        _ADAPTERS.clear()
    _ADAPTERS[id(spec)] = (spec, adapter)
    return adapter


def _type_name(spec: object) -> str:
    # `list[Ticket]` has the `__name__` 'list': only a class is named by it.
    return type_label(spec) if isinstance(spec, type) or get_origin(spec) is not None else repr(spec)


def fit_output(value: Any, spec: object, record: DispatchRecord) -> Any:
    """`value` validated into the agent's output spec (`str`: as text), else `DispatchOutputError`."""
    rule, agentool, operation = record.rule, record.agentool, record.operation

    def refused(message: str, errors: list[Any]) -> DispatchOutputError:
        return DispatchOutputError(
            f'rule {rule!r}: {message}',
            agentool=agentool,
            rule=rule,
            operation=operation,
            output_type=_type_name(spec),
            value_type=type(value).__name__,
            errors=errors,
        )

    try:
        adapter = _adapter(spec)
    except Exception as error:  # an output function, or a spec pydantic (or the type's own hook) cannot read
        raise refused(
            f"the agent's output_type {_type_name(spec)} cannot take an agentool answer: {error}", []
        ) from error
    try:
        if adapter is None:  # text: JSON with no `Infinity` or `NaN`, as every surface gives it
            return value if isinstance(value, str) else json_output_text(value, agentool)
        if isinstance(value, str):
            try:
                return adapter.validate_python(value)
            except ValidationError:
                return adapter.validate_json(value)  # an untyped agentool answers with JSON text
        # The answer's JSON data, as a model would send it: it fits whatever that fits (a `TypedDict`).
        return adapter.validate_python(json_data(value, agentool))
    except OutputError as error:  # the answer holds what JSON cannot carry
        error.details.update(rule=rule, operation=operation)
        raise
    except ValidationError as error:
        raise refused(
            f'agentool {agentool!r} operation {operation!r} answered a {type(value).__name__}, '
            f"which does not fit the agent's output_type {_type_name(spec)}: {error.error_count()} error(s)",
            list(error.errors(include_url=False, include_context=False, include_input=False)),
        ) from None


def build_result(ctx: RunContext[Any], prompt: str, output: Any, record: DispatchRecord) -> AgentRunResult[Any]:
    """The run result of a dispatched turn, the turn appended in place to `ctx.messages`."""
    start = len(ctx.messages)
    meta = {'rule': record.rule, 'agentool': record.agentool, 'operation': record.operation}
    request = ModelRequest(parts=[UserPromptPart(prompt)], run_id=ctx.run_id, conversation_id=ctx.conversation_id)
    response = ModelResponse(
        parts=[TextPart(output if isinstance(output, str) else to_json(output).decode())],
        model_name=f'agentool:{record.agentool}',
        provider_name=DISPATCH_PROVIDER,
        finish_reason='stop',
        run_id=ctx.run_id,
        conversation_id=ctx.conversation_id,
        metadata={DISPATCH_METADATA_KEY: meta},
    )
    ctx.messages.extend([request, response])
    data: dict[str, Any] = {
        'output': output,
        'messages': list(ctx.messages),
        'new_message_index': start,
        'usage': ctx.usage,
        'metadata': ctx.metadata,
        'run_id': ctx.run_id,
        'conversation_id': ctx.conversation_id,
    }
    return _result_adapter().validate_python({key: value for key, value in data.items() if value is not None})


@cache
def _result_adapter() -> TypeAdapter[AgentRunResult[Any]]:
    # Built on first dispatch, not at import: a run result's schema takes a part of a second to build.
    return TypeAdapter(AgentRunResult[Any])
