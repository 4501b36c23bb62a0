"""How long the deps of a call given none live, decided in one place: `DepsLifetime.supply`.

Every surface that builds an agentool's deps for a caller that gave none ends here (`injector.run`
and `call`, handles, `create_deps`, and through `injected_deps` the toolset, MCP, the manager tool and
the plain model string; dispatch goes through `call`). Three lifetimes:

- **As long as the injector** (the default): one instance per deps type, built on first use from
  handles, field defaults, provided instances and injector-scoped resources, then kept and shared
  by every call, so state a tool keeps there persists.
- **One run**: when a run- or consumer-scoped factory makes the deps or one of their fields, they
  are built in the run's scope, which closes what the factories made when the run ends.
- **None**: no deps type, or deps that cannot be built and whose type admits `None`.

Injector-scoped resources (`provide(T, factory, scope='injector')`) are made once, in this object's
own scope (`injector_scope`), and closed when the injector is cleared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import AgenToolNotFoundError, ConfigurationError, DependencyError, DuplicateNameError, quote
from ..operation import UNSET
from ..request import deps_admit_none, missing_deps_error
from ._deps import DepsPlan, DepsShape, build_deps, compile_deps, deps_shape
from ._resources import Provider, ResourceScope, RunScope, make_provider, type_label
from ._targets import Target
from .handle import AgenToolHandle

__all__ = ('DepsLifetime', 'UNSET')


class DepsLifetime:
    """The providers of one injector, the deps plans made from them, and the deps and resources it keeps.

    Args:
        handle: The injector's handle on an agentool, for `AgenToolHandle` fields.
        require: Raises unless the named dependency of an agentool (first argument) is a registered agentool.
    """

    def __init__(self, *, handle: Callable[[str], AgenToolHandle[Any]], require: Callable[[str, str], None]) -> None:
        self._handle = handle
        self._require = require
        self.providers: dict[Any, Provider] = {}
        self._shapes: dict[Any, DepsShape] = {}
        self._plans: dict[Any, DepsPlan | None] = {}
        self.kept_deps: dict[Any, Any] = {}
        """The deps kept for calls given none, by deps type (read directly on the direct path: one dict read)."""
        self.injector_scope = RunScope()
        """Where injector-scoped factories make their one instance; closed by `clear`/`aclear`."""

    async def supply(self, target: Target, scope: RunScope | None) -> Any:
        """The deps of a call of `target` given none, on every surface: see the module's three lifetimes.

        `scope` is the run's (a new one when `None`, which nobody closes: `create_deps` outside a run).

        Raises:
            MissingDepsError: they cannot be built and the deps type does not admit `None`.
        """
        if (kept := self.kept_deps.get(target.deps_type, UNSET)) is not UNSET:
            return kept
        try:
            plan = self._plan(target)
        except (DependencyError, AgenToolNotFoundError) as error:
            if not deps_admit_none(target.deps_type):
                raise missing_deps_error(target.name, target.deps_type, error) from error
            self._plans[target.deps_type] = None  # until the wiring changes (`provide`, `register`)
            return None
        if plan is None:
            return None
        if plan.per_run:
            return await build_deps(plan, RunScope() if scope is None else scope)
        deps = await build_deps(plan, self.injector_scope)
        # First wins: concurrent first calls built their own, and all of them get the one kept.
        return self.kept_deps.setdefault(target.deps_type, deps)

    def provide(
        self, type_: Any, factory: Callable[..., Any] | None, instance: Any, scope: ResourceScope, *, replace: bool
    ) -> None:
        """Make `factory` (or `instance`) the provider of `type_` (see `AgenToolInjector.provide`)."""
        try:
            hash(type_)
        except TypeError:  # it could never be looked up: refused now, not at the first run
            raise ConfigurationError(
                f'provide() takes a type to provide values of; got {type_!r}', option='type_', value=repr(type_)
            ) from None
        if type_ is None or isinstance(type_, str | bytes | int | float | complex):
            # A type's name (or any plain value) is never a field's annotation: it would never be looked up.
            raise ConfigurationError(
                f'provide() takes a type to provide values of, not {quote(type_)}'
                + (' (pass the class itself, not its name)' if isinstance(type_, str) else ''),
                option='type_',
                value=quote(type_),
            )
        if (factory is None) == (instance is UNSET):
            raise DependencyError(f'provide({type_label(type_)}) takes a factory or an instance (exactly one)')
        if not replace and type_ in self.providers:
            raise DuplicateNameError(
                f'{type_label(type_)} is already provided to the injector; pass replace=True', type=type_label(type_)
            )
        given = None if instance is UNSET else instance
        self.providers[type_] = make_provider(type_, factory, given, scope, home=self.injector_scope)
        # What the old provider made for the injector's life is closed with it, on `clear`; the next use makes anew.
        self.injector_scope.forget(type_)
        self.replan()
        # Kept deps built with what `type_` gave before (or without it) are built anew; the others stay.
        self.forget(lambda shape: shape.deps_type == type_ or any(v.key == type_ for v in shape.values))

    def replan(self) -> None:
        """Drop the plans: the wiring changed (a plan may have been given up for want of what is there now)."""
        self._plans.clear()

    def forget(self, changed: Callable[[DepsShape], bool]) -> None:
        """Drop the kept deps whose shape the wiring just `changed`: the next call builds them anew."""
        for deps_type in [t for t in self.kept_deps if changed(self.shape(t))]:
            del self.kept_deps[deps_type]

    def shape(self, deps_type: Any) -> DepsShape:
        """What `deps_type` asks for, read once."""
        shape = self._shapes.get(deps_type)
        if shape is None:
            shape = self._shapes[deps_type] = deps_shape(deps_type)
        return shape

    def problems(self, name: str, deps_type: Any) -> list[DependencyError]:
        """Every reason the deps of agentool `name` cannot be built (for `validate()`)."""
        found: list[DependencyError] = []
        compile_deps(name, self.shape(deps_type), self.providers, self._handle, found)
        return found

    def async_closers(self) -> list[str]:
        """The types of the injector-scoped resources only an `await` can close (`aclear`, not `clear`)."""
        return self.injector_scope.async_closers()

    def clear(self) -> RunScope:
        """Forget every provider, plan and kept deps; the scope of injector-scoped resources, to be closed."""
        self.providers.clear()
        self._shapes.clear()
        self._plans.clear()
        self.kept_deps.clear()
        scope, self.injector_scope = self.injector_scope, RunScope()
        return scope

    def _plan(self, target: Target) -> DepsPlan | None:
        if not target.needs_deps:
            return None
        plan = self._plans.get(target.deps_type, UNSET)
        if plan is UNSET:
            shape = self.shape(target.deps_type)
            for dependency in shape.handles:  # a handle on a non-agentool is refused now, not at its first use
                self._require(target.name, dependency.agentool)
            plan = self._plans[target.deps_type] = compile_deps(target.name, shape, self.providers, self._handle)
        return plan
