"""Whether a value fits an output JSON schema: where its own type is described first (a title, an
`int` under `integer`), then where its JSON fits (`float | int` members both take `1`)."""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Any, cast

from pydantic import BaseModel

__all__ = ('resolve',)

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    'object': (dict,),
    'array': (list,),
    'string': (str,),
    'integer': (int,),
    'number': (int, float),
    'boolean': (bool,),
    'null': (type(None),),
}

_OWN_JSON_TYPE: dict[type, str] = {bool: 'boolean', int: 'integer', float: 'number', str: 'string', type(None): 'null'}
"""The one JSON type each plain scalar is described by (`number` also takes an `int`, but is not its own)."""


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """`schema`, or the `$defs` entry of `root` it refers to (pydantic-ai puts models and enums there)."""
    ref = schema.get('$ref')
    if isinstance(ref, str) and ref.startswith('#/$defs/'):
        found = root.get('$defs', {}).get(ref.removeprefix('#/$defs/'))
        if isinstance(found, dict):
            return resolve(cast(dict[str, Any], found), root)
    return schema


def title_of(value: Any) -> str | None:
    """The schema title pydantic gives `value`'s own type, for a model, dataclass or enum member."""
    if isinstance(value, BaseModel):
        return value.model_config.get('title') or type(value).__name__
    if isinstance(value, enum.Enum) or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return type(value).__name__
    return None


def fits_type(schema: dict[str, Any], root: dict[str, Any], value: Any, jsonable: Any) -> bool:
    """Whether `schema` describes `value`'s own type: its title, or a plain scalar's own JSON type."""
    schema = resolve(schema, root)
    title = title_of(value)
    if title is not None:
        return schema.get('title') == title
    own = _OWN_JSON_TYPE.get(cast('type[Any]', type(value)))
    return own is not None and schema.get('type') == own and 'enum' not in schema and 'const' not in schema


def fits_shape(schema: dict[str, Any], root: dict[str, Any], value: Any, jsonable: Any, deep: bool = True) -> bool:
    """Whether `jsonable` fits `schema`: nested too (`deep`), else its JSON type and an object's keys."""
    return _fits(schema, root, jsonable, deep=deep)


fits_loosely = functools.partial(fits_shape, deep=False)


def _fits(schema: dict[str, Any], root: dict[str, Any], jsonable: Any, *, deep: bool) -> bool:
    schema = resolve(schema, root)
    if 'const' in schema:
        return _same(jsonable, schema['const'])
    if 'enum' in schema:
        return any(_same(jsonable, option) for option in schema['enum'])
    for key in ('anyOf', 'oneOf'):
        if key in schema:
            return any(_fits(s, root, jsonable, deep=deep) for s in schema[key])
    if 'allOf' in schema and not all(_fits(s, root, jsonable, deep=deep) for s in schema['allOf']):
        return False
    kind = schema.get('type')
    kinds: list[Any] = cast(list[Any], kind) if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    if kinds and not any(_is_json_type(jsonable, k) for k in kinds):
        return False
    if isinstance(jsonable, dict):
        return _fits_object(schema, root, cast(dict[str, Any], jsonable), deep=deep)
    if isinstance(jsonable, list) and deep:
        return _fits_array(schema, root, cast(list[Any], jsonable))
    return True


def _fits_object(schema: dict[str, Any], root: dict[str, Any], jsonable: dict[str, Any], *, deep: bool) -> bool:
    properties: dict[str, Any] = schema.get('properties', {})
    if any(key not in jsonable for key in schema.get('required', [])):
        return False
    extra = schema.get('additionalProperties')
    for key, item in jsonable.items():
        if key not in properties and extra is False:
            return False
        # A key the model declares fits its field's schema; any other, `additionalProperties` (a dict's values).
        item_schema: Any = properties.get(key, extra)
        if deep and isinstance(item_schema, dict) and not _fits(cast(Any, item_schema), root, item, deep=True):
            return False
    return True


def _fits_array(schema: dict[str, Any], root: dict[str, Any], jsonable: list[Any]) -> bool:
    prefix: list[dict[str, Any]] = schema.get('prefixItems', [])
    if prefix and len(jsonable) < len(prefix):
        return False
    if not all(_fits(s, root, item, deep=True) for s, item in zip(prefix, jsonable, strict=False)):
        return False
    items = schema.get('items')
    rest = jsonable[len(prefix) :]
    if items is False:
        return not rest
    if isinstance(items, dict):
        return all(_fits(cast(dict[str, Any], items), root, item, deep=True) for item in rest)
    return True


def _is_json_type(jsonable: Any, kind: str) -> bool:
    # `True` is an `int` to Python but not a JSON number.
    if isinstance(jsonable, bool) and kind in ('integer', 'number'):
        return False
    return isinstance(jsonable, _JSON_TYPES.get(kind, (object,)))


def _same(jsonable: Any, option: Any) -> bool:
    # `1 == True` in Python; a JSON `const`/`enum` tells them apart.
    return jsonable == option and isinstance(jsonable, bool) == isinstance(option, bool)
