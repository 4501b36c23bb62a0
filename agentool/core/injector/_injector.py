"""`AgenToolInjector`: run agentools by name, wire their dependencies, swap any of them in tests.

Three things travel with the running task (as context variables), never through process globals:
the injector in effect, the run in progress (its resources and the chain of agentools calling
each other, which is how a cycle is caught before it recurses) and the overrides entered with
`injector.override(...)`. Agentools calling each other through the injector (`get_injector()`,
a deps handle) therefore share the run's resources and see the caller's overrides, while
concurrent tasks see only their own.

The injector holds the agents by name (registration and the dependency-graph checks are here) and
one `DepsLifetime` (`_lifetime`): the providers, and how long the deps of a call given none live.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, TypeVar, cast

from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider
from pydantic import ValidationError
from pydantic_ai import AgentRunResult
from pydantic_ai.agent import AbstractAgent
from pydantic_core import PydanticSerializationError, to_json

from ..._options import check_flag, check_instance, check_name
from ...errors import AgenToolNotFoundError, ConfigurationError, DependencyError, DuplicateNameError
from ...telemetry import TRACER_NAME
from .._lookup import not_found
from ..operation import UNSET, Policy, run_operation
from ..output import json_output_text
from ..registry import AgenToolConfig, AgenToolRegistry, get_registry, hidden_by_scope
from ..request import (
    Entry,
    Frame,
    GateTable,
    declares_deps,
    deps_admit_none,
    leave,
    missing_deps_error,
)
from ..request import frame as _frame
from ._deps import OwnDeps, own_deps_form, run_without_loop
from ._graph import (
    check_new_edges,
    cycle_error,
    graph_problems,
    missing_dependency,
    not_an_agentool,
    raise_problems,
)
from ._lifetime import DepsLifetime
from ._resources import ResourceScope, RunScope, resource_problems
from ._targets import Target, agent_target, stub_target
from .handle import AgenToolHandle
from .serialization import serialize_fallback, serialize_input

__all__ = ('AgenToolInjector',)

T = TypeVar('T')


class AgenToolInjector:
    """Runs agentools by name with their dependencies wired; holds agents and resource factories.

    Args:
        registry: Where an agent given as a model string (`Agent('agentool:NAME')`) finds its
            agentool; by default the registry in effect when it is registered.
        tracer_provider: Where the direct path's spans go, for every `call`. Without one, a call
            opens its span only inside a trace in progress (the current span is recording: a
            request, an agent run, a span of yours), with the global provider's `agentool` tracer,
            so untraced code pays nothing for telemetry.
        meter_provider: Where the direct path's metrics go, for every `call`, traced or not
            (calls, duration, errors by type: see `operation_span`). Without one, a call is
            measured (by the global meter provider) only when it opens a span.
    """

    def __init__(
        self,
        *,
        registry: AgenToolRegistry | None = None,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        check_instance('registry', registry, AgenToolRegistry, optional=True)
        self.registry = registry
        self._targets: dict[str, Target] = {}
        self._handles: dict[str, AgenToolHandle[Any]] = {}
        self._lifetime = DepsLifetime(handle=self.handle, require=self._require_agentool)
        self._policy = Policy(surface='direct', typed_errors=True)
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self._overridden = False
        self._leaf_frames: dict[str, Frame] = {}
        self.serial_calls: GateTable = {}
        """The locks that run a `concurrent_safe=False` tool's calls through this injector one at a time."""
        # Which deps builder a subclass overrides (the guide's `CustomInjector`), found once: a surface
        # building the deps of a call given none reads this one attribute to know whether to ask it.
        self._own_deps: OwnDeps | None = own_deps_form(type(self), AgenToolInjector)
        self.kept_deps: dict[Any, Any] = self._lifetime.kept_deps if self._own_deps is None else {}
        """The deps kept for calls given none, by deps type (`DepsLifetime.supply` fills it; a subclass
        building its own keeps none): every surface reads it before asking `deps_for`."""
        self._overrides: ContextVar[dict[str, Target] | None] = ContextVar(
            f'agentool_overrides_{id(self):x}', default=None
        )

    @property
    def tracer_provider(self) -> TracerProvider | None:
        """Where every direct call's span goes; `None`: only calls inside a trace in progress are traced."""
        return self._tracer_provider

    @tracer_provider.setter
    def tracer_provider(self, provider: TracerProvider | None) -> None:
        given = cast(object, provider)
        if given is not None and not callable(getattr(given, 'get_tracer', None)):  # a TracerProvider, by duck typing
            raise ConfigurationError(
                f'tracer_provider must be an OpenTelemetry TracerProvider or None; got {given!r}',
                option='tracer_provider',
                value=repr(given),
            )
        self._tracer_provider = provider
        tracer = None if provider is None else provider.get_tracer(TRACER_NAME)
        self._policy = replace(self._policy, tracer=tracer)

    @property
    def meter_provider(self) -> MeterProvider | None:
        """Where every direct call's metrics go; `None`: only calls that open a span are measured."""
        return self._policy.meter_provider

    @meter_provider.setter
    def meter_provider(self, provider: MeterProvider | None) -> None:
        check_instance('meter_provider', provider, MeterProvider, optional=True)
        self._policy = replace(self._policy, meter_provider=provider)

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
        self._lifetime.replan()  # a plan may have been given up for want of this agentool

    def check_dependencies(self, name: str, config: AgenToolConfig) -> None:
        """Raise the dependency error registering agentool `name` with `config` would cause, if any.

        Dependencies not registered yet are allowed here (they may come later); `validate()` and the
        first run report them.
        """
        handles = self._lifetime.shape(config.deps_type).handles
        self._check_edges(name, [*config.dependencies, *(h.agentool for h in handles)])

    def unregister(self, name: str) -> None:
        """Forget the agent registered under `name`."""
        if name not in self._targets:
            raise self._unknown(name)
        del self._targets[name]
        self._lifetime.replan()
        self._lifetime.forget(lambda shape: any(h.agentool == name for h in shape.handles))  # their handles dangle

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
            handle = self._handles[name] = AgenToolHandle(name, self)
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
        instance per run, shared by every consumer in it, closed (`aclose()` or `close()`) when the run
        ends; with `'transient'`, one per consumer, closed alike; with `'injector'`, one for as long as
        this injector, made on first use (concurrent first uses wait for it) and closed by `clear()`
        (`await aclear()` when it closes with an await). An injector-scoped factory's parameters must
        be injector-scoped or instances too. A factory that raises fails the call with
        `DepsUnavailableError` (the factory's exception is its `__cause__`).

        Deps a call given none gets live as long as this injector (one instance per deps type, shared
        by every surface) unless a run- or consumer-scoped factory makes them or one of their fields:
        those are built per run.
        `provide(DepsType, instance=deps)` makes `deps` the instance every surface gets;
        `provide(DepsType, DepsType)` makes fresh deps for each run. Providing `type_` drops the kept
        deps it changes.
        """
        check_flag('replace', replace)
        self._lifetime.provide(type_, factory, instance, scope, replace=replace)

    # --- checking ------------------------------------------------------------------------------

    def validate(self) -> None:
        """Check every registered agent at once: dependencies exist and are agentools, no cycles,
        every deps field and factory parameter resolvable, handle output types match.

        Raises:
            InjectorValidationError: listing every problem found (`.problems`), not only the first.
        """
        problems = graph_problems(self._targets, self._edges_of, self._lifetime.shape)
        for name in sorted(self._targets):
            problems += self._lifetime.problems(name, self._targets[name].deps_type)
        raise_problems([*problems, *resource_problems(self._lifetime.providers)])

    def clear(self) -> None:
        """Forget every agent, factory, cached plan and kept deps (overrides end with their `with` blocks),
        and close what injector-scoped factories made, newest first.

        Raises:
            ConfigurationError: an injector-scoped resource closes only with an `await` (`aclose()`, an
                async `close()`); nothing is cleared: use `await injector.aclear()`.
        """
        if waiting := self._lifetime.async_closers():
            raise ConfigurationError(
                f'clear() cannot close {", ".join(sorted(set(waiting)))} without an event loop (it closes with '
                'an await); use `await injector.aclear()`',
                option='clear',
                closers=sorted(set(waiting)),
            )
        self._forget().close()

    async def aclear(self) -> None:
        """`clear()`, closing what injector-scoped factories made with an `await` where it takes one."""
        await self._forget().aclose(None)

    def _forget(self) -> RunScope:
        self._targets.clear()
        self._handles.clear()
        return self._lifetime.clear()

    def get(self, name: str) -> AbstractAgent[Any, Any]:
        """The agent `run(name, ...)` runs: the override in effect for `name`, else the one registered."""
        return self._target(name).agent

    # --- overrides -----------------------------------------------------------------------------

    @contextmanager
    def override(self, **replacements: Any) -> Generator[AgenToolInjector]:
        """Answer for the named agentools with replacements inside the block, in this task only.

        A replacement is an agent (another agentool, or any pydantic-ai agent), a function taking the
        validated input model (sync or async), or a value; functions and values are checked against
        the replaced agentool's output type. Overrides nest, are undone on exit (also on error) and
        reach through delegation: an agentool calling another through the injector gets the override.
        """
        current = self._overrides.get()
        active = dict(current or {})
        for name, replacement in replacements.items():
            replaced = self._targets.get(name)
            if replaced is None:
                raise self._unknown(name)
            if isinstance(replacement, AbstractAgent):
                agent = cast('AbstractAgent[Any, Any]', replacement)
                active[name] = agent_target(name, agent, registry=self.registry)
            else:
                active[name] = stub_target(name, replaced, replacement)
        self._overridden = True
        token = self._overrides.set(active)
        try:
            yield self
        finally:
            self._overrides.reset(token)

    # --- running -------------------------------------------------------------------------------

    async def run(self, agent_name: str, input_data: Any, **run_kwargs: Any) -> AgentRunResult[Any]:
        """Run the agent behind `agent_name` on `input_data` with full agent semantics; return the run result.

        `input_data` is a JSON string, a dict, a pydantic model or any value pydantic can serialise.
        Unless `deps=` is given, the deps are built for this run as on every surface: by the
        subclass's own `create_deps`/`acreate_deps` when it overrides one and the agent declares a
        `deps_type`, else by the injector's wiring; this run owns and closes their resources.
        """
        name, input = agent_name, input_data
        target = self._target(name)
        data = serialize_input(name, input)
        prompt = data if isinstance(data, str) else data.decode()
        # The same error the model raises, before any resource is made.
        validated = None if (manager := target.manager) is None else manager.validate_json(prompt)
        entry = self.enter(target, False)
        try:
            if 'deps' not in run_kwargs:
                if not target.needs_deps or (
                    manager is not None
                    and validated is not None
                    and manager.operation_of(validated) not in manager.ctx_operations
                ):
                    run_kwargs['deps'] = None  # as `agent.run`: deps are built only for a tool taking a context
                else:
                    run_kwargs['deps'] = await self.deps_for(target, target.deps_type, entry[1])
            result = await target.agent.run(prompt, **run_kwargs)
        except BaseException as error:
            await leave(entry, error)
            raise
        await leave(entry, None)
        return result

    async def call(self, name: str, input: Any, *, deps: Any = UNSET) -> Any:
        """The typed output of agentool `name` for `input`, without the pydantic-ai agent graph.

        Equal to `(await run(name, input)).output` with the same validation, routing, transforms,
        deps, overrides and typed errors (a tool's `ModelRetry` becomes `ToolRetryError`, as in a
        run), at the cost of a direct function call. Tools delegating to other agentools use it.
        With no JSON between tool and caller it returns the tool's own value where a run's output
        is that value's JSON read back (a subclass, an empty string, bytes: see the model page).
        `deps=None` counts as no deps given, as for `run` and `agent.run`: they are built if needed.
        """
        if deps is None:  # as `run(deps=None)` (and `agent.run`): no deps given, so they are built
            deps = UNSET
        # Until an override is first entered (in any task), no task can have one: skip the lookup.
        overrides = self._overrides.get() if self._overridden else None
        try:
            target = overrides.get(name) if overrides else None
            if target is None and (target := self._targets.get(name)) is None:
                raise self._unknown(name)
        except TypeError:  # an unhashable name
            raise self._unknown(name) from None
        # Not an agentool, or an output function reshapes its output: only its agent can answer.
        if (manager := target.direct) is None:
            kwargs: dict[str, Any] = {} if deps is UNSET else {'deps': deps}
            return (await self.run(name, input, **kwargs)).output
        if type(input) is str:
            data: str | bytes = input
        elif type(input) is dict:
            try:
                data = to_json(input, by_alias=True, fallback=serialize_fallback)
            except PydanticSerializationError:
                data = serialize_input(name, input)  # raises the typed error
        else:
            data = serialize_input(name, input)
        # The manager's own validation, inlined for the common case; any failure goes back to the
        # manager so the typed error is exactly the one a run raises.
        # (A str is at most 4 UTF-8 bytes per character, so a short one needs no encoding to be measured.)
        if len(data) <= (target.max_input_chars if type(data) is str else target.max_input_bytes):
            try:
                validated = target.validate_json(data)
            except ValidationError:
                validated = manager.validate_json(data)
        else:
            validated = manager.validate_json(data)
        policy, template = self._policy, target.ctx_template
        result = await run_operation(policy, manager, validated, template, deps, None, self, target, data)
        if target.typed_output or isinstance(result, str):
            return result
        return json_output_text(result, name)  # an untyped agentool's run output is its JSON text

    def create_deps(self, agent_name: str) -> Any:
        """The deps `run(agent_name, ...)` would pass, built synchronously as the architecture guide calls it.

        Works whenever building them needs no event loop: handles, values, and resource factories
        (sync, or async ones that do not actually wait). Use `await acreate_deps(name)` for
        resources that do.

        A subclass may override it (or `acreate_deps`) to build deps itself: every surface given no
        deps then asks it for those of an agentool that declares a `deps_type`. This base form
        always builds with the wiring (so `super().create_deps(name)` in an override does), never
        with an overriding `acreate_deps`: that override may call it, and must not be called back.

        Raises:
            DepsUnavailableError: a resource factory waits on I/O; names the async form to use.
        """
        return run_without_loop(self._wired_deps(agent_name), agent_name)

    async def acreate_deps(self, agent_name: str) -> Any:
        """The deps `run(name, ...)` would pass: an instance of the agent's `deps_type`, or `None`.

        Inside a run (or `run_scope()`) its resources belong to that run; outside one, closing
        them is the caller's job. Every surface given no deps asks it (for an agentool declaring a
        `deps_type`), so a subclass overriding only `create_deps` is answered by that override here;
        otherwise, and through `super().acreate_deps(name)`, this builds with the wiring.
        """
        if self._own_deps == 'create_deps':  # its `super().create_deps()` is the wiring's: no recursion
            return self.create_deps(agent_name)
        return await self._wired_deps(agent_name)

    @asynccontextmanager
    async def call_deps(self, name: str, deps_type: Any) -> AsyncGenerator[Any]:
        """The deps of one call of agentool `name` (declared `deps_type`) given none, for the block.

        What every surface given no deps passes to a tool taking a context: the toolset, MCP, the
        manager tool and the plain model string (`run` and `call` decide the same way, in
        `_deps_for`). Yields `None` when `deps_type` declares no deps, or admits `None` and cannot be
        built. Resources made for them are closed when the block ends (joined to a run in progress).

        Raises:
            MissingDepsError: `deps_type` cannot be built and does not admit `None`.
        """
        if not declares_deps(deps_type):
            yield None
            return
        async with self.run_scope():
            current = _frame.get()
            assert current is not None  # the run scope's
            yield await self.deps_for(name, deps_type, current.scope)

    @asynccontextmanager
    async def run_scope(self) -> AsyncGenerator[None]:
        """Make the block one run: runs and calls inside share run-scoped resources, closed on exit."""
        entry = self.enter(None, True)
        try:
            yield
        except BaseException as error:
            await leave(entry, error)
            raise
        await leave(entry, None)

    def enter(self, target: Target | None, builds: bool) -> Entry:
        """Enter the frame for one call or run (undo with `agentool.core.request.leave`).

        A run of `target` is a link of the chain in progress (a repeat is a cycle error) and, unless
        it is a leaf (no deps, no declared dependencies), runs in a run scope: the one in progress,
        else its own, which leaving closes. A surface's call (`target` `None`) joins the frame in
        effect, with a run scope of its own when it `builds` deps and none is in progress.
        """
        current = _frame.get()
        mine = current is not None and current.injector is self
        if target is None:
            if current is not None and mine and (current.scope is not None or not builds):
                return (None, current.scope, False)  # join the run in progress
            scope = RunScope() if builds else None
            chain = current.chain if current is not None and mine else ()
            return (_frame.set(_new(Frame, (self, scope, chain))), scope, builds)
        if current is not None and mine and (current.scope is not None or current.chain):
            if (name := target.name) in (chain := current.chain):
                raise cycle_error([*chain[chain.index(name) :], name])
            scope = current.scope
            if closes := (scope is None and not target.leaf):
                scope = RunScope()
            return (_frame.set(_new(Frame, (self, scope, (*chain, name)))), scope, closes)
        if target.leaf:  # the common direct call: a frame that is always the same, made once
            if (leaf := self._leaf_frames.get(target.name)) is None:
                leaf = self._leaf_frames[target.name] = _new(Frame, (self, None, target.chain))
            return (_frame.set(leaf), None, False)
        scope = RunScope()
        return (_frame.set(_new(Frame, (self, scope, target.chain))), scope, True)

    async def deps_for(self, target: Target | str, deps_type: Any, scope: RunScope | None) -> Any:
        """The deps of a call given none of `target` (or of the agentool named so) in run `scope`, on every
        surface: a subclass's own `create_deps` or `acreate_deps` when it overrides one, else the wiring's,
        whose lifetime `DepsLifetime.supply` decides.

        Raises:
            MissingDepsError: they cannot be built and `deps_type` does not admit `None` (also when the
                named agentool is registered with another injector than this one).
        """
        if isinstance(target, str):
            try:
                target = self._target(target)
            except AgenToolNotFoundError as error:
                if not deps_admit_none(deps_type):
                    raise missing_deps_error(target, deps_type, error) from error
                return None
        if self._own_deps is not None:
            return await self.acreate_deps(target.name)
        return await self._lifetime.supply(target, scope)

    # --- internals -----------------------------------------------------------------------------

    def _target(self, name: str) -> Target:
        if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers pass anything
            raise self._unknown(name)
        overrides = self._overrides.get()
        if overrides and (target := overrides.get(name)) is not None:
            return target
        if (target := self._targets.get(name)) is None:
            raise self._unknown(name)
        return target

    def _unknown(self, name: object) -> AgenToolNotFoundError:
        """The error for a name no agent is registered under (with the names that are, to suggest one)."""
        registry = self.registry or get_registry()
        return not_found(
            name, self._targets, kind='agent', place='with the injector', note=hidden_by_scope(name, registry)
        )

    async def _wired_deps(self, name: str) -> Any:
        """The deps of `name` as the wiring builds them, in the run in progress (else in a scope of their own)."""
        current = _frame.get()
        scope = current.scope if current is not None and current.injector is self else None
        return await self._lifetime.supply(self._target(name), scope)

    def _edges_of(self, target: Target) -> list[str]:
        return [*target.dependencies, *(h.agentool for h in self._lifetime.shape(target.deps_type).handles)]

    def _check_edges(self, name: str, edges: list[str]) -> None:
        check_new_edges(name, edges, self._targets, self._edges_of)

    def _require_agentool(self, owner: str, dependency: str) -> None:
        other = self._targets.get(dependency)
        if other is None:
            note = hidden_by_scope(dependency, self.registry or get_registry())
            raise missing_dependency(owner, dependency, list(self._targets), note=note)
        if other.manager is None:
            raise not_an_agentool(owner, dependency)


# On every direct call: `tuple.__new__` makes a named tuple at half the cost of its generated `__new__`.
_new = cast('Callable[[type[Any], tuple[Any, ...]], Any]', tuple.__new__)  # pyright: ignore[reportUnknownMemberType]
