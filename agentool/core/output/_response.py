"""A tool's return value as the final `ModelResponse` in the run's output mode: text, an output tool
call, or JSON text (native and prompted modes), shaped by the request parameters pydantic-ai publishes."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import NoneType
from typing import Any

from pydantic_ai.messages import ModelResponse, ModelResponsePart, TextPart, ToolCallPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition
from pydantic_core import to_json, to_jsonable_python

from ...errors import OutputError
from ._fit import fits_loosely, fits_shape, fits_type, resolve, title_of
from ._spec import output_members

__all__ = ('output_response', 'output_parts', 'admits_none', 'inner_schema', 'json_output_text', 'json_data')


def output_response(
    value: Any,
    params: ModelRequestParameters,
    *,
    model_name: str,
    agentool: str,
    call_id: str,
    output_type: Any = None,
) -> ModelResponse:
    """The final response that carries `value` as the run's output."""
    parts = output_parts(value, params, agentool=agentool, call_id=call_id, output_type=output_type)
    return ModelResponse(parts=parts, model_name=model_name)


def output_parts(
    value: Any, params: ModelRequestParameters, *, agentool: str, call_id: str, output_type: Any = None
) -> list[ModelResponsePart]:
    """The parts of `output_response`: one output tool call or one text part.

    pydantic-ai reads an empty text as no answer: `None` is one when `output_type` admits it; an empty
    string goes to an output tool it fits, else `OutputError`, as does a value JSON cannot encode.
    """
    jsonable = json_data(value, agentool)
    text_ok = params.allow_text_output and isinstance(value, str) and value != ''
    if params.output_tools:
        if not text_ok:
            tool = _tool_for(value, jsonable, params, agentool)
            return [ToolCallPart(tool.name, _wrap(tool, jsonable), tool_call_id=call_id)]
        if title_of(value) is not None:
            # A `StrEnum` member is a non-empty `str`, but text would hand it back as a plain `str`;
            # an output tool for its own type gives the member back.
            tool = _pick(params.output_tools, value, jsonable, (fits_type,))
            if tool is not None:
                return [ToolCallPart(tool.name, _wrap(tool, jsonable), tool_call_id=call_id)]
    if params.output_mode in ('native', 'prompted') and params.output_object is not None:
        fitted = _fit_object(value, jsonable, params.output_object.json_schema, agentool)
        return [TextPart(_json_text(value, fitted, agentool))]
    if not params.allow_text_output:
        raise OutputError(
            f'agentool {agentool!r}: the agent accepts neither text nor an output tool for this value',
            agentool=agentool,
        )
    if isinstance(value, str):
        if not value:
            raise _empty_text(agentool)
        return [TextPart(value)]
    if value is None and admits_none(output_type):
        return [TextPart('')]
    return [TextPart(_json_text(value, jsonable, agentool, finite=True))]


def admits_none(output_type: Any) -> bool:
    """Whether a run's output of type `output_type` (an output spec, `[None, str]` or `X | None`) may be `None`."""
    # No output type given (`None`): the tool's return annotation is used instead.
    return output_type is not None and NoneType in (output_members(output_type) or ())


_Matcher = Callable[[dict[str, Any], dict[str, Any], Any, Any], bool]
_MATCHERS: tuple[_Matcher, ...] = (fits_type, fits_shape, fits_loosely)
"""The value's own type first, then its whole JSON shape, then its outer shape."""


def _tool_for(value: Any, jsonable: Any, params: ModelRequestParameters, agentool: str) -> ToolDefinition:
    tools = params.output_tools
    tool = _pick(tools, value, jsonable, _MATCHERS[:2])
    if tool is not None:
        return tool
    if isinstance(value, str) and value == '' and params.allow_text_output:
        raise _empty_text(agentool)  # no output tool takes it, and text cannot carry it
    if len(tools) == 1:
        return tools[0]  # pydantic-ai's validation decides (it is lax where JSON shapes are not)
    tool = _pick(tools, value, jsonable, _MATCHERS[2:])
    if tool is not None:
        return tool
    raise OutputError(
        f"agentool {agentool!r}: the output value of type {type(value).__name__} fits none of the agent's "
        f'output tools ({", ".join(t.name for t in tools)})',
        agentool=agentool,
        output_tools=[t.name for t in tools],
    )


def _pick(
    tools: list[ToolDefinition], value: Any, jsonable: Any, matchers: tuple[_Matcher, ...]
) -> ToolDefinition | None:
    for matcher in matchers:
        for tool in tools:
            if matcher(inner_schema(tool), tool.parameters_json_schema, value, jsonable):
                return tool
    return None


def _wrap(tool: ToolDefinition, jsonable: Any) -> Any:
    return {tool.outer_typed_dict_key: jsonable} if tool.outer_typed_dict_key else jsonable


def inner_schema(tool: ToolDefinition) -> dict[str, Any]:
    """The schema of an output tool's value: its argument schema, or the outer key's property."""
    schema = tool.parameters_json_schema
    if key := tool.outer_typed_dict_key:
        return schema.get('properties', {}).get(key, {})
    return schema


def _fit_object(value: Any, jsonable: Any, schema: dict[str, Any], agentool: str) -> Any:
    properties: dict[str, Any] = schema.get('properties', {})
    if 'title' in schema or len(properties) != 1:
        return jsonable
    ((key, inner),) = properties.items()
    if key == 'result' and 'anyOf' in inner:
        branches: list[dict[str, Any]] = inner['anyOf']
        for matcher in _MATCHERS:
            for branch in branches:
                data_schema, wrapped = _branch_data(branch, schema, value)
                if matcher(data_schema, schema, value, jsonable):
                    data = {'response': jsonable} if wrapped else jsonable
                    return {'result': {'kind': branch['properties']['kind'].get('const'), 'data': data}}
        raise OutputError(
            f'agentool {agentool!r}: the output value of type {type(value).__name__} fits no member of the '
            'output union',
            agentool=agentool,
        )
    if key == 'response':
        return {'response': jsonable}
    return jsonable


def _branch_data(branch: dict[str, Any], root: dict[str, Any], value: Any) -> tuple[dict[str, Any], bool]:
    """The schema a union branch's `data` carries a value as, and whether it is wrapped in
    `{"response": ...}` (not when the branch names the value's own type)."""
    data = resolve(branch.get('properties', {}).get('data', {}), root)
    titled = {**data, 'title': branch.get('title')}
    properties: dict[str, Any] = data.get('properties', {})
    if 'title' in data or list(properties) != ['response'] or title_of(value) == branch.get('title'):
        return titled, False
    return properties['response'], True


def json_data(value: Any, agentool: str) -> Any:
    """`value` as JSON-ready data, or `OutputError(reason='not_serialisable')` when JSON cannot carry it."""
    try:
        return to_jsonable_python(value)
    except ValueError as error:  # unknown types; bytes that are not UTF-8 (`UnicodeDecodeError`)
        raise _not_serialisable(value, error, agentool) from None


def json_output_text(value: Any, agentool: str) -> str:
    """`value` as the JSON text an untyped agentool's output is, or `OutputError` when JSON cannot carry it."""
    return _json_text(value, json_data(value, agentool), agentool, finite=True)


def _json_text(value: Any, jsonable: Any, agentool: str, *, finite: bool = False) -> str:
    """`jsonable` as JSON text; with `finite` (the text is the output itself) RFC 8259 JSON, without `NaN`."""
    try:
        text = to_json(jsonable).decode()
    except ValueError as error:  # e.g. a lone surrogate, which UTF-8 cannot encode
        raise _not_serialisable(value, error, agentool) from None
    if finite and ('Infinity' in text or 'NaN' in text):  # cheap first look; strings may hold the words
        try:
            json.dumps(jsonable, allow_nan=False)
        except ValueError:
            raise OutputError(
                f'agentool {agentool!r}: the output value of type {type(value).__name__} holds an infinite or '
                'NaN number, which JSON cannot carry',
                agentool=agentool,
                python_type=type(value).__name__,
                reason='non_finite_number',
            ) from None
    return text


def _not_serialisable(value: Any, error: ValueError, agentool: str) -> OutputError:
    return OutputError(
        f'agentool {agentool!r}: the output value of type {type(value).__name__} cannot be serialised to JSON: {error}',
        agentool=agentool,
        python_type=type(value).__name__,
        reason='not_serialisable',
    )


def _empty_text(agentool: str) -> OutputError:
    return OutputError(
        f'agentool {agentool!r}: the tool returned an empty string, which a text output cannot carry '
        '(pydantic-ai reads an empty text as no answer) and no output tool takes; give the agent an output '
        'type with an output tool for it, e.g. ToolOutput(str), or return a non-empty string',
        agentool=agentool,
        reason='empty_text',
    )
