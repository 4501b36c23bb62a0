"""What an injector holds and checks: agents by name, resource providers, deps plans, the graph.

`AgenToolInjector` (in `_injector`) adds running on top: overrides, `run`, `call` and run scopes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic_ai.agent import AbstractAgent

from ..._options import check_flag, check_instance, check_name
from ...errors import AgenToolNotFoundError, ConfigurationError, DependencyError, DuplicateNameError
from .._lookup import not_found
from ..registry import AgenToolConfig, AgenToolRegistry
from ._deps import DepsPlan, DepsShape, build_deps, build_kept, compile_deps, deps_shape
from ._graph import check_new_edges, graph_problems, missing_dependency, not_an_agentool, raise_problems
from ._missing import admits_none, missing_deps_error
from ._resources import Provider, ResourceScope, RunScope, make_provider, resource_problems, type_label
from ._targets import Target, agent_target
from .handle import AgenToolHandle

if TYPE_CHECKING:
    from ._injector import AgenToolInjector

__all__ = ('Wiring', 'UNSET')

T = TypeVar('T')
UNSET: Any = object()


class Wiring:
    """The registration and checking half of `AgenToolInjector` (its only subclass)."""

    def __init__(self, *, registry: AgenToolRegistry | None = None) -> None:
        check_instance('registry', registry, AgenToolRegistry, optional=True)
        self.registry = registry
        self._targets: dict[str, Target] = {}
        self._providers: dict[Any, Provider] = {}
        self._shapes: dict[Any, DepsShape] = {}
        self._plans: dict[Any, DepsPlan | None] = {}
        # The deps this injector built for calls given none, by deps type (see `DepsPlan.per_run`):
        # one instance per type, kept as long as the injector, so state a tool keeps there persists.
        self._kept: dict[Any, Any] = {}
        self._handles: dict[str, AgenToolHandle[Any]] = {}

    # --- agents --------------------------------------------------------------------------------

    def register(self, name: str, agent: AbstractAgent[Any, Any], *, replace: bool = False) -> None:
        """Register `agent` under `name` (`create_agentool` does this for every agentool it creates).

        Raises:
            DuplicateNameError: `name` is taken and `replace` is false.
            DependencyError: an agentool depends on `name` but `agent` is not an agentool, or the
                agent's own dependencies name a non-agentool.
            DependencyCycleError: the agent's dependencies close a cycle (`details['path']`).
            ConfigurationError: `name` is not a non-empty string, or `agent` is not a pydantic-ai agent.
        """
        check_name(name)  # first: a name that is not a string would break every later listing and lookup
        check_instance('agent', agent, AbstractAgent, agentool=name)
        check_flag('replace', replace)
        if not replace and name in self._targets:
            raise DuplicateNameError(
                f'an agent named {name!r} is already registered with the injector; pass replace=True', agentool=name
            )
        target = agent_target(name, agent, registry=self.registry)
        if target.manager is not None:
            self._check_edges(name, self._edges_of(target))
        elif dependents := sorted(n for n, t in self._targets.items() if n != name and name in self._edges_of(t)):
            raise DependencyError(
                f'agentool {dependents[0]!r} depends on {name!r}, but the agent registered as {name!r} is not an '
                'agentool; dependencies must name agentools',
                agentool=dependents[0],
                dependency=name,
            )
        self._targets[name] = target
        self._plans.clear()  # a plan may have been given up for want of this agentool (see `_supply`)

    def check_dependencies(self, name: str, config: AgenToolConfig) -> None:
        """Raise the dependency error registering agentool `name` with `config` would cause, if any.

        Dependencies not registered yet are allowed here (they may come later); `validate()` and the
        first run report them.
        """
        self._check_edges(name, [*config.dependencies, *(h.agentool for h in self._shape(config.deps_type).handles)])

    def unregister(self, name: str) -> None:
        """Forget the agent registered under `name`."""
        if name not in self._targets:
            raise not_found(name, self._targets, kind='agent', place='with the injector')
        del self._targets[name]
        self._plans.clear()
        self._forget_kept(lambda shape: any(h.agentool == name for h in shape.handles))  # their handles dangle

    def list_names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._targets)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._targets

    def handle(self, name: str) -> AgenToolHandle[Any]:
        """A handle on agentool `name` through this injector; overrides apply when it is called.

        Raises:
            ConfigurationError: `name` is not a non-empty string.
        """
        handle = self._handles.get(name) if isinstance(name, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
        if handle is None:
            check_name(name)
            handle = self._handles[name] = AgenToolHandle(name, cast('AgenToolInjector', self))
        return handle

    # --- resources -----------------------------------------------------------------------------

    def provide(
        self,
        type_: type[T],
        factory: Callable[..., Any] | None = None,
        *,
        instance: Any = UNSET,
        scope: ResourceScope = 'run',
        replace: bool = False,
    ) -> None:
        """Provide values of `type_` to deps fields and factory parameters annotated with it.

        Give a `factory` (sync or async; its parameters are themselves resolved by type) or a ready
        `instance` (shared, never closed: the caller owns it). With `scope='run'` a factory makes one
        instance per run, shared by every consumer in it; with `'transient'`, one per consumer.
        What a factory made is closed (`aclose()` or `close()`) when the run ends.

        Deps a call given none gets live as long as this injector (one instance per deps type, shared
        by every surface) unless a factory makes them or one of their fields: those are built per run.
        `provide(DepsType, instance=deps)` makes `deps` the instance every surface gets;
        `provide(DepsType, DepsType)` makes fresh deps for each run. Providing `type_` drops the kept
        deps it changes.
        """
        check_flag('replace', replace)
        try:
            hash(type_)
        except TypeError:  # it could never be looked up: refused now, not at the first run
            raise ConfigurationError(
                f'provide() takes a type to provide values of; got {type_!r}', option='type_', value=repr(type_)
            ) from None
        if (factory is None) == (instance is UNSET):
            raise DependencyError(f'provide({type_label(type_)}) takes a factory or an instance (exactly one)')
        if not replace and type_ in self._providers:
            raise DuplicateNameError(
                f'{type_label(type_)} is already provided to the injector; pass replace=True', type=type_label(type_)
            )
        self._providers[type_] = make_provider(type_, factory, None if instance is UNSET else instance, scope)
        self._plans.clear()
        # Kept deps built with what `type_` gave before (or without it) are built anew; the others stay.
        self._forget_kept(lambda shape: shape.deps_type == type_ or any(v.key == type_ for v in shape.values))

    # --- checking ------------------------------------------------------------------------------

    def validate(self) -> None:
        """Check every registered agent at once: dependencies exist and are agentools, no cycles,
        every deps field and factory parameter resolvable, handle output types match.

        Raises:
            InjectorValidationError: listing every problem found (`.problems`), not only the first.
        """
        problems = graph_problems(self._targets, self._edges_of, self._shape)
        for name in sorted(self._targets):
            found: list[DependencyError] = []
            compile_deps(name, self._shape(self._targets[name].deps_type), self._providers, self.handle, found)
            problems += found
        raise_problems([*problems, *resource_problems(self._providers)])

    def clear(self) -> None:
        """Forget every agent, factory, cached plan and kept deps (overrides end with their `with` blocks)."""
        self._targets.clear()
        self._providers.clear()
        self._shapes.clear()
        self._plans.clear()
        self._kept.clear()
        self._handles.clear()

    # --- internals -----------------------------------------------------------------------------

    def _plan(self, target: Target) -> DepsPlan | None:
        if not target.needs_deps:
            return None
        plan = self._plans.get(target.deps_type, UNSET)
        if plan is UNSET:
            shape = self._shape(target.deps_type)
            for dependency in shape.handles:  # a handle on a non-agentool is refused now, not at its first use
                self._require_agentool(target.name, dependency.agentool)
            plan = self._plans[target.deps_type] = compile_deps(target.name, shape, self._providers, self.handle)
        return plan

    async def _supply(self, target: Target, scope: RunScope | None) -> Any:
        """The deps of a call of `target` given none, as every surface passes them.

        The instance this injector keeps for the deps type (built on first use: first wins, so
        concurrent calls share one), else, when a factory makes part of them (`DepsPlan.per_run`),
        built in `scope`, the run's. `None`: no deps, or unbuildable ones the type lets be `None`.

        Raises:
            MissingDepsError: they cannot be built and the deps type does not admit `None`.
        """
        if (kept := self._kept.get(target.deps_type, UNSET)) is not UNSET:
            return kept
        try:
            plan = self._plan(target)
        except (DependencyError, AgenToolNotFoundError) as error:
            if not admits_none(target.deps_type):
                raise missing_deps_error(target.name, target.deps_type, error) from error
            self._plans[target.deps_type] = None  # until the wiring changes (`provide`, `register`)
            return None
        if plan is None:
            return None
        if plan.per_run:
            return await build_deps(plan, scope)
        return self._kept.setdefault(target.deps_type, build_kept(plan))

    def _forget_kept(self, changed: Callable[[DepsShape], bool]) -> None:
        """Drop the kept deps whose shape the wiring just `changed`: the next call builds them anew."""
        for deps_type in [t for t in self._kept if changed(self._shape(t))]:
            del self._kept[deps_type]

    def _shape(self, deps_type: Any) -> DepsShape:
        shape = self._shapes.get(deps_type)
        if shape is None:
            shape = self._shapes[deps_type] = deps_shape(deps_type)
        return shape

    def _edges_of(self, target: Target) -> list[str]:
        return [*target.dependencies, *(h.agentool for h in self._shape(target.deps_type).handles)]

    def _check_edges(self, name: str, edges: list[str]) -> None:
        check_new_edges(name, edges, self._targets, self._edges_of)

    def _require_agentool(self, owner: str, dependency: str) -> None:
        other = self._targets.get(dependency)
        if other is None:
            raise missing_dependency(owner, dependency, list(self._targets))
        if other.manager is None:
            raise not_an_agentool(owner, dependency)
