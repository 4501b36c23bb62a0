"""Catalog values as JSON: the JSON-schema generator the catalog uses, and defaults and examples as JSON data.

JSON has no number for an infinite or NaN float (`json.dumps` writes `Infinity`, which no JSON
parser must accept), so wherever the catalog holds one (a default or an enum value in a schema, a
field's default, an example) it is a string, as pydantic writes it for a model that asks for valid
JSON (`ser_json_inf_nan='strings'`): `'Infinity'`, `'-Infinity'`, `'NaN'`, the forms pydantic's
lax float validation reads back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic.json_schema import DefsRef, GenerateJsonSchema, JsonSchemaKeyT, JsonSchemaMode, JsonSchemaValue
from pydantic_core import PydanticSerializationError, from_json, to_json

if TYPE_CHECKING:
    from pydantic_core import CoreSchema, core_schema

__all__ = ('JsonSchemaGenerator', 'json_value')


def json_value(value: Any) -> Any:
    """`value` as JSON data, an infinite or NaN float as a string (`'Infinity'`, `'-Infinity'`, `'NaN'`).

    Never fails, so one odd default or example cannot stop a whole catalog: bytes that are not UTF-8
    text are base64 (as pydantic writes bytes for `ser_json_bytes='base64'`), and a value JSON cannot
    hold at all (a dict keyed by a `frozenset`) is its `repr`.
    """
    for bytes_mode in ('utf8', 'base64'):
        try:
            return from_json(to_json(value, serialize_unknown=True, inf_nan_mode='strings', bytes_mode=bytes_mode))
        except PydanticSerializationError:
            continue
    return repr(value)


class JsonSchemaGenerator(GenerateJsonSchema):
    """pydantic's generator, except that a type with no JSON schema gives `{}` instead of an error,
    and an infinite or NaN float anywhere in a schema (a default, an enum value) is a string (see `json_value`)."""

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

    # pydantic keeps a float as it is (a default of `float('inf')` unless the model's own
    # `ser_json_inf_nan` says otherwise, a float enum's values), so the finished schemas are converted.

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = 'validation') -> JsonSchemaValue:
        return json_value(super().generate(schema, mode))

    def generate_definitions(
        self, inputs: Sequence[tuple[JsonSchemaKeyT, JsonSchemaMode, CoreSchema]]
    ) -> tuple[dict[tuple[JsonSchemaKeyT, JsonSchemaMode], JsonSchemaValue], dict[DefsRef, JsonSchemaValue]]:
        schemas, definitions = super().generate_definitions(inputs)
        return {key: json_value(value) for key, value in schemas.items()}, json_value(definitions)
