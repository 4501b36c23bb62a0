"""Deps that were not given and cannot be built: `None` when the deps type admits it, else
`MissingDepsError`; one rule for every surface that builds an agentool's deps itself."""

from __future__ import annotations

from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import ConfigDict, TypeAdapter

from ...errors import AgenToolError, AgenToolNotFoundError, MissingDepsError

__all__ = ('declares_deps', 'deps_admit_none', 'missing_deps_error', 'type_label')

_ANY_TYPE = ConfigDict(arbitrary_types_allowed=True)


def type_label(key: Any) -> str:
    return key.__qualname__ if isinstance(key, type) else repr(key).replace('typing.', '')


def declares_deps(deps_type: Any) -> bool:
    """Whether `deps_type` asks for deps: `None`/`NoneType` and pydantic-ai's default `object` do not."""
    return deps_type is not None and deps_type is not NoneType and deps_type is not object


def deps_admit_none(deps_type: Any) -> bool:
    """Whether `None` is a valid value of `deps_type` (`Store | None`, `Optional[Store]`, `Any`)."""
    if deps_type is None or deps_type is NoneType or deps_type is Any or deps_type is object:
        return True
    origin = get_origin(deps_type)
    if origin is Union or origin is UnionType:
        return any(deps_admit_none(member) for member in get_args(deps_type))
    if origin is Annotated:
        return deps_admit_none(get_args(deps_type)[0])
    # pydantic refuses a config for a type that carries its own (models, dataclasses, TypedDicts).
    own_config = hasattr(deps_type, '__pydantic_config__') or hasattr(deps_type, '__dataclass_fields__')
    try:
        TypeAdapter[Any](deps_type, config=None if own_config else _ANY_TYPE).validate_python(None)
    except Exception:  # refused, a type pydantic cannot read, or a validator failing on `None`: not fine
        return False
    return True


def missing_deps_error(name: str, deps_type: Any, cause: Exception) -> MissingDepsError:
    """The error for deps of `name` that were not given and cannot be built, naming what is missing."""
    reason = str(cause.args[0]) if cause.args else type(cause).__name__
    if isinstance(cause, AgenToolNotFoundError):
        reason = f'{name!r} is registered with no injector (define it with create_agentool)'
    label = type_label(deps_type)
    # What the wiring error names (the field and type it could not fill) stays in the details.
    named = (
        {k: v for k, v in cause.details.items() if k in ('field', 'type', 'dependency')}
        if isinstance(cause, AgenToolError)
        else {}
    )
    return MissingDepsError(
        f'agentool {name!r} declares deps_type {label}, no deps were given and the injector cannot build them: '
        f'{reason}. Pass deps=... (agent.run, injector.call, create_mcp_server(deps=...)), or let the injector '
        f'supply them: get_injector().provide({label}, instance=...) for an instance every surface shares, '
        'injector.provide(TYPE, factory) for what is missing',
        agentool=name,
        deps_type=label,
        reason=reason,
        **named,
    )
