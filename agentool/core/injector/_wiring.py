"""Typed deps and the resources they are built from: read a `deps_type` once, plan it, build it.

What factories made is closed, newest first, with its scope: the run's, or the injector's.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

import anyio
from pydantic import BaseModel

from ..._bounds import clip
from ...errors import AgenToolError, ConfigurationError, DependencyCycleError, DependencyError, DepsUnavailableError
from ..definition import UNRESOLVABLE
from ..request import declares_deps, type_label
from .handle import AgenToolHandle, Uses

logger = logging.getLogger('agentool.injector')

ResourceScope = Literal['run', 'transient', 'injector']
"""One instance per run, one per consumer, or one for as long as the injector (closed by `clear`)."""

_POLL_SECONDS = 0.001
_LIVES = {'run': 'for each run', 'transient': 'for each consumer', 'injector': 'once'}


@dataclass(frozen=True, kw_only=True)
class Slot:
    """A deps field or factory parameter: filled by `key` (its annotated type) when provided, else by its default."""

    name: str
    key: Any
    has_default: bool = False


@dataclass(frozen=True, kw_only=True)
class Provider:
    """How the injector gets a value of type `key`: a factory to call, or a fixed instance."""

    key: Any
    factory: Callable[..., Any] | None
    instance: Any = None
    scope: ResourceScope = 'run'
    parameters: tuple[Slot, ...] = ()
    home: RunScope | None = field(default=None, compare=False, repr=False)
    """Where an injector-scoped factory's one instance lives (the injector's own scope); `None` otherwise."""


@dataclass(frozen=True)
class ResourceNode:
    """A provider with its parameters' providers resolved: a plan with no lookups left."""

    provider: Provider
    arguments: tuple[tuple[str, ResourceNode], ...]


def strip_annotated(hint: Any) -> Any:
    """`X` for `Annotated[X, ...]`, else `hint` itself."""
    return get_args(hint)[0] if get_origin(hint) is Annotated else hint


def type_hints(obj: Any) -> dict[str, Any] | None:
    """`obj`'s type hints with `Annotated` kept, or `None` when they cannot be resolved."""
    try:
        return get_type_hints(obj, include_extras=True)
    except UNRESOLVABLE:  # unresolvable forward references; the caller reports what it needed
        return None


def make_provider(
    key: Any, factory: Callable[..., Any] | None, instance: Any, scope: ResourceScope, *, home: RunScope
) -> Provider:
    """Check `factory` once and record which types its parameters are resolved by."""
    if scope not in _LIVES:
        raise ConfigurationError(
            f"resource scope must be 'run', 'transient' or 'injector', got {scope!r}", scope=repr(scope)
        )
    if factory is None:
        return Provider(key=key, factory=None, instance=instance, scope=scope)
    if not callable(factory):
        raise ConfigurationError(
            f'the factory for {type_label(key)} must be callable, got {type(factory).__name__}', type=type_label(key)
        )
    parameters = _parameters(key, factory)
    return Provider(
        key=key, factory=factory, scope=scope, parameters=parameters, home=home if scope == 'injector' else None
    )


def _parameters(key: Any, factory: Callable[..., Any]) -> tuple[Slot, ...]:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # some builtins have no signature: called with no arguments
        return ()
    hints = (type_hints(factory.__init__) if isinstance(factory, type) else type_hints(factory)) or {}
    parameters: list[Slot] = []
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        has_default = parameter.default is not parameter.empty
        if parameter.kind is parameter.POSITIONAL_ONLY and not has_default:
            raise ConfigurationError(
                f'the factory for {type_label(key)} has positional-only parameter {parameter.name!r}; '
                'the injector passes parameters by name',
                type=type_label(key),
                parameter=parameter.name,
            )
        if parameter.kind is not parameter.POSITIONAL_ONLY:
            hint = strip_annotated(hints.get(parameter.name))
            parameters.append(Slot(name=parameter.name, key=hint, has_default=has_default))
    return tuple(parameters)


def compile_resource(key: Any, providers: dict[Any, Provider], *, path: tuple[Any, ...] = ()) -> ResourceNode:
    """Resolve the providers of `key` and, recursively, of its factory's parameters (else a
    `DependencyError`: a parameter nothing provides, or a `DependencyCycleError`)."""
    if key in path:
        cycle = [type_label(k) for k in (*path[path.index(key) :], key)]
        raise DependencyCycleError(f'resource factories form a cycle: {" → ".join(cycle)}', path=cycle)
    provider = providers[key]
    arguments: list[tuple[str, ResourceNode]] = []
    for parameter in provider.parameters:
        if is_provided(parameter.key, providers):
            argument = compile_resource(parameter.key, providers, path=(*path, key))
            if provider.scope == 'injector' and _per_run(argument):
                # Made once for the injector's life, it would keep a value its own scope closes after one run.
                raise DependencyError(
                    f'the factory for {type_label(key)} lives as long as the injector, but its parameter '
                    f'{parameter.name!r} takes {type_label(parameter.key)}, which is made '
                    f"{_LIVES[argument.provider.scope]}; provide {type_label(parameter.key)} with scope='injector' "
                    'or as an instance',
                    type=type_label(key),
                    parameter=parameter.name,
                    needs=type_label(parameter.key),
                )
            arguments.append((parameter.name, argument))
        elif not parameter.has_default:
            wanted = 'has no type annotation' if parameter.key is None else f'needs {type_label(parameter.key)}'
            raise DependencyError(
                f'the factory for {type_label(key)}: parameter {parameter.name!r} {wanted}, which no factory '
                'provides; provide it or give the parameter a default',
                type=type_label(key),
                parameter=parameter.name,
                needs=None if parameter.key is None else type_label(parameter.key),
            )
    return ResourceNode(provider, tuple(arguments))


def resource_problems(providers: dict[Any, Provider]) -> list[DependencyError]:
    """Every provider that cannot be built, each cycle reported once (from whichever member is met first)."""
    problems: list[DependencyError] = []
    cycles: set[frozenset[str]] = set()
    for key in providers:
        try:
            compile_resource(key, providers)
        except DependencyCycleError as error:
            if (members := frozenset(error.details['path'])) not in cycles:
                cycles.add(members)
                problems.append(error)
        except DependencyError as error:
            problems.append(error)
    return problems


def is_provided(key: Any, providers: dict[Any, Provider]) -> bool:
    try:
        return key is not None and key in providers
    except TypeError:  # an unhashable annotation can name no provider
        return False


class RunScope:
    """What one run (or the injector) owns: its instances and what to close when it ends."""

    owned: list[Any] | None = None
    _instances: dict[Any, Any] | None = None
    _pending: dict[Any, tuple[int, anyio.Event | None]] | None = None
    """What is being made, by key: the making thread, and the event its waiters on that thread wait for."""

    async def resolve(self, node: ResourceNode) -> Any:
        """The value of `node`'s type in this run: the shared instance, made on first use."""
        provider = node.provider
        if provider.factory is None:
            return provider.instance
        if provider.scope == 'transient':
            return await self._make(node)
        scope = self if provider.home is None else provider.home
        if scope._instances is None:
            scope._instances, scope._pending = {}, {}
        instances, pending = scope._instances, scope._pending
        assert pending is not None
        while provider.key not in instances:
            # Concurrent consumers wait for the first maker. The event is made only when someone waits,
            # so an uncontended make needs no event loop (`create_deps` builds synchronously).
            if provider.key in pending:
                maker, event = pending[provider.key]
                if maker != threading.get_ident():
                    # Made on another thread's event loop, whose event could not wake this one: poll.
                    await anyio.sleep(_POLL_SECONDS)
                    continue
                if event is None:
                    event = anyio.Event()
                    pending[provider.key] = (maker, event)
                await event.wait()
                continue
            pending[provider.key] = (threading.get_ident(), None)
            try:
                instances[provider.key] = await scope._make(node)
            finally:
                if (event := pending.pop(provider.key)[1]) is not None:
                    event.set()
        return instances[provider.key]

    def forget(self, key: Any) -> None:
        """Make the next `resolve` of `key` make a new instance (the old one still closes with the scope)."""
        if self._instances is not None:
            self._instances.pop(key, None)

    async def _make(self, node: ResourceNode) -> Any:
        kwargs = {name: await self.resolve(child) for name, child in node.arguments}
        factory = node.provider.factory
        assert factory is not None
        try:
            value = factory(**kwargs)
            if inspect.isawaitable(value):
                value = await value
        except AgenToolError:
            raise  # already typed (the factory called an agentool, or built deps that could not be had)
        except Exception as error:
            label = type_label(node.provider.key)
            raise DepsUnavailableError(
                f'the factory for {label} raised {type(error).__name__}: {clip(str(error))}',
                type=label,
                error=type(error).__name__,
            ) from error
        if callable(getattr(value, 'aclose', None)) or callable(getattr(value, 'close', None)):
            if self.owned is None:
                self.owned = []
            self.owned.append(value)
        return value

    def async_closers(self) -> list[str]:
        """The types of what this scope made that only an `await` can close (an async `aclose()` or `close()`)."""
        return [type(value).__qualname__ for value in self.owned or () if _sync_closer(value) is None]

    def close(self) -> None:
        """`aclose`, without an event loop."""
        owned, self.owned, self._instances = self.owned or [], None, None
        failures: list[Exception] = []
        for value in reversed(owned):
            closer = _sync_closer(value)
            try:
                if closer is not None:
                    closer()
            except Exception as failure:
                failures.append(failure)
        _settle(failures, None)

    async def aclose(self, error: BaseException | None) -> None:
        """Close what this scope made, newest first, every closer running (failures: `_settle`)."""
        owned, self.owned, self._instances = self.owned or [], None, None
        failures: list[Exception] = []
        with anyio.CancelScope(shield=True):  # cleanup must finish even when the run was cancelled
            for value in reversed(owned):
                try:
                    closer = getattr(value, 'aclose', None)
                    result = closer() if callable(closer) else value.close()
                    if inspect.isawaitable(result):
                        await result
                except Exception as failure:
                    failures.append(failure)
        _settle(failures, error)


def _sync_closer(value: Any) -> Callable[[], Any] | None:
    """`value.close`, when it closes without an await (`aclose()` only, or an async `close()`: `None`)."""
    close = getattr(value, 'close', None)
    if not callable(close) or inspect.iscoroutinefunction(close):
        return None
    aclose = getattr(value, 'aclose', None)
    if callable(aclose) and inspect.iscoroutinefunction(aclose) and not hasattr(value, '__exit__'):
        return None  # an async resource whose `close()` only starts closing: `aclose()` is its closer
    return cast('Callable[[], Any]', close)


def _settle(failures: list[Exception], error: BaseException | None) -> None:
    """Log the cleanup `failures` and note them on the run's `error`; without one, raise the first."""
    if not failures:
        return
    carrier = failures.pop(0) if error is None else error
    for failure in failures:
        logger.error('closing a resource failed', exc_info=failure)
        carrier.add_note(f'closing a resource also failed: {type(failure).__name__}: {failure}')
    if error is None:
        raise carrier


_T = TypeVar('_T')


@dataclass(frozen=True, kw_only=True)
class HandleField(Slot):
    """A field filled with a handle on agentool `agentool`; `key` is its declared output type."""

    agentool: str


@dataclass(frozen=True, kw_only=True)
class DepsShape:
    """What a `deps_type` asks for, whatever factories exist."""

    deps_type: Any
    kind: Literal['none', 'fields', 'opaque']
    """`opaque`: neither a dataclass nor a pydantic model; only a factory can make it."""
    handles: tuple[HandleField, ...] = ()
    values: tuple[Slot, ...] = ()
    problem: str | None = None


@dataclass(frozen=True, kw_only=True)
class DepsPlan:
    """How to build one `deps_type`: resolved providers, nothing left to look up."""

    whole: ResourceNode | None = None
    handles: dict[str, AgenToolHandle[Any]] = field(default_factory=dict[str, 'AgenToolHandle[Any]'])
    resources: tuple[tuple[str, ResourceNode], ...] = ()
    construct: Callable[..., Any] | None = None
    per_run: bool = False
    """A run- or consumer-scoped factory makes part of them: built per run, else kept by the injector."""


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
        problem = (
            'is neither a dataclass nor a pydantic model and no factory provides it; provide it with '
            'injector.provide() or pass deps= explicitly'
        )
        return DepsShape(deps_type=deps_type, kind='opaque', problem=problem)
    hints = type_hints(deps_type)
    if hints is None:
        return DepsShape(deps_type=deps_type, kind='fields', problem='has type hints that cannot be resolved')
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
        return HandleField(name=name, agentool=target, key=Any)
    if get_origin(hint) is AgenToolHandle:
        return HandleField(name=name, agentool=target, key=get_args(hint)[0])
    return None


def compile_deps(
    owner: str,
    shape: DepsShape,
    providers: dict[Any, Provider],
    handle: Callable[[str], AgenToolHandle[Any]],
    found: list[DependencyError],
) -> DepsPlan | None:
    """The plan that builds `shape.deps_type` for `owner`; `None` without deps or with problems (in `found`)."""
    deps_type = shape.deps_type
    if is_provided(deps_type, providers):
        whole = _node(owner, deps_type, providers, found, field=None)
        return None if whole is None else DepsPlan(whole=whole, per_run=_per_run(whole))
    if shape.kind == 'none':
        return None
    label = type_label(deps_type)
    if shape.problem:
        found.append(
            DependencyError(f'agentool {owner!r}: deps_type {label} {shape.problem}', agentool=owner, type=label)
        )
        return None
    before = len(found)
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
    if len(found) > before:
        return None
    # model_construct keeps identities: a run-scoped resource must be the same object everywhere in the run.
    construct: Callable[..., Any] = deps_type.model_construct if issubclass(deps_type, BaseModel) else deps_type
    handles = {h.name: handle(h.agentool) for h in shape.handles}
    per_run = any(_per_run(node) for _, node in resources)
    return DepsPlan(handles=handles, resources=tuple(resources), construct=construct, per_run=per_run)


def _per_run(node: ResourceNode) -> bool:
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
    """Drive `coroutine` to its end with no event loop; `DepsUnavailableError` when it needs one."""
    try:
        while coroutine.send(None) is None:  # a bare yield (`asyncio.sleep(0)`) needs no loop
            pass
    except StopIteration as done:
        return cast('_T', done.value)
    except (RuntimeError, DepsUnavailableError) as error:
        # A factory's own failure comes wrapped (`RunScope`): its cause says whether it wanted a loop.
        cause: BaseException | None = error.__cause__ if isinstance(error, DepsUnavailableError) else error
        if not isinstance(cause, RuntimeError) or not (
            'event loop' in str(cause) or type(cause).__name__ == 'AsyncLibraryNotFoundError'
        ):
            raise
    else:
        coroutine.close()
        cause = None
    raise DepsUnavailableError(
        f'the deps of agentool {agentool!r} need an event loop (a resource factory awaits I/O); '
        f'use `await injector.acreate_deps({agentool!r})`',
        agentool=agentool,
    ) from cause


async def build_deps(plan: DepsPlan, scope: RunScope) -> Any:
    """An instance of the planned deps type, its resources taken from (or made in) `scope`."""
    if plan.whole is not None:
        return await scope.resolve(plan.whole)
    kwargs = dict(plan.handles)
    for name, node in plan.resources:
        kwargs[name] = await scope.resolve(node)
    assert plan.construct is not None
    return plan.construct(**kwargs)
