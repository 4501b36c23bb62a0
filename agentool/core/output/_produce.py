"""Whether a tool's return annotation can ever give a value an output type accepts, told at creation.

The manager validates a tool's result into the output type (pydantic, lax), so much converts: a
`dict` becomes a model, `'5'` an `int`. Only what can never convert is refused: a tool that
returns `int` under an output type `Plan` fails every call, and is better found by
`create_agentool` than inside a durable run. Anything not clearly known (`Any`, a `TypeVar`, a
`Protocol`, a generic of unknown shape) can produce anything.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Mapping, Sequence, Set
from typing import Annotated, Any, Literal, Union, cast, get_args, get_origin, is_typeddict

from pydantic import BaseModel

__all__ = ('can_produce',)

_Kind = Literal['model', 'mapping', 'sequence', 'number', 'bool', 'text', 'none']

_ACCEPTS: dict[_Kind, frozenset[_Kind]] = {
    'model': frozenset({'model', 'mapping'}),
    'mapping': frozenset({'mapping', 'model'}),
    'sequence': frozenset({'sequence'}),
    'number': frozenset({'number', 'bool', 'text'}),
    'bool': frozenset({'bool', 'number', 'text'}),
    'text': frozenset({'text', 'number'}),  # a str enum, bytes; a number only where an enum or Literal asks
    'none': frozenset({'none'}),
}
"""For each kind of output type, the kinds of returned value lax validation may turn into it."""


def can_produce(returned: Any, wanted: Any) -> bool:
    """Whether some value of type `returned` could validate as `wanted` (`True` when unsure)."""
    produced = _members(returned)
    accepted = _members(wanted)
    if produced is None or accepted is None:
        return True
    return any(kind in _ACCEPTS[target] for kind in produced for target in accepted)


def _members(annotation: Any) -> set[_Kind] | None:
    """The kinds of value `annotation` stands for; `None` when one of them cannot be told."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _members(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        kinds: set[_Kind] = set()
        for member in get_args(annotation):
            found = _members(member)
            if found is None:
                return None
            kinds |= found
        return kinds
    if origin is Literal:
        return {_literal_kind(value) for value in get_args(annotation)}
    kind = _kind(origin if origin is not None else annotation)
    return None if kind is None else {kind}


def _literal_kind(value: object) -> _Kind:
    if value is None:
        return 'none'
    if isinstance(value, bool):
        return 'bool'
    return 'number' if isinstance(value, int | float) else 'text'


def _kind(annotation: Any) -> _Kind | None:
    if annotation is None or annotation is types.NoneType:
        return 'none'
    if not isinstance(annotation, type):
        return None
    cls = cast('type[object]', annotation)
    if issubclass(cls, enum.Enum):
        return 'text' if issubclass(cls, str) else None  # an int enum or a plain one: left to run time
    if issubclass(cls, bool):
        return 'bool'
    if issubclass(cls, int | float):
        return 'number'
    if issubclass(cls, str | bytes):
        return 'text'
    if issubclass(cls, BaseModel) or dataclasses.is_dataclass(cls) or is_typeddict(cls):
        return 'model'
    if issubclass(cls, Mapping):
        return 'mapping'
    if issubclass(cls, Sequence | Set):
        return 'sequence'
    return None
