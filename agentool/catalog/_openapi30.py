"""JSON schemas as pydantic writes them (JSON Schema 2020-12) rewritten to OpenAPI 3.0's dialect.

Only schema positions are rewritten; what 3.0 cannot say is loosened, never tightened (the
catalogs guide lists the rules).
"""

from __future__ import annotations

from operator import ge, le
from typing import Any, cast

_KEYWORDS = frozenset(
    {
        *('title', 'description', 'default', 'example', 'deprecated', 'readOnly', 'writeOnly'),
        *('type', 'format', 'enum', 'nullable', 'discriminator', 'externalDocs', 'xml', '$ref'),
        *('multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum'),
        *('maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems'),
        *('maxProperties', 'minProperties', 'required', 'properties', 'additionalProperties', 'items'),
        *('allOf', 'anyOf', 'oneOf', 'not'),
    }
)
"""The keywords of an OpenAPI 3.0 Schema Object (besides `x-` extensions)."""
_NULL = {'type': 'null'}
"""How pydantic writes the `None` branch of an optional type."""
_NULL_30: dict[str, Any] = {'enum': [None], 'nullable': True}
"""`null` alone, in 3.0's words (the `enum` says it even where `nullable` without `type` is ignored)."""


def schema_30(schema: object) -> dict[str, Any]:
    """`schema` in OpenAPI 3.0's dialect (a copy)."""
    if not isinstance(schema, dict):  # a boolean schema: 3.0 has none
        return {'not': {}} if schema is False else {}
    source = dict(cast('dict[str, Any]', schema))
    nullable = _take_null(source)
    if 'const' in source:
        source['enum'] = [source.pop('const')]
    if isinstance(examples := source.pop('examples', None), list) and examples and 'example' not in source:
        source['example'] = cast('list[Any]', examples)[0]
    _exclusive_bounds(source)
    if isinstance(prefix := source.pop('prefixItems', None), list):
        source['items'] = _tuple_items(cast('list[Any]', prefix), source)
    node = {key: value for key, value in source.items() if key in _KEYWORDS or key.startswith('x-')}
    if node.get('type') == 'array' and 'items' not in node:
        node['items'] = {}
    if node.get('required') == []:  # 3.0 wants at least one name there
        del node['required']
    if nullable:
        node['nullable'] = True
        if isinstance(choices := node.get('enum'), list) and None not in choices:
            node['enum'] = [*cast('list[Any]', choices), None]
    if '$ref' in node and len(node) > 1:
        node['allOf'] = [{'$ref': node.pop('$ref')}, *node.get('allOf', [])]
    for key in ('allOf', 'anyOf', 'oneOf'):
        if isinstance(branches := node.get(key), list):
            node[key] = [schema_30(branch) for branch in cast('list[Any]', branches)]
    for key in ('items', 'not'):
        if key in node:
            node[key] = schema_30(node[key])
    if isinstance(node.get('additionalProperties'), dict):  # a boolean is valid 3.0 there
        node['additionalProperties'] = schema_30(node['additionalProperties'])
    if isinstance(properties := node.get('properties'), dict):  # names are data: only the values are schemas
        node['properties'] = {name: schema_30(value) for name, value in cast('dict[str, Any]', properties).items()}
    return node


def _take_null(source: dict[str, Any]) -> bool:
    """Say `null` in 3.0's words (in place); whether `source` itself is now `nullable`.

    `null` stays a branch of its own beside a `$ref` or a composition, which `nullable` would not reach.
    """
    nullable = False
    for key in ('anyOf', 'oneOf'):
        branches = source.get(key)
        if not (isinstance(branches, list) and _NULL in branches):
            continue
        others = [branch for branch in cast('list[Any]', branches) if branch != _NULL]
        if len(others) == 1 and isinstance(only := others[0], dict) and _plain(cast('dict[str, Any]', only)):
            del source[key]
            merged = {**cast('dict[str, Any]', only), **source}  # the outer schema's title, default... win
            source.clear()
            source.update(merged)
            nullable = True
        else:
            source[key] = [*others, _NULL_30]
    kind = source.get('type')
    kinds: list[Any] = (
        [kind] if isinstance(kind, str) else list(cast('list[Any]', kind)) if isinstance(kind, list) else []
    )
    alternatives: list[dict[str, Any]] = []
    if 'null' in kinds:
        kinds = [k for k in kinds if k != 'null']
        nullable = len(kinds) <= 1
        if not kinds:
            source.setdefault('enum', [None])
        elif len(kinds) > 1:
            alternatives = [*({'type': k} for k in kinds), _NULL_30]
    elif len(kinds) > 1:
        alternatives = [{'type': k} for k in kinds]
    if len(kinds) == 1:
        source['type'] = kinds[0]  # in place, so the keys keep their order
    elif 'type' in source:
        del source['type']
    if alternatives:  # 3.0's `type` is one name: several become alternatives
        if 'anyOf' in source:
            source['allOf'] = [*source.get('allOf', []), {'anyOf': alternatives}]
        else:
            source['anyOf'] = alternatives
    return nullable


def _plain(schema: dict[str, Any]) -> bool:
    """Whether `schema` has a type of its own and no reference or composition (so `nullable` applies to it)."""
    return 'type' in schema and not any(key in schema for key in ('$ref', 'allOf', 'anyOf', 'oneOf', 'not'))


def _exclusive_bounds(source: dict[str, Any]) -> None:
    """Numeric `exclusiveMinimum`/`exclusiveMaximum` as 3.0's flags on `minimum`/`maximum` (in place)."""
    for exclusive, bound, stricter in (('exclusiveMinimum', 'minimum', ge), ('exclusiveMaximum', 'maximum', le)):
        value = source.get(exclusive)
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if (current := source.get(bound)) is None or stricter(value, current):
            source[bound], source[exclusive] = value, True
        else:  # the inclusive bound is the stricter one: it alone says it
            del source[exclusive]


def _tuple_items(prefix: list[Any], source: dict[str, Any]) -> Any:
    """The one `items` schema of a tuple: any of its positions (and of the items after them, if any)."""
    rest = source.pop('items', True)
    limit = source.get('maxItems')
    if rest is False or (isinstance(limit, int) and limit <= len(prefix)):
        positions = prefix[:limit] if isinstance(limit, int) else prefix
        source['maxItems'] = len(positions)
    else:
        positions = [*prefix, rest]
    choices: list[Any] = []
    for position in positions:
        if position is True or position == {}:  # anything goes at this position
            return {}
        if position not in choices:
            choices.append(position)
    if len(choices) == 1:
        return choices[0]
    return {'anyOf': choices} if choices else {}
