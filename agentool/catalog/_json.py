"""Catalog values as JSON: the catalog's JSON-schema generator, and defaults and examples as JSON data.

JSON has no number for an infinite or NaN float, so wherever the catalog holds one it is the
string pydantic writes with `ser_json_inf_nan='strings'` (`'Infinity'`, `'NaN'`) and reads back.
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
    """`value` as JSON data, an infinite or NaN float as a string.

    Never fails, so one odd default cannot stop a whole catalog: bytes that are not UTF-8 are
    base64, and a value JSON cannot hold at all is its `repr`.
    """
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
