"""What value an output spec stands for (`NativeOutput(M)`, `[M, str]`, `ToolOutput(M)` all mean `M`s),
and whether a tool's return annotation can ever give a value an output type accepts (told at creation).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import types
from collections.abc import Mapping, Sequence, Set
from typing import Annotated, Any, Literal, Union, cast, get_args, get_origin, is_typeddict

from pydantic import BaseModel
from pydantic_ai import NativeOutput, PromptedOutput, TextOutput, ToolOutput

from ...errors import ConfigurationError

__all__ = ('can_produce', 'check_output_type', 'output_members', 'output_types', 'output_value_type')

_TYPING_MODULES = frozenset({'typing', 'typing_extensions', 'types'})
"""Where the classes of typing forms live (`Any`, `Literal[...]`, `A | B`, a `TypeVar`, a `NewType`)."""


def output_types(spec: Any) -> list[Any] | None:
    """The plain types `spec` accepts, markers and lists unwrapped; `None` when a member is an output
    function (`TextOutput`, a callable), whose result only pydantic-ai's own output stage can tell."""
    if isinstance(spec, ToolOutput):
        return output_types(cast(Any, spec).output)
    if isinstance(spec, NativeOutput | PromptedOutput):
        return output_types(cast(Any, spec).outputs)
    if isinstance(spec, TextOutput):
        return None
    if isinstance(spec, Sequence) and not isinstance(spec, str):
        found: list[Any] = []
        for item in cast(Sequence[Any], spec):
            types = output_types(item)
            if types is None:
                return None
            found.extend(types)
        return found
    if inspect.isroutine(spec) or isinstance(spec, functools.partial):
        return None  # an output function (a `NewType` or an alias is callable too, but a type)
    return [spec]


def output_members(spec: Any) -> tuple[Any, ...] | None:
    """The types `spec` accepts, unions split (`None` as `NoneType`); `None` with an output function."""
    if (found := output_types(spec)) is None:
        return None
    members: list[Any] = []
    for member in found:
        member = types.NoneType if member is None else member  # `[None, int]` names the type by its value
        origin = get_origin(member)
        members.extend(get_args(member) if origin is Union or origin is types.UnionType else (member,))
    return tuple(members)


def output_value_type(spec: Any) -> Any:
    """One type for the values `spec` accepts (a `Union` of several), or `None` when it cannot be told."""
    types = output_types(spec)
    if types is None:
        return None
    if len(types) == 1:
        return types[0]
    union: Any = Union
    return union[tuple(types)]


def is_output_spec(spec: object) -> bool:
    """Whether `spec` can be an agent's `output_type`, told without building a schema."""
    if spec is None or isinstance(spec, type | ToolOutput | NativeOutput | PromptedOutput | TextOutput):
        return True
    if isinstance(spec, Sequence) and not isinstance(spec, str | bytes):
        items = list(cast('Sequence[object]', spec))
        return bool(items) and all(is_output_spec(item) for item in items)
    if inspect.isroutine(spec) or isinstance(spec, functools.partial):
        return True
    return get_origin(spec) is not None or type(spec).__module__ in _TYPING_MODULES


def check_output_type(output_type: object, *, agentool: str | None = None) -> None:
    if not is_output_spec(output_type):
        raise ConfigurationError(
            'output_type must be a type or typing form pydantic can describe (a class, list[int], A | B, ...), '
            f'a pydantic-ai output spec or None; got {output_type!r}',
            agentool=agentool,
            option='output_type',
            value=repr(output_type),
        )


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
