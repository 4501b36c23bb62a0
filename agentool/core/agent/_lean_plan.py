"""What a lean run needs to know about one agent, learned once from a run through the graph (which
shows all the agent adds around the tool call)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import NoneType
from typing import Any, Generic, Literal, TypeVar, cast

from pydantic import TypeAdapter
from pydantic_ai import AgentRunResult
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RunUsage
from pydantic_core import to_jsonable_python

from ..definition import UNREADABLE
from ..manager import MANAGER_TOOL_NAME
from ..output import inner_schema, output_members, resolve

LEARN_FROM_NEXT_RUN = 'again'
"""`learn_plan`'s answer when the run was fine but did not show everything: learn from the next one."""

_SCALARS = (str, int, float, bool)

_M = TypeVar('_M', ModelRequest, ModelResponse, ToolReturnPart, SystemPromptPart, RunUsage)

_FRESH = frozenset({'parts', 'timestamp', 'run_id', 'conversation_id'})
"""What every new message gets anew (and a part its own `timestamp`)."""

_ATOMIC = (str, int, float, bool, bytes, NoneType)


@dataclass(frozen=True)
class MessageTemplate(Generic[_M]):
    """A message, part or usage of the learned run, as its fields not at their defaults (a third of
    `dataclasses.replace`'s cost); `copied` ones are deep-copied for each new one."""

    kind: type[_M]
    kept: dict[str, Any]
    copied: dict[str, Any]

    def make(self, **fields: Any) -> _M:
        given = {**self.kept, **copy.deepcopy(self.copied), **fields} if self.copied else {**self.kept, **fields}
        return self.kind(**given)


def template_of(message: _M) -> MessageTemplate[_M]:
    kept: dict[str, Any] = {}
    copied: dict[str, Any] = {}
    for field in dataclasses.fields(message):
        if not field.init or field.name in _FRESH:
            continue
        value = getattr(message, field.name)
        default = field.default if field.default_factory is dataclasses.MISSING else field.default_factory()
        if value == default and type(value) is type(default):  # `MISSING` equals no value
            continue
        (kept if isinstance(value, _ATOMIC) else copied)[field.name] = value
    return MessageTemplate(type(message), kept, copied)


@dataclass(frozen=True, kw_only=True)
class LeanPlan:
    """One agent's run shape: templates of its four or five messages and how to read the output."""

    params: ModelRequestParameters
    first_request: MessageTemplate[ModelRequest]
    system_parts: tuple[MessageTemplate[SystemPromptPart], ...]
    """The system prompt parts before the user prompt in a run without history."""
    response: MessageTemplate[ModelResponse]
    request: MessageTemplate[ModelRequest]
    final_request: MessageTemplate[ModelRequest] | None
    """The framework's answer to an output tool call (one `ToolReturnPart`, `final_return`); `None` in text mode."""
    final_return: MessageTemplate[ToolReturnPart] | None
    usage: MessageTemplate[RunUsage]
    readers: dict[str, Callable[[Any], Any]]
    """Output tool name → the output value pydantic-ai would validate from its arguments."""

    def output(self, value: Any, final: Sequence[ModelResponsePart]) -> Any:
        """The run's output for the tool's `value`, as the graph would validate it from the `final` parts."""
        part = final[0]
        if isinstance(part, TextPart):
            return part.content or None  # an empty text carries `None` (see `output_parts`)
        assert isinstance(part, ToolCallPart)
        return self.readers[part.tool_name](value)


def learn_plan(
    result: AgentRunResult[Any], params: ModelRequestParameters | None, output_type: Any
) -> LeanPlan | Literal['again'] | None:
    """The plan for an agent whose fresh run produced `result`, or `None` if it has another shape;
    `LEARN_FROM_NEXT_RUN` when it answered in text but has output tools (whose return it did not show)."""
    if params is None or result.metadata is not None or params.output_mode not in ('tool', 'text', 'auto'):
        return None
    match result.all_messages():
        # Request(system…, user) → Response(manager call) → Request(manager return) → Response(final),
        # then the framework's answer to an output tool call, if the final response is one.
        case [
            ModelRequest(parts=[*system, UserPromptPart()]) as first,
            ModelResponse(parts=[ToolCallPart() as call]) as response,
            ModelRequest(parts=[ToolReturnPart(outcome='success')]) as tool_return,
            ModelResponse(parts=[final]),
            *rest,
        ] if (
            call.tool_name == MANAGER_TOOL_NAME
            and tool_return.instructions == first.instructions
            and all(isinstance(part, SystemPromptPart) for part in system)
        ):
            pass
        case _:
            return None
    final_request = final_return = None
    if isinstance(final, TextPart):
        if rest:
            return None
        if params.output_tools:
            return LEARN_FROM_NEXT_RUN
    else:
        match rest:
            case [ModelRequest(parts=[ToolReturnPart() as done]) as last]:
                final_request, final_return = template_of(last), template_of(done)
            case _:
                return None
    readers = _readers(params, output_type)
    if readers is None:
        return None
    return LeanPlan(
        params=params,
        first_request=template_of(first),
        system_parts=tuple(template_of(cast(SystemPromptPart, part)) for part in system),
        response=template_of(response),
        request=template_of(tool_return),
        final_request=final_request,
        final_return=final_return,
        usage=template_of(result.usage),
        readers=readers,
    )


def _readers(params: ModelRequestParameters, output_type: Any) -> dict[str, Callable[[Any], Any]] | None:
    """How to read each output tool's value: validated by its member of the output type, as pydantic-ai does."""
    if (every := output_members(output_type)) is None:
        return None  # an output function reshapes the output after the model: keep the graph
    tools = params.output_tools
    if not tools:
        return {}
    # With text output allowed, a `str` member is answered as text and has no output tool; pydantic-ai
    # lists the tool for `None` last, wherever the union names it.
    members = [m for m in every if not (params.allow_text_output and m is str)]
    members.sort(key=lambda m: m is NoneType)
    if len(members) != len(tools) or not all(map(_same_shape, tools, members)):
        return None  # output tools we cannot pair with the output type's members: keep the graph
    return {tool.name: _reader(member) for tool, member in zip(tools, members, strict=True)}


def _same_shape(tool: ToolDefinition, member: Any) -> bool:
    root = tool.parameters_json_schema
    schema = inner_schema(tool)
    try:
        expected = TypeAdapter[Any](member).json_schema()
    except UNREADABLE:  # a member pydantic cannot describe for JSON: nothing to compare, keep the graph
        return False
    schema, expected = resolve(schema, root), resolve(expected, expected)  # enums and models may be `$ref`s
    return all(schema.get(k) == expected.get(k) for k in ('type', 'title'))


def _reader(member: Any) -> Callable[[Any], Any]:
    adapter = TypeAdapter[Any](member)
    exact = member if member in _SCALARS else None

    def read(value: Any) -> Any:
        # The graph validates the output tool's JSON-able arguments; a scalar of the exact type comes back as is.
        if exact is not None and type(value) is exact:
            return value
        return adapter.validate_python(to_jsonable_python(value))

    return read
