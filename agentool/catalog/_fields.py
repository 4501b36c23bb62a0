"""Which input fields an operation uses, and the JSON schema of an input for that operation alone.

The rule (which fields an operation uses and needs) is the core's, `agentool.core.definition._requirements`,
so what a catalog publishes is exactly what every surface enforces: a field is listed when the
operation uses it or the schema requires it, and required when the schema requires it or the
operation needs it. A required field never advertises a default.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, Union, cast, get_args, get_origin

from pydantic import AliasChoices, AliasPath
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from ..core.definition import FieldsSource, operation_requirements, probe_transform, type_name
from ._json import json_value

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..core.definition import Route, ToolSignature

__all__ = (
    'CatalogField',
    'FieldsSource',
    'field_property',
    'field_requirement',
    'field_wording',
    'operation_fields',
    'operation_request_schema',
    'probe_transform',
    'schema_key',
    'type_label',
)


class CatalogField(TypedDict):
    """One input field an operation uses."""

    name: str
    """The JSON key (the field's alias when it has one)."""
    type: str
    description: str | None
    required: bool
    default: Any
    """The default value (JSON, see `json_value`); `None` when the field is required or its default is computed."""


type_label = type_name
"""A short, readable name for a type annotation: `float`, `str | None`, `list[Item]`, `Literal['a']`.

The core's `type_name`: tool metadata, catalogs and errors spell every type the same way."""


def operation_fields(
    input_schema: type[BaseModel],
    operation_field: str,
    tool: ToolSignature | None,
    op: str,
    route: Route,
    properties: dict[str, Any],
) -> tuple[list[CatalogField], FieldsSource, list[str]]:
    """The fields operation `op` uses, in schema order, how they were found, and the keys that must not be null.

    `tool` is the routed tool's signature, `None` when the configuration does not give the tool
    (then every field is listed). `properties` are the input JSON schema's properties (they give
    each field's JSON key).
    """
    needs = operation_requirements(input_schema, operation_field, tool, op, route)
    fields: list[CatalogField] = []
    for field_name, info in input_schema.model_fields.items():
        if field_name == operation_field:
            continue
        if field_name in needs.used or info.is_required():
            required = info.is_required() or field_name in needs.needed
            fields.append(_field(field_name, info, required, properties, nullable=field_name not in needs.non_null))
    keys = [schema_key(name, input_schema.model_fields[name], properties) for name in needs.non_null]
    return fields, needs.source, keys


def _without_none(annotation: Any) -> Any:
    """`annotation` without its `None` branch: `str | None` -> `str` (as the operation's request schema has it)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _without_none(args[0])
    if origin in (Union, types.UnionType):
        kept = tuple(arg for arg in args if arg is not types.NoneType and arg is not None)
        if kept and len(kept) < len(args):
            return kept[0] if len(kept) == 1 else Union[kept]  # noqa: UP007  # a tuple of members, built at run time
    return annotation


def schema_key(name: str, info: FieldInfo, properties: dict[str, Any]) -> str:
    """The JSON key of field `name` in the input schema's `properties`: its alias when it has one.

    An `AliasChoices` is named by its first one-key choice, as pydantic names the property.
    """
    validation = info.validation_alias
    if isinstance(validation, AliasChoices | AliasPath):
        paths = validation.convert_to_aliases() if isinstance(validation, AliasChoices) else []
        alias = next((path[0] for path in paths if len(path) == 1 and isinstance(path[0], str)), None)
    else:
        alias = validation if isinstance(validation, str) else info.alias
    return alias if alias is not None and alias in properties else name


def _field(
    name: str, info: FieldInfo, required: bool, properties: dict[str, Any], *, nullable: bool = True
) -> CatalogField:
    key = schema_key(name, info, properties)
    default: Any = None
    if not (required or info.default is PydanticUndefined):
        # As the input schema writes it when it can (a set sorted, so equal definitions give equal
        # catalogs; the model's serialisation settings applied), else as JSON data.
        prop: dict[str, Any] = properties.get(key, {})
        default = prop['default'] if 'default' in prop else json_value(info.default)
    return CatalogField(
        name=key,
        # A field the operation needs a value for is typed as the operation takes it: `str`, not `str | None`.
        type=type_label(info.annotation if nullable else _without_none(info.annotation)),
        description=info.description,
        required=required,
        default=default,
    )


def operation_request_schema(
    schema: dict[str, Any],
    operation_field: str,
    operation: str,
    fields: Sequence[CatalogField],
    description: str | None = None,
    non_null: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON schema of an input for one operation, derived from the input's object `schema`.

    The operation field (its JSON key, `operation_field`) becomes a constant; the other properties
    are `fields`, in order; `additionalProperties` is kept from `schema`. A required field has no
    default, and a field the operation needs `non_null` does not take `null`.
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
    return derived


_JSON_TYPES: dict[type, str] = {bool: 'boolean', int: 'integer', float: 'number', str: 'string'}


def _operation_constant(schema: dict[str, Any], operation_field: str, operation: str) -> dict[str, Any]:
    """`const` and `type` of `operation` as the input takes it: `1` for a `Literal[1, 2]` or `IntEnum` member.

    Routes name operations by text; the value a client must send is the schema's member whose text that is.
    """
    prop: dict[str, Any] = schema.get('properties', {}).get(operation_field, {})
    ref = prop.get('$ref')
    if isinstance(ref, str) and ref.startswith('#/$defs/'):
        prop = schema.get('$defs', {}).get(ref.removeprefix('#/$defs/'), prop)
    members: list[Any] = prop.get('enum', [prop['const']] if 'const' in prop else [])
    for member in members:  # JSON values: a member that is not text is matched by its text
        if not isinstance(member, str) and type(member) in _JSON_TYPES and str(member) == operation:
            return {'const': member, 'type': _JSON_TYPES[type(member)]}
    return {'const': operation, 'type': 'string'}


def field_property(properties: dict[str, Any], key: str, required: bool, *, nullable: bool = True) -> dict[str, Any]:
    """The JSON schema of property `key` as one operation takes it.

    A required field advertises no default; a field that is not `nullable` loses its `null` branch.
    """
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


def field_requirement(field: CatalogField, request_schema: dict[str, Any]) -> str:
    """How a catalog says whether `field` must be given: `required`, `required, may be null` or `optional`.

    A required field whose request-schema property takes `null` says so, so a listing never reads
    "`str | None`, required" as if the two contradicted each other.
    """
    if not field['required']:
        return 'optional'
    prop: dict[str, Any] = request_schema.get('properties', {}).get(field['name'], {})
    return 'required, may be null' if _takes_null(prop) else 'required'


def field_wording(field: CatalogField, request_schema: dict[str, Any], *, code: Callable[[str], str] = str) -> str:
    """How a catalog words a field's type and requirement: `int, optional, default 50`.

    The Markdown catalog and `agentool show` both say it this way; `code` marks up the type and the
    default (Markdown's inline code), plain text by default.
    """
    wording = f'{code(field["type"])}, {field_requirement(field, request_schema)}'
    if not field['required']:
        wording += f', default {code(json.dumps(field["default"]))}'
    return wording


def _takes_null(schema: dict[str, Any]) -> bool:
    """Whether a JSON schema names `null` among its types (`{}`, any value, does not count)."""
    kinds = schema.get('type')
    if kinds == 'null' or (isinstance(kinds, list) and 'null' in kinds):
        return True
    branches = cast('list[Any]', schema.get('anyOf', []))
    return any(_takes_null(cast('dict[str, Any]', branch)) for branch in branches if isinstance(branch, dict))
