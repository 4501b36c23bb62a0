"""One exposed operation as a tool: its arguments schema, argument validation, output schema and text.

Shared by the LLM toolset and the MCP server: a call is refused here exactly when `agent.run`
refuses the same input, with the same failing fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, LiteralString, Self, cast

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError, PydanticSerializationError, to_json, to_jsonable_python

from .catalog import CatalogOperation, JsonSchemaGenerator, input_schema, operations
from .core.definition import json_key, merge_errors
from .core.injector.serialization import serialize_fallback, serialize_input
from .core.output import output_value_type
from .core.registry import AgenToolRegistry
from .errors import InvalidInputError, OutputError, clip, quote
from .filters import ExposedOperation

ARGUMENTS_ADAPTER = TypeAdapter[dict[str, Any]](dict[str, Any])
"""Parses raw arguments into a JSON object, with pydantic's own errors for bad JSON or non-objects."""

RESULT_KEY = 'result'
"""Key that wraps an output whose schema is not an object (MCP structured content must be an object)."""


@dataclass(frozen=True, kw_only=True)
class OperationInterface:
    """What a surface needs to publish and call one exposed operation."""

    exposed: ExposedOperation
    description: str
    parameters_json_schema: dict[str, Any]
    output_json_schema: dict[str, Any] | None
    """`None` when the output is untyped or may be truncated (a truncated value fits no schema)."""
    output_wrapped: bool
    """The output schema wraps the value under `RESULT_KEY`."""
    _operation_key: str

    @classmethod
    def build(cls, exposed: ExposedOperation, operation: CatalogOperation, schema: Mapping[str, Any]) -> Self:
        """The interface of `exposed`, from its catalog description and the agentool's input `schema`."""
        properties: dict[str, Any] = schema.get('properties', {})
        published: dict[str, Any] = operation['request_schema']['properties']
        keys = [field['name'] for field in operation['fields']]
        required = tuple(field['name'] for field in operation['fields'] if field['required'])
        parameters: dict[str, Any] = {
            'type': 'object',
            'properties': {key: published[key] for key in keys if key in properties},
        }
        if required:
            parameters['required'] = list(required)
        if 'additionalProperties' in schema:
            parameters['additionalProperties'] = schema['additionalProperties']
        _attach_defs(parameters, schema.get('$defs', {}))
        output_schema, wrapped = _output_schema(exposed)
        operation_field = exposed.manager.operation_field
        key = json_key(operation_field, exposed.manager.input_schema.model_fields[operation_field])
        return cls(
            exposed=exposed,
            description=_description(exposed, operation['description']),
            parameters_json_schema=parameters,
            output_json_schema=output_schema,
            output_wrapped=wrapped,
            _operation_key=key if key in properties else operation_field,
        )

    def validate(self, arguments: Mapping[str, Any], *, context: Any = None) -> BaseModel:
        """The agentool's validated input: `ValidationError` lists every failing field, else `InvalidInputError`."""
        manager = self.exposed.manager
        # The operation field is the surface's to set; everything else is checked as `agent.run` checks it.
        surface: list[dict[str, Any]] = []
        if self._operation_key in arguments:
            value = arguments[self._operation_key]
            message = 'Extra inputs are not permitted'  # pydantic's own wording for the same refusal
            surface.append({'type': 'extra_forbidden', 'loc': [self._operation_key], 'msg': message, 'input': value})
        data = {**arguments, self._operation_key: self.exposed.operation}
        # Measured as a run measures it, so over the limit, or not JSON, raises the run's own error.
        try:
            text = to_json(data, by_alias=True, fallback=serialize_fallback)
        except PydanticSerializationError:
            text = serialize_input(manager.name, data)  # raises the typed error
        if len(text) > manager.config.max_input_bytes:
            manager.validate_json(text)  # raises `InputTooLargeError`
        try:
            # From the JSON text, as `injector.call` and a run validate (a strict field takes its JSON form).
            validated = manager.input_schema.model_validate_json(text, context=context)
        except ValidationError as error:
            invalid, errors = error, [dict(e) for e in error.errors(include_url=False)]
            validated = None
        else:
            invalid, errors = None, []
        given = [name for name, info in manager.input_schema.model_fields.items() if json_key(name, info) in data]
        found = merge_errors(manager.keys, errors, manager.requirements(self.exposed.operation).problems(given, data))
        quoted = [self._as_sent(e, arguments) for e in found]
        if invalid is not None and not surface and len(found) == len(errors) and quoted == found:
            raise invalid  # pydantic's own error, with its context intact
        if surface or found:
            raise ValidationError.from_exception_data(self.exposed.name, [_detail(e) for e in [*surface, *quoted]])
        assert validated is not None
        return validated

    def _as_sent(self, error: dict[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
        # An error about the whole object quotes what pydantic validated, with the operation this surface
        # filled in: a retry prompt must quote only what the model sent.
        loc, given = tuple(error['loc']), error.get('input')
        whole = loc == () or (len(loc) == 1 and error['type'] == 'missing')
        if whole and isinstance(given, dict) and self._operation_key in given:
            kept = {key: value for key, value in cast('dict[str, Any]', given).items() if key != self._operation_key}
            if self._operation_key in arguments:
                kept[self._operation_key] = arguments[self._operation_key]
            return {**error, 'input': kept}
        return error

    def describe(self, error: ValidationError | InvalidInputError) -> str:
        """A one-line message naming the tool, agentool, operation and every failing field (or the typed error)."""
        if isinstance(error, InvalidInputError):
            problems = f'{type(error).__name__}: {error.message}'
        else:
            details = error.errors(include_url=False, include_context=False)
            problems = '; '.join(
                f'field {quote(".".join(map(str, d["loc"])) or "<root>")}: {clip(d["msg"], 300)}' for d in details[:10]
            )
            if len(details) > 10:
                problems += f' (and {len(details) - 10} more)'
        exposed = self.exposed
        return (
            f'invalid arguments for tool {exposed.name!r} (agentool {exposed.agentool!r}, operation '
            f'{exposed.operation!r}): {problems}'
        )

    def validation_error(self, error: InvalidInputError) -> ValidationError:
        """`error` as pydantic's `ValidationError` (type `input_too_large` and the like, without the input)."""
        kind = re.sub(r'(?<=[a-z])(?=[A-Z])', '_', type(error).__name__.removesuffix('Error')).lower()
        details = cast('dict[str, Any]', to_jsonable_python(error.details))
        custom = PydanticCustomError(cast(LiteralString, kind), cast(LiteralString, error.message), details)
        return ValidationError.from_exception_data(self.exposed.name, [InitErrorDetails(type=custom, input=None)])

    def text(self, value: Any) -> str:
        """The output as text for a model: itself if a string, else JSON; cut to `max_output_chars`."""
        text = value if isinstance(value, str) else to_json(value, by_alias=True).decode()
        return _truncate(text, self.exposed.route.max_output_chars)

    def llm_output(self, value: Any) -> Any:
        """The value unchanged when it fits `max_output_chars`, else its truncated text."""
        limit = self.exposed.route.max_output_chars
        if limit is None:
            return value
        text = value if isinstance(value, str) else to_json(value, by_alias=True).decode()
        return value if len(text) <= limit else _truncate(text, limit)

    def structured(self, value: Any) -> Any:
        """The output as JSON data fitting `output_json_schema`."""
        jsonable = to_jsonable_python(value, by_alias=True)
        return {RESULT_KEY: jsonable} if self.output_wrapped else jsonable


def check_json_numbers(value: Any, *, agentool: str, operation: str | None) -> None:
    """Raise `OutputError` when `value` cannot be carried as JSON (an infinite or NaN float, say)."""
    if isinstance(value, str):
        return
    try:
        json.dumps(to_jsonable_python(value, by_alias=True), allow_nan=False)
    except PydanticSerializationError as error:
        problem, reason = f'the output cannot be serialised to JSON: {error}', 'not_serialisable'
    except ValueError:
        problem, reason = 'the output holds an infinite or NaN number, which JSON cannot carry', 'non_finite_number'
    else:
        return
    raise OutputError(
        f'agentool {agentool!r}, operation {operation!r}: {problem}',
        agentool=agentool,
        operation=operation,
        reason=reason,
    )


def build_interfaces(registry: AgenToolRegistry, selected: Sequence[ExposedOperation]) -> dict[str, OperationInterface]:
    """Tool name -> interface for every selected operation (one catalog lookup per agentool)."""
    names = dict.fromkeys(item.agentool for item in selected)
    catalogs = {name: operations(registry, name) for name in names}
    schemas = {name: input_schema(registry, name) for name in names}
    return {
        item.name: OperationInterface.build(item, catalogs[item.agentool][item.operation], schemas[item.agentool])
        for item in selected
    }


def _detail(error: Mapping[str, Any]) -> InitErrorDetails:
    """One error of a list, as pydantic builds a `ValidationError` from it (type and message kept)."""
    # Without a context pydantic leaves the template as it is: braces in the message need no escaping.
    custom = PydanticCustomError(cast(LiteralString, str(error['type'])), cast(LiteralString, str(error['msg'])))
    return InitErrorDetails(type=custom, loc=tuple(error['loc']), input=error.get('input'))


def _truncate(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    # The marker says what was cut so a model does not mistake a prefix for the whole value.
    return f'{text[:limit]}\n[... truncated: showing {limit} of {len(text)} characters (max_output_chars={limit})]'


def _description(exposed: ExposedOperation, text: str | None) -> str:
    route = exposed.route
    if not text:
        text = f'Operation {exposed.operation!r} of agentool {exposed.agentool!r}.'
        if about := exposed.manager.config.description:
            text = f'{text} {about}'
    return f'(Deprecated) {text}' if route.deprecated else text


def _output_schema(exposed: ExposedOperation) -> tuple[dict[str, Any] | None, bool]:
    output_type = output_value_type(exposed.manager.config.output_type)  # the types inside a spec
    if output_type is None or exposed.route.max_output_chars is not None:
        return None, False
    schema = TypeAdapter[Any](output_type).json_schema(mode='serialization', schema_generator=JsonSchemaGenerator)
    if schema.get('type') == 'object' and 'anyOf' not in schema:
        return schema, False
    defs = schema.pop('$defs', None)
    wrapped: dict[str, Any] = {'type': 'object', 'properties': {RESULT_KEY: schema}, 'required': [RESULT_KEY]}
    if defs:
        wrapped['$defs'] = defs
    return wrapped, True


def _attach_defs(schema: dict[str, Any], defs: Mapping[str, Any]) -> None:
    """Copy into `schema` the `$defs` its properties reference, directly or through other defs."""
    needed: dict[str, Any] = {}
    pending = [schema['properties']]
    while pending:
        for ref in _refs(pending.pop()):
            if (name := ref.removeprefix('#/$defs/')) not in needed and name in defs:
                needed[name] = defs[name]
                pending.append(defs[name])
    if needed:
        schema['$defs'] = needed


def _refs(node: Any) -> list[str]:
    if isinstance(node, Mapping):
        items: Mapping[str, Any] = node  # pyright: ignore[reportUnknownVariableType]
        found = [items['$ref']] if isinstance(items.get('$ref'), str) else []
        return found + [ref for value in items.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]  # pyright: ignore[reportUnknownVariableType]
    return []
