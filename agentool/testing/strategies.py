"""Hypothesis strategies built from an agentool's input schema: valid inputs per operation, and invalid ones.

The agentool is looked up when the strategy is first drawn from, so a strategy can be built at
import time in a test module.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast, get_args

from pydantic import BaseModel, ValidationError

from .._options import check_instance, check_string_or_strings, refuse
from ..core.manager import AgenToolManager
from ..core.registry import AgenToolRegistry, get_registry
from ..errors import ConfigurationError, InvalidInputError, MissingExtraError

try:
    from hypothesis import strategies as st
except ImportError as _error:  # pragma: no cover - hypothesis is installed wherever the tests run
    raise MissingExtraError(
        'agentool.testing.strategies needs hypothesis: pip install "agentool[testing]"', extra='testing'
    ) from _error

__all__ = ('InvalidKind', 'INVALID_KINDS', 'valid_inputs', 'invalid_inputs')

InvalidKind: TypeAlias = Literal[
    'not_json', 'not_an_object', 'unknown_operation', 'missing_field', 'wrong_type', 'unknown_field'
]
INVALID_KINDS: tuple[InvalidKind, ...] = get_args(InvalidKind)

Schema: TypeAlias = dict[str, Any]
_Given: TypeAlias = Mapping[str, 'st.SearchStrategy[Any]']
_MAX_TEXT = 20
_MAX_ITEMS = 4
# Values of every JSON type: for each field, at least one of them has a type its schema refuses.
_WRONG_VALUES: tuple[Any, ...] = ({'unexpected': [1]}, [[]], 'not-a-value', 123456789, 1.5, True, None)


@dataclass(frozen=True)
class _Target:
    schema: type[BaseModel]
    operation_field: str
    operations: tuple[str, ...]
    manager: AgenToolManager | None = None
    request_schemas: Mapping[str, Schema] | None = None
    """Each operation's published request schema (a registered agentool's catalog)."""


def valid_inputs(
    agentool: str | type[BaseModel],
    operation: str | None = None,
    *,
    fields: Mapping[str, st.SearchStrategy[Any]] | None = None,
    registry: AgenToolRegistry | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """Inputs (as dicts) that the agentool's input schema accepts, for `operation` or any operation.

    `agentool` is a registered agentool's name (in `registry`, by default the one in effect when drawing)
    or an input schema class; `fields` replaces the schema's strategies for those fields.
    """
    _check_target(agentool, registry)
    overrides = _check_fields(fields)

    def build() -> st.SearchStrategy[dict[str, Any]]:
        target = _resolve(agentool, registry)
        known = target.schema.model_json_schema().get('properties', {})
        if unknown := sorted(set(overrides) - set(known)):
            raise ConfigurationError(
                f'fields= names {", ".join(map(repr, unknown))}, which {target.schema.__name__} does not have '
                f'(fields: {", ".join(known)})',
                option='fields',
                value=repr(unknown),
                known=list(known),
            )
        if operation is not None and target.operations and operation not in target.operations:
            raise ConfigurationError(
                f'{target.schema.__name__} has no operation {operation!r} (known: {", ".join(target.operations)})',
                option='operation',
                value=repr(operation),
                known=list(target.operations),
            )
        return _valid_dicts(target, target.operations if operation is None else (operation,), overrides)

    return st.deferred(build)


def invalid_inputs(
    agentool: str | type[BaseModel],
    *,
    kinds: Collection[InvalidKind] = INVALID_KINDS,
    registry: AgenToolRegistry | None = None,
) -> st.SearchStrategy[str]:
    """JSON prompts the agentool's input schema refuses (each checked), of the given kinds."""
    _check_target(agentool, registry)
    chosen = check_string_or_strings('kinds', kinds)
    unknown = sorted(set(chosen) - set(INVALID_KINDS))
    if unknown or not chosen:
        raise ConfigurationError(
            f'kinds must be a non-empty selection of {", ".join(INVALID_KINDS)}; got {chosen!r}',
            option='kinds',
            value=repr(kinds),
            unknown=unknown,
            known=list(INVALID_KINDS),
        )
    kinds = cast('list[InvalidKind]', chosen)

    def build() -> st.SearchStrategy[str]:
        target = _resolve(agentool, registry)
        made = [s for kind in kinds if (s := _MAKERS[kind](target)) is not None]
        if not made:
            raise ConfigurationError(
                f'{target.schema.__name__} admits none of the invalid input kinds {sorted(kinds)}',
                option='kinds',
                value=repr(kinds),
            )
        return st.one_of(made).filter(lambda text: not _accepts(target, text))

    return st.deferred(build)


def _check_target(agentool: object, registry: object) -> None:
    if not (isinstance(agentool, str) or (isinstance(agentool, type) and issubclass(agentool, BaseModel))):
        raise refuse('agentool', 'a registered agentool name or an input schema class', cast(object, agentool))
    check_instance('registry', registry, AgenToolRegistry, optional=True)


def _check_fields(fields: object) -> dict[str, st.SearchStrategy[Any]]:
    if fields is None:
        return {}
    if isinstance(fields, Mapping):  # the check below proves the key and value types
        items = cast('Mapping[object, object]', fields)
        if all(isinstance(k, str) and isinstance(v, st.SearchStrategy) for k, v in items.items()):
            return dict(cast('Mapping[str, st.SearchStrategy[Any]]', items))
    raise refuse('fields', 'a dict of field names to hypothesis strategies', cast(object, fields))


def _resolve(agentool: str | type[BaseModel], registry: AgenToolRegistry | None) -> _Target:
    if isinstance(agentool, str):
        registry = registry or get_registry()
        manager = registry.get_manager(agentool)
        described = registry.get_operations(agentool) or {}
        requests = {op: about['request_schema'] for op, about in described.items()}
        return _Target(manager.input_schema, manager.operation_field, tuple(manager.operations), manager, requests)
    schema = agentool.model_json_schema()
    enum: list[Any] = schema.get('properties', {}).get('operation', {}).get('enum', [])
    return _Target(agentool, 'operation', tuple(str(value) for value in enum))


def _accepts(target: _Target, text: str) -> bool:
    try:
        if target.manager is None:
            target.schema.model_validate_json(text)
        else:
            target.manager.validate_json(text)
    except (ValidationError, InvalidInputError):
        return False
    return True


def _valid_for(target: _Target, operation: str | None, overrides: _Given) -> st.SearchStrategy[dict[str, Any]]:
    schema = target.schema.model_json_schema()
    if operation is not None and target.request_schemas is not None:
        schema = target.request_schemas[operation]  # the operation's own fields, as it needs them
    fixed = {} if operation is None else {target.operation_field: st.just(operation)}
    drawn = _object(schema, schema.get('$defs', {}), {**overrides, **fixed}, always=fixed)
    return drawn.filter(lambda value: _accepts(target, json.dumps(value)))


def _object(
    schema: Schema, defs: Mapping[str, Schema], given: _Given, always: Collection[str] = ()
) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts of `schema`'s properties, the required ones (and `always`) in each; `given` strategies first."""
    properties: dict[str, Schema] = schema.get('properties', {})
    drawn = {name: given[name] if name in given else _from_schema(value, defs) for name, value in properties.items()}
    must = {*schema.get('required', []), *always}
    return st.fixed_dictionaries(
        {name: value for name, value in drawn.items() if name in must},
        optional={name: value for name, value in drawn.items() if name not in must},
    )


def _from_schema(schema: Schema, defs: Mapping[str, Schema]) -> st.SearchStrategy[Any]:
    if '$ref' in schema:
        return _from_schema(defs[schema['$ref'].rsplit('/', 1)[-1]], defs)
    if 'const' in schema:
        return st.just(schema['const'])
    if 'enum' in schema:
        return st.sampled_from(schema['enum'])
    for key in ('anyOf', 'oneOf'):
        if key in schema:
            return st.one_of([_from_schema(branch, defs) for branch in schema[key]])
    if 'allOf' in schema and len(schema['allOf']) == 1:
        return _from_schema(schema['allOf'][0], defs)
    kind = schema.get('type')
    if isinstance(kind, list):
        return st.one_of([_from_schema({**schema, 'type': k}, defs) for k in cast('list[str]', kind)])
    if kind == 'null':
        return st.none()
    if kind == 'boolean':
        return st.booleans()
    if kind == 'integer':
        low, high = _bound(schema, 'minimum', 'exclusiveMinimum', 1), _bound(schema, 'maximum', 'exclusiveMaximum', -1)
        return st.integers(low, high)
    if kind == 'number':
        return st.floats(
            schema.get('minimum', schema.get('exclusiveMinimum')),
            schema.get('maximum', schema.get('exclusiveMaximum')),
            allow_nan=False,
            allow_infinity=False,
            exclude_min='exclusiveMinimum' in schema,
            exclude_max='exclusiveMaximum' in schema,
        )
    if kind == 'string':
        return _string(schema)
    if kind == 'array':
        if 'prefixItems' in schema:
            return st.tuples(*(_from_schema(item, defs) for item in schema['prefixItems'])).map(list)
        items = _from_schema(schema.get('items', {}), defs)
        low = schema.get('minItems', 0)
        return st.lists(items, min_size=low, max_size=schema.get('maxItems', low + _MAX_ITEMS))
    if kind == 'object' and 'properties' in schema:
        return _object(schema, defs, {})
    if kind == 'object':
        extra: object = schema.get('additionalProperties', {})
        values = _from_schema(cast('Schema', extra), defs) if isinstance(extra, dict) else _json_values()
        return st.dictionaries(st.text(max_size=_MAX_TEXT), values, max_size=_MAX_ITEMS)
    return _json_values()  # no type: any JSON value


def _bound(schema: Schema, inclusive: str, exclusive: str, step: int) -> int | None:
    if inclusive in schema:
        return int(schema[inclusive])
    if exclusive in schema:
        return int(schema[exclusive]) + step
    return None


def _string(schema: Schema) -> st.SearchStrategy[str]:
    low = schema.get('minLength', 0)
    high = schema.get('maxLength', max(low, _MAX_TEXT))
    formats: dict[str, st.SearchStrategy[str]] = {
        'date-time': st.datetimes().map(lambda d: d.isoformat()),
        'date': st.dates().map(lambda d: d.isoformat()),
        'time': st.times().map(lambda t: t.isoformat()),
        'uuid': st.uuids().map(str),
        'email': st.emails(),
    }
    if (made := formats.get(schema.get('format', ''))) is not None:
        return made
    if 'pattern' in schema:
        return st.from_regex(str(schema['pattern'])).filter(lambda s: low <= len(s) <= high)
    return st.text(min_size=low, max_size=high)


def _json_values() -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    leaves |= st.text(max_size=_MAX_TEXT)
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=_MAX_ITEMS) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=8,
    )


def _valid_dicts(
    target: _Target, operations: tuple[str, ...] | None = None, overrides: _Given | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    operations = target.operations if operations is None else operations
    if not operations:  # the operation field takes any string: draw it like any other field
        return _valid_for(target, None, overrides or {})
    return st.one_of([_valid_for(target, op, overrides or {}) for op in operations])


def _not_json(target: _Target) -> st.SearchStrategy[str]:
    def unparseable(text: str) -> bool:
        try:
            json.loads(text)
        except ValueError:
            return True
        return False

    return st.text(max_size=40).filter(unparseable)


def _not_an_object(target: _Target) -> st.SearchStrategy[str]:
    return _json_values().filter(lambda v: not isinstance(v, dict)).map(json.dumps)


def _unknown_operation(target: _Target) -> st.SearchStrategy[str] | None:
    if not target.operations:
        return None
    other = st.text(min_size=1, max_size=_MAX_TEXT).filter(lambda op: op not in target.operations)
    return _with(_valid_dicts(target), st.just(target.operation_field), other)


def _missing_field(target: _Target) -> st.SearchStrategy[str] | None:
    if target.request_schemas is not None and target.operations:
        # Per operation: drop one of the fields that operation requires (its own needs included).
        made = [
            _without(_valid_for(target, op, {}), needed)
            for op in target.operations
            if (needed := [k for k in target.request_schemas[op].get('required', []) if k != target.operation_field])
        ]
        return st.one_of(made) if made else None
    required = sorted(target.schema.model_json_schema().get('required', []))
    return _without(_valid_dicts(target), required) if required else None


def _wrong_type(target: _Target) -> st.SearchStrategy[str]:
    names = sorted(target.schema.model_json_schema().get('properties', {}))
    return _with(_valid_dicts(target), st.sampled_from(names), st.sampled_from(_WRONG_VALUES))


def _unknown_field(target: _Target) -> st.SearchStrategy[str] | None:
    schema = target.schema.model_json_schema()
    if schema.get('additionalProperties') is not False:
        return None  # the schema accepts unknown fields
    known = set(schema.get('properties', {}))
    names = st.text(min_size=1, max_size=_MAX_TEXT).filter(lambda name: name not in known)
    return _with(_valid_dicts(target), names, _json_values())


def _with(
    valid: st.SearchStrategy[dict[str, Any]], names: st.SearchStrategy[str], values: st.SearchStrategy[Any]
) -> st.SearchStrategy[str]:
    """`valid` dicts, as JSON, with a field drawn from `names` set to a value drawn from `values`."""
    return st.tuples(valid, names, values).map(lambda drawn: json.dumps({**drawn[0], drawn[1]: drawn[2]}))


def _without(valid: st.SearchStrategy[dict[str, Any]], names: list[str]) -> st.SearchStrategy[str]:
    pairs = st.tuples(valid, st.sampled_from(names))
    return pairs.map(lambda pair: json.dumps({k: v for k, v in pair[0].items() if k != pair[1]}))


_MAKERS: dict[InvalidKind, Callable[[_Target], st.SearchStrategy[str] | None]] = {
    'not_json': _not_json,
    'not_an_object': _not_an_object,
    'unknown_operation': _unknown_operation,
    'missing_field': _missing_field,
    'wrong_type': _wrong_type,
    'unknown_field': _unknown_field,
}
