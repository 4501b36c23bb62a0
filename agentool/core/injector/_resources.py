"""Resources resolved by type: the factories an injector holds, and the run scope that owns what they make.

A factory's own parameters are resolved by their annotated types too, so resources can depend on
resources (a repository on a connection pool on a settings model). Run-scoped resources are made
once per run and shared by every consumer in it; everything a factory made that has `aclose()` or
`close()` is closed, in reverse order, when the run ends. Injector-scoped resources are made once,
on first use, in the injector's own scope (`Provider.home`), and closed when the injector is cleared.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, cast, get_args, get_origin, get_type_hints

import anyio

from ..._bounds import clip
from ...errors import AgenToolError, ConfigurationError, DependencyCycleError, DependencyError, DepsUnavailableError
from ..definition import UNRESOLVABLE
from ..request import type_label

__all__ = (
    'ResourceScope',
    'Slot',
    'Provider',
    'ResourceNode',
    'RunScope',
    'make_provider',
    'compile_resource',
    'resource_problems',
    'is_provided',
    'type_label',
    'strip_annotated',
    'type_hints',
)

logger = logging.getLogger('agentool.injector')

ResourceScope = Literal['run', 'transient', 'injector']
"""`'run'`: one instance per run, shared by every consumer in it. `'transient'`: a new instance for each consumer.
`'injector'`: one instance for as long as the injector, made on first use, closed when the injector is cleared."""

_SCOPES: tuple[ResourceScope, ...] = ('run', 'transient', 'injector')
_POLL_SECONDS = 0.001

_LIVES = {'run': 'for each run', 'transient': 'for each consumer', 'injector': 'once'}


@dataclass(frozen=True, kw_only=True)
class Slot:
    """A deps field or factory parameter: filled by `key` (its annotated type) when provided, else by its default."""

    name: str
    key: Any
    has_default: bool


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
    """Check `factory` once and record which types its parameters are resolved by.

    `home` is the injector's own scope, where an injector-scoped factory's instance lives.
    """
    if scope not in _SCOPES:
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
    """Resolve the providers of `key` and, recursively, of its factory's parameters.

    Raises:
        DependencyCycleError: factories depend on each other in a cycle (`details['path']`).
        DependencyError: a required parameter's type has no provider.
    """
    if key in path:
        cycle = [type_label(k) for k in (*path[path.index(key) :], key)]
        raise DependencyCycleError(f'resource factories form a cycle: {" → ".join(cycle)}', path=cycle)
    provider = providers[key]
    arguments: list[tuple[str, ResourceNode]] = []
    for parameter in provider.parameters:
        if is_provided(parameter.key, providers):
            argument = compile_resource(parameter.key, providers, path=(*path, key))
            shorter = argument.provider.factory is not None and argument.provider.scope != 'injector'
            if provider.scope == 'injector' and shorter:
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
    """Whether a provider is registered for `key` (an annotation that is not a valid key names none)."""
    try:
        return key is not None and key in providers
    except TypeError:  # an unhashable annotation can name no provider
        return False


class RunScope:
    """What one run owns: its run-scoped instances and everything to close when it ends.

    Every run makes one, so creating it costs nothing: its containers are made on first use
    (class-level `None` defaults, no `__init__`). The injector keeps one more for its own life,
    where injector-scoped factories make their instances (`Provider.home`).
    """

    owned: list[Any] | None = None
    """What factories made in this scope that must be closed when it ends; `None` until there is some."""
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
            # Concurrent consumers wait for the first maker instead of making their own. The event is
            # made only when someone waits, so an uncontended make needs no event loop (which is what
            # lets `create_deps` build deps synchronously).
            if provider.key in pending:
                maker, event = pending[provider.key]
                if maker != threading.get_ident():
                    # Made on another thread's event loop (the injector's own scope is shared by every
                    # thread), whose event could not wake this loop: look again shortly.
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
        """Make the next `resolve` of `key` make a new instance; the old one is still closed with the scope."""
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
        """Close what this scope made, newest first, without an event loop (see `async_closers`).

        Every closer runs even if one fails; the first failure is raised, the others noted on it.
        """
        owned, self.owned, self._instances = self.owned or [], None, None
        failures: list[Exception] = []
        for value in reversed(owned):
            closer = _sync_closer(value)
            try:
                if closer is not None:
                    closer()
            except Exception as failure:
                failures.append(failure)
        _raise_first(failures)

    async def aclose(self, error: BaseException | None) -> None:
        """Close what this scope made, newest first; every closer runs even if one fails.

        With `error` (the run failed), cleanup failures are logged and noted on `error`, which the
        caller re-raises. Without one, the first cleanup failure is raised.
        """
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
        if error is None:
            _raise_first(failures)
            return
        for failure in failures:
            logger.error('closing a resource failed', exc_info=failure)
            error.add_note(f'closing a resource also failed: {type(failure).__name__}: {failure}')


def _sync_closer(value: Any) -> Callable[[], Any] | None:
    """`value.close`, when it closes without an await (`aclose()` only, or an async `close()`: `None`)."""
    close = getattr(value, 'close', None)
    if not callable(close) or inspect.iscoroutinefunction(close):
        return None
    aclose = getattr(value, 'aclose', None)
    if callable(aclose) and inspect.iscoroutinefunction(aclose) and not hasattr(value, '__exit__'):
        return None  # an async resource whose `close()` only starts closing: `aclose()` is its closer
    return cast('Callable[[], Any]', close)


def _raise_first(failures: list[Exception]) -> None:
    if not failures:
        return
    carrier = failures[0]
    for failure in failures[1:]:
        logger.error('closing a resource failed', exc_info=failure)
        carrier.add_note(f'closing a resource also failed: {type(failure).__name__}: {failure}')
    raise carrier
