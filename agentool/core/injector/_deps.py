"""Typed deps: reading a `deps_type` once, and building an instance of it for a run.

A `deps_type` is filled field by field: `AgenToolHandle` fields get a handle on the agentool they
name, fields whose type a factory provides get that resource, fields with a default keep it. When
a factory provides the `deps_type` itself, that factory makes the whole object.

An injector subclass overriding `create_deps` or `acreate_deps` builds deps itself instead
(`own_deps_form` tells which), and may build on the wiring's through `super()`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, cast, get_args, get_origin

from pydantic import BaseModel

from ...errors import DependencyError, DepsUnavailableError
from ..request import declares_deps
from ._resources import (
    Provider,
    ResourceNode,
    RunScope,
    Slot,
    compile_resource,
    is_provided,
    strip_annotated,
    type_hints,
    type_label,
)
from .handle import AgenToolHandle, Uses

__all__ = (
    'HandleField',
    'DepsShape',
    'DepsPlan',
    'deps_shape',
    'compile_deps',
    'build_deps',
    'run_without_loop',
    'OwnDeps',
    'own_deps_form',
)

_T = TypeVar('_T')


@dataclass(frozen=True, kw_only=True)
class HandleField:
    """A field filled with a handle on agentool `agentool`; `output_type` is the declared type argument."""

    field: str
    agentool: str
    output_type: Any


@dataclass(frozen=True, kw_only=True)
class DepsShape:
    """What a `deps_type` asks for, independent of which factories exist."""

    deps_type: Any
    kind: Literal['none', 'fields', 'opaque']
    """No deps; a dataclass or pydantic model filled field by field; or a type only a factory can make."""
    handles: tuple[HandleField, ...] = ()
    values: tuple[Slot, ...] = ()
    """The other fields: filled by type from a provider, or left to their defaults."""
    unreadable: str | None = None
    """Why the fields' type hints could not be read, when they could not."""


@dataclass(frozen=True, kw_only=True)
class DepsPlan:
    """How to build one `deps_type`: resolved providers, nothing left to look up."""

    whole: ResourceNode | None = None
    """The provider that makes the whole deps object, when one provides the `deps_type` itself."""
    handles: dict[str, AgenToolHandle[Any]] = dataclasses.field(default_factory=dict[str, 'AgenToolHandle[Any]'])
    """The handle fields, made once: a handle is a name and an injector, the same for every run."""
    resources: tuple[tuple[str, ResourceNode], ...] = ()
    construct: Callable[..., Any] | None = None
    per_run: bool = False
    """A run- or consumer-scoped factory makes them or one of their fields: built for each run, which closes
    what it made.

    Otherwise (handles, field defaults, provided instances, injector-scoped resources) the injector keeps
    the one instance it built and passes it to every call given no deps, so state a tool keeps persists.
    """


def deps_shape(deps_type: Any) -> DepsShape:
    """Read the fields of `deps_type` (a dataclass or pydantic model) and what each asks for."""
    if not declares_deps(deps_type):
        return DepsShape(deps_type=deps_type, kind='none')
    if (inner := _unwrap_optional(deps_type)) is not deps_type:
        return deps_shape(inner)  # `X | None`: built as an `X` when it can be, else `None` (which it admits)
    if isinstance(deps_type, type) and issubclass(deps_type, BaseModel):
        defaults = {name: not info.is_required() for name, info in deps_type.model_fields.items()}
    elif isinstance(deps_type, type) and dataclasses.is_dataclass(deps_type):
        defaults = {
            f.name: f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            for f in dataclasses.fields(deps_type)
            if f.init
        }
    else:
        return DepsShape(deps_type=deps_type, kind='opaque')
    hints = type_hints(deps_type)
    if hints is None:
        return DepsShape(deps_type=deps_type, kind='fields', unreadable='its type hints cannot be resolved')
    handles: list[HandleField] = []
    values: list[Slot] = []
    for name, has_default in defaults.items():
        hint = hints.get(name)
        if (handle := _handle_field(name, hint)) is not None:
            handles.append(handle)
        else:
            values.append(Slot(name=name, key=_unwrap_optional(strip_annotated(hint)), has_default=has_default))
    return DepsShape(deps_type=deps_type, kind='fields', handles=tuple(handles), values=tuple(values))


def _unwrap_optional(hint: Any) -> Any:
    """`X` for `X | None` (a field that takes the resource when one is provided), else `hint`."""
    if get_origin(hint) in (Union, UnionType):
        members = [arg for arg in get_args(hint) if arg is not NoneType]
        if len(members) == 1:
            return members[0]
    return hint


def _handle_field(name: str, hint: Any) -> HandleField | None:
    target = name
    if get_origin(hint) is Annotated:
        hint, *metadata = get_args(hint)
        target = next((m.name for m in metadata if isinstance(m, Uses)), name)
    if hint is AgenToolHandle:
        return HandleField(field=name, agentool=target, output_type=Any)
    if get_origin(hint) is AgenToolHandle:
        return HandleField(field=name, agentool=target, output_type=get_args(hint)[0])
    return None


def compile_deps(
    owner: str,
    shape: DepsShape,
    providers: dict[Any, Provider],
    handle: Callable[[str], AgenToolHandle[Any]],
    problems: list[DependencyError] | None = None,
) -> DepsPlan | None:
    """The plan that builds `shape.deps_type` for agentool `owner`; `None` when it has no deps.

    Raises the first problem found, or, with a `problems` list, appends every problem to it.
    """
    found: list[DependencyError] = [] if problems is None else problems
    before = len(found)
    plan = _compile(owner, shape, providers, handle, found)
    if problems is None and found:
        raise found[0]
    return None if len(found) > before else plan


def _compile(
    owner: str,
    shape: DepsShape,
    providers: dict[Any, Provider],
    handle: Callable[[str], AgenToolHandle[Any]],
    found: list[DependencyError],
) -> Any:
    deps_type = shape.deps_type
    if is_provided(deps_type, providers):
        whole = _node(owner, deps_type, providers, found, field=None)
        return DepsPlan(whole=whole, per_run=whole is not None and _per_run(whole))
    if shape.kind == 'none':
        return None
    label = type_label(deps_type)
    if shape.kind == 'opaque':
        found.append(
            DependencyError(
                f'agentool {owner!r}: deps_type {label} is neither a dataclass nor a pydantic model and no '
                'factory provides it; provide it with injector.provide() or pass deps= explicitly',
                agentool=owner,
                type=label,
            )
        )
        return None
    if shape.unreadable:
        found.append(
            DependencyError(f'agentool {owner!r}: deps_type {label}: {shape.unreadable}', agentool=owner, type=label)
        )
        return None
    resources: list[tuple[str, ResourceNode]] = []
    for value in shape.values:
        if is_provided(value.key, providers):
            if (node := _node(owner, value.key, providers, found, field=value.name)) is not None:
                resources.append((value.name, node))
        elif not value.has_default:
            wanted = 'has no type annotation' if value.key is None else f'needs {type_label(value.key)}'
            found.append(
                DependencyError(
                    f'agentool {owner!r}: field {value.name!r} of deps_type {label} {wanted}, which no factory '
                    'provides; provide it with injector.provide() or give the field a default',
                    agentool=owner,
                    field=value.name,
                    type=None if value.key is None else type_label(value.key),
                )
            )
    # model_construct keeps identities: a run-scoped resource must be the same object everywhere in the run.
    construct: Callable[..., Any] = deps_type.model_construct if issubclass(deps_type, BaseModel) else deps_type
    handles = {h.field: handle(h.agentool) for h in shape.handles}
    per_run = any(_per_run(node) for _, node in resources)
    return DepsPlan(handles=handles, resources=tuple(resources), construct=construct, per_run=per_run)


def _per_run(node: ResourceNode) -> bool:
    """Whether `node`'s value is made for each run (or consumer), not provided or made once for the injector."""
    return node.provider.factory is not None and node.provider.scope != 'injector'


def _node(
    owner: str, key: Any, providers: dict[Any, Provider], found: list[DependencyError], *, field: str | None
) -> ResourceNode | None:
    try:
        return compile_resource(key, providers)
    except DependencyError as error:
        where = f'field {field!r}' if field else 'deps_type'
        found.append(
            type(error)(f'agentool {owner!r}, {where}: {error.message}', agentool=owner, field=field, **error.details)
        )
        return None


def run_without_loop(coroutine: Coroutine[Any, Any, _T], agentool: str) -> _T:
    """Drive `coroutine` to its end with no event loop: deps whose making never waits build synchronously.

    Raises:
        DepsUnavailableError: the coroutine needs an event loop (a resource factory awaits I/O).
    """
    try:
        while coroutine.send(None) is None:  # a bare yield (`asyncio.sleep(0)`) needs no loop
            pass
    except StopIteration as done:
        return cast('_T', done.value)
    except (RuntimeError, DepsUnavailableError) as error:
        # A factory's own failure comes wrapped (`RunScope`): its cause says whether it wanted a loop.
        cause: BaseException | None = error.__cause__ if isinstance(error, DepsUnavailableError) else error
        if not isinstance(cause, RuntimeError) or not _needs_loop(cause):
            raise
    else:
        coroutine.close()
        cause = None
    raise DepsUnavailableError(
        f'the deps of agentool {agentool!r} need an event loop (a resource factory awaits I/O); '
        f'use `await injector.acreate_deps({agentool!r})`',
        agentool=agentool,
    ) from cause


def _needs_loop(error: RuntimeError) -> bool:
    return 'event loop' in str(error) or type(error).__name__ == 'AsyncLibraryNotFoundError'


async def build_deps(plan: DepsPlan, scope: RunScope) -> Any:
    """An instance of the planned deps type, its resources taken from (or made in) `scope`."""
    if plan.whole is not None or plan.resources:
        if plan.whole is not None:
            return await scope.resolve(plan.whole)
        kwargs = dict(plan.handles)
        for field, node in plan.resources:
            kwargs[field] = await scope.resolve(node)
    else:
        kwargs = plan.handles
    assert plan.construct is not None
    return plan.construct(**kwargs)


# --- deps an injector subclass builds itself ------------------------------------------------------

OwnDeps = Literal['create_deps', 'acreate_deps', 'both']
"""Which of the deps builders an injector subclass overrides (the guide's `CustomInjector`)."""


def own_deps_form(cls: type[Any], base: type[Any]) -> OwnDeps | None:
    """Which of `base`'s deps builders `cls` overrides: `create_deps`, `acreate_deps`, both, or neither (`None`)."""
    sync, async_ = cls.create_deps is not base.create_deps, cls.acreate_deps is not base.acreate_deps
    return ('both' if sync else 'acreate_deps') if async_ else 'create_deps' if sync else None
