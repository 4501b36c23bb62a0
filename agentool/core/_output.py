"""Turning a tool's return value into a final `ModelResponse` in the output mode a run asks for.

A model answers in the shape the agent's output type dictates: plain text, a call to one of the
output tools (one per member of a union, scalars wrapped in an outer key), or JSON text for
native and prompted modes (scalars wrapped in `response`, unions in `result`/`kind`/`data`).
These shapes are read from the request parameters and JSON schemas pydantic-ai publishes.
"""

from __future__ import annotations

from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_ai.messages import ModelResponse, ModelResponsePart, TextPart, ToolCallPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition
from pydantic_core import to_json, to_jsonable_python

from ..errors import OutputError

__all__ = ('output_response', 'output_parts', 'admits_none')


def output_response(
    value: Any,
    params: ModelRequestParameters,
    *,
    model_name: str,
    agentool: str,
    call_id: str,
    none_as_text: bool = False,
) -> ModelResponse:
    """The final response that carries `value` as the run's output."""
    parts = output_parts(value, params, agentool=agentool, call_id=call_id, none_as_text=none_as_text)
    return ModelResponse(parts=parts, model_name=model_name)


def output_parts(
    value: Any, params: ModelRequestParameters, *, agentool: str, call_id: str, none_as_text: bool = False
) -> list[ModelResponsePart]:
    """The parts of `output_response`: one output tool call or one text part.

    In text mode pydantic-ai reads an empty text as no answer at all: `None` when the output type
    admits it, else a request to retry. So `None` is answered with an empty text when
    `none_as_text` (the agentool's output type admits `None`), and an empty string, which text
    cannot carry, with an output tool if there is one, else `OutputError`.
    """
    text_ok = params.allow_text_output and isinstance(value, str) and value != ''
    if params.output_tools and not text_ok:
        tool, args = _tool_output(value, params.output_tools, agentool)
        return [ToolCallPart(tool.name, args, tool_call_id=call_id)]
    if params.output_mode in ('native', 'prompted') and params.output_object is not None:
        fitted = _fit_object(value, params.output_object.json_schema, agentool)
        return [TextPart(to_json(fitted).decode())]
    if not params.allow_text_output:
        raise OutputError(
            f'agentool {agentool!r}: the agent accepts neither text nor an output tool for this value',
            agentool=agentool,
        )
    if isinstance(value, str):
        if not value:
            raise OutputError(
                f'agentool {agentool!r}: the tool returned an empty string, which a text output cannot carry '
                '(pydantic-ai reads an empty text as no answer); give the agent an output type with an output '
                'tool, e.g. ToolOutput(str), or return a non-empty string',
                agentool=agentool,
                reason='empty_text',
            )
        return [TextPart(value)]
    if value is None and none_as_text:
        return [TextPart('')]
    return [TextPart(to_json(value).decode())]


def admits_none(output_type: Any) -> bool:
    """Whether a run's output of type `output_type` may be `None` (`Optional[X]`, `X | None`, `None`)."""
    if output_type is NoneType:
        return True
    return get_origin(output_type) in (Union, UnionType) and NoneType in get_args(output_type)


def _tool_output(value: Any, tools: list[ToolDefinition], agentool: str) -> tuple[ToolDefinition, Any]:
    jsonable = to_jsonable_python(value)
    if len(tools) == 1:
        return tools[0], _wrap(tools[0], jsonable)
    for matcher in (_matches_title, _matches_shape):
        for tool in tools:
            if matcher(_inner_schema(tool), value, jsonable):
                return tool, _wrap(tool, jsonable)
    raise OutputError(
        f"agentool {agentool!r}: the output value of type {type(value).__name__} fits none of the agent's "
        f'output tools ({", ".join(t.name for t in tools)})',
        agentool=agentool,
        output_tools=[t.name for t in tools],
    )


def _wrap(tool: ToolDefinition, jsonable: Any) -> Any:
    return {tool.outer_typed_dict_key: jsonable} if tool.outer_typed_dict_key else jsonable


def _inner_schema(tool: ToolDefinition) -> dict[str, Any]:
    schema = tool.parameters_json_schema
    if key := tool.outer_typed_dict_key:
        return schema.get('properties', {}).get(key, {})
    return schema


def _fit_object(value: Any, schema: dict[str, Any], agentool: str) -> Any:
    jsonable = to_jsonable_python(value)
    properties: dict[str, Any] = schema.get('properties', {})
    if 'title' in schema or len(properties) != 1:
        return jsonable
    ((key, inner),) = properties.items()
    if key == 'result' and 'anyOf' in inner:
        branches: list[dict[str, Any]] = inner['anyOf']
        for matcher in (_matches_title, _matches_shape):
            for branch in branches:
                data_schema = branch.get('properties', {}).get('data', {})
                if matcher({**data_schema, 'title': branch.get('title')}, value, jsonable):
                    kind = branch['properties']['kind'].get('const')
                    return {'result': {'kind': kind, 'data': jsonable}}
        raise OutputError(
            f'agentool {agentool!r}: the output value of type {type(value).__name__} fits no member of the '
            'output union',
            agentool=agentool,
        )
    if key == 'response':
        return {'response': jsonable}
    return jsonable


def _matches_title(schema: dict[str, Any], value: Any, jsonable: Any) -> bool:
    if not isinstance(value, BaseModel):
        return False
    return schema.get('title') == (value.model_config.get('title') or type(value).__name__)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    'object': (dict,),
    'array': (list,),
    'string': (str,),
    'integer': (int,),
    'number': (int, float),
    'boolean': (bool,),
    'null': (type(None),),
}


def _matches_shape(schema: dict[str, Any], value: Any, jsonable: Any) -> bool:
    if 'const' in schema:
        return jsonable == schema['const']
    if 'enum' in schema:
        return jsonable in schema['enum']
    if 'anyOf' in schema:
        return any(_matches_shape(s, value, jsonable) for s in schema['anyOf'])
    kind = schema.get('type')
    if isinstance(kind, str):
        if isinstance(jsonable, bool) and kind in ('integer', 'number'):
            return False
        if not isinstance(jsonable, _JSON_TYPES.get(kind, (object,))):
            return False
    if isinstance(jsonable, dict):
        required: list[str] = schema.get('required', [])
        if any(key not in jsonable for key in required):
            return False
        if schema.get('additionalProperties') is False:
            return all(key in schema.get('properties', {}) for key in jsonable)  # pyright: ignore[reportUnknownVariableType]
    return True
