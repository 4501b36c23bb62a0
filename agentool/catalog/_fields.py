"""Which input fields an operation uses, and the JSON schema of an input for that operation alone.

The rule is the core's (`operation_requirements`), so a catalog publishes what every surface enforces.
"""

from __future__ import annotations

import copy
import json
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, Union, cast, get_args, get_origin

from pydantic import AliasChoices, AliasPath
from pydantic.fields import FieldInfo
from pydantic.json_schema import DefsRef, GenerateJsonSchema, JsonSchemaKeyT, JsonSchemaMode, JsonSchemaValue
from pydantic_core import PydanticSerializationError, PydanticUndefined, from_json, to_json

from ..core.definition import FieldsSource, operation_requirements, type_name

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic_core import CoreSchema, core_schema

    from ..core.definition import Route, ToolSignature


def json_value(value: Any) -> Any:
    """`value` as JSON data (an infinite float a string, odd bytes base64, else its `repr`); never fails."""
    for bytes_mode in ('utf8', 'base64'):
        try:
            return from_json(to_json(value, serialize_unknown=True, inf_nan_mode='strings', bytes_mode=bytes_mode))
        except PydanticSerializationError:
            continue
    return repr(value)


class JsonSchemaGenerator(GenerateJsonSchema):
    """pydantic's generator, but a type with no JSON schema gives `{}`, and infinite or NaN floats are strings."""

    def handle_invalid_for_json_schema(
        self,
        schema: CoreSchema
        | core_schema.ModelField
        | core_schema.DataclassField
        | core_schema.TypedDictField
        | core_schema.ComputedField,
        error_info: str,
    ) -> JsonSchemaValue:
        return {}

    # pydantic keeps an infinite default or enum value as a float, so the finished schemas are converted.

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = 'validation') -> JsonSchemaValue:
        return json_value(super().generate(schema, mode))

    def generate_definitions(
        self, inputs: Sequence[tuple[JsonSchemaKeyT, JsonSchemaMode, CoreSchema]]
    ) -> tuple[dict[tuple[JsonSchemaKeyT, JsonSchemaMode], JsonSchemaValue], dict[DefsRef, JsonSchemaValue]]:
        schemas, definitions = super().generate_definitions(inputs)
        return {key: json_value(value) for key, value in schemas.items()}, json_value(definitions)


class CatalogField(TypedDict):
    """One input field an operation uses."""

    name: str
    """The JSON key (the field's alias when it has one)."""
    type: str
    description: str | None
    required: bool
    default: Any
    """The default as JSON; `None` when the field is required or its default is computed."""


type_label = type_name
"""A short, readable name for a type annotation (`str | None`, `list[Item]`), as the core spells types."""


def operation_fields(
    input_schema: type[BaseModel],
    operation_field: str,
    tool: ToolSignature | None,
    op: str,
    route: Route,
    properties: dict[str, Any],
) -> tuple[list[CatalogField], FieldsSource, list[str]]:
    """The fields `op` uses (schema order; all without a `tool`), how found, and the non-null keys."""
    needs = operation_requirements(input_schema, operation_field, tool, op, route)
    fields: list[CatalogField] = []
    for field_name, info in input_schema.model_fields.items():
        if field_name == operation_field or not (field_name in needs.used or info.is_required()):
            continue
        required = info.is_required() or field_name in needs.needed
        key = schema_key(field_name, info, properties)
        default: Any = None
        if not (required or info.default is PydanticUndefined):
            # As the input schema writes it (a set sorted, serialisation settings applied), else as JSON data.
            prop: dict[str, Any] = properties.get(key, {})
            default = prop['default'] if 'default' in prop else json_value(info.default)
        # A field the operation needs a value for is typed as the operation takes it: `str`, not `str | None`.
        annotation = info.annotation if field_name not in needs.non_null else _without_none(info.annotation)
        fields.append(
            CatalogField(
                name=key,
                type=type_label(annotation),
                description=info.description,
                required=required,
                default=default,
            )
        )
    keys = [schema_key(name, input_schema.model_fields[name], properties) for name in needs.non_null]
    return fields, needs.source, keys


def _without_none(annotation: Any) -> Any:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _without_none(args[0])
    if origin in (Union, types.UnionType):
        kept = tuple(arg for arg in args if arg is not types.NoneType and arg is not None)
        if kept and len(kept) < len(args):
            return kept[0] if len(kept) == 1 else Union[kept]  # noqa: UP007  # a tuple of members, built at run time
    return annotation


def schema_key(name: str, info: FieldInfo, properties: dict[str, Any]) -> str:
    """The JSON key of field `name`: its alias when it has one (an `AliasChoices`' first one-key choice)."""
    validation = info.validation_alias
    if isinstance(validation, AliasChoices | AliasPath):
        paths = validation.convert_to_aliases() if isinstance(validation, AliasChoices) else []
        alias = next((path[0] for path in paths if len(path) == 1 and isinstance(path[0], str)), None)
    else:
        alias = validation if isinstance(validation, str) else info.alias
    return alias if alias is not None and alias in properties else name


def operation_request_schema(
    schema: dict[str, Any],
    operation_field: str,
    operation: str,
    fields: Sequence[CatalogField],
    description: str | None = None,
    non_null: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON schema of an input for one operation: the operation field a constant, then `fields`.

    A required field has no default; a field in `non_null` does not take `null`.
    """
    properties: dict[str, Any] = schema.get('properties', {})
    operation_property = {
        key: value for key, value in properties.get(operation_field, {}).items() if key in ('title', 'description')
    }
    derived: dict[str, Any] = {
        'title': f'{schema.get("title", "Input")} ({operation})',
        'type': 'object',
        'properties': {
            operation_field: {**operation_property, **_operation_constant(schema, operation_field, operation)},
            **{
                f['name']: field_property(properties, f['name'], f['required'], nullable=f['name'] not in non_null)
                for f in fields
            },
        },
        'required': [operation_field, *(f['name'] for f in fields if f['required'])],
    }
    if 'additionalProperties' in schema:
        derived['additionalProperties'] = schema['additionalProperties']
    if description:
        derived['description'] = description
    if '$defs' in schema:
        derived['$defs'] = schema['$defs']
    # A copy: a caller editing one operation's schema must not edit the shared input schema.
    return copy.deepcopy(derived)


_JSON_TYPES: dict[type, str] = {bool: 'boolean', int: 'integer', float: 'number', str: 'string'}


def _operation_constant(schema: dict[str, Any], operation_field: str, operation: str) -> dict[str, Any]:
    """`const` and `type` of `operation` as the input takes it: `1` for a `Literal[1, 2]` or `IntEnum` member."""
    prop: dict[str, Any] = schema.get('properties', {}).get(operation_field, {})
    if isinstance(ref := prop.get('$ref'), str) and ref.startswith('#/$defs/'):
        prop = schema.get('$defs', {}).get(ref.removeprefix('#/$defs/'), prop)
    members: list[Any] = prop.get('enum', [prop['const']] if 'const' in prop else [])
    for member in members:  # JSON values: a member that is not text is matched by its text
        if not isinstance(member, str) and type(member) in _JSON_TYPES and str(member) == operation:
            return {'const': member, 'type': _JSON_TYPES[type(member)]}
    return {'const': operation, 'type': 'string'}


def field_property(properties: dict[str, Any], key: str, required: bool, *, nullable: bool = True) -> dict[str, Any]:
    """Property `key` as one operation takes it: no default when required, no `null` branch unless `nullable`."""
    schema: dict[str, Any] = dict(properties.get(key, {}))
    if required:
        schema.pop('default', None)
    if not nullable and isinstance(branches := schema.get('anyOf'), list):
        kept = [b for b in cast('list[Any]', branches) if b != {'type': 'null'}]
        del schema['anyOf']
        if len(kept) == 1 and isinstance(kept[0], dict):
            schema = {**cast('dict[str, Any]', kept[0]), **schema}
        else:
            schema['anyOf'] = kept
    return schema


def field_wording(field: CatalogField, request_schema: dict[str, Any], *, code: Callable[[str], str] = str) -> str:
    """A field's type and requirement as every catalog view words it: `int, optional, default 50`,
    `str, required` or `str | None, required, may be null`; `code` marks up the type and the default."""
    if not field['required']:
        return f'{code(field["type"])}, optional, default {code(json.dumps(field["default"]))}'
    prop: dict[str, Any] = request_schema.get('properties', {}).get(field['name'], {})
    return f'{code(field["type"])}, required' + (', may be null' if _takes_null(prop) else '')


def _takes_null(schema: dict[str, Any]) -> bool:
    """Whether a JSON schema names `null` among its types (`{}` does not count)."""
    kinds = schema.get('type')
    if kinds == 'null' or (isinstance(kinds, list) and 'null' in kinds):
        return True
    branches = cast('list[Any]', schema.get('anyOf', []))
    return any(_takes_null(cast('dict[str, Any]', branch)) for branch in branches if isinstance(branch, dict))
