"""`AgenToolInjector`: run agentools by name, wire their dependencies, swap any of them in tests.

Three things travel with the running task (context variables), never through process globals:
the injector in effect, the run in progress (its resources and the chain of agentools calling
each other, which is how a cycle is caught before it recurses) and the overrides entered with
`injector.override(...)`. So agentools calling each other through the injector share the run's
resources and see the caller's overrides, while concurrent tasks see only their own.

How long the deps of a call given none live is decided here, in `_supply`:

- **As long as the injector** (the default): one instance per deps type, built on first use from
  handles, field defaults, provided instances and injector-scoped resources, then kept and shared
  by every call, so state a tool keeps there persists.
- **One run**: when a run- or consumer-scoped factory makes the deps or one of their fields, they
  are built in the run's scope, which closes what the factories made when the run ends.
- **None**: no deps type, or deps that cannot be built and whose type admits `None`.
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
from ...errors import AgenToolNotFoundError, ConfigurationError, DependencyError, DuplicateNameError, quote
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
    injector_in_effect,
    leave,
    missing_deps_error,
)
from ..request import frame as _frame
from ._graph import check_new_edges, cycle_error, dependency_problem, graph_problems, raise_problems
from ._targets import Target, agent_target, stub_target
from ._wiring import (
    DepsPlan,
    DepsShape,
    OwnDeps,
    Provider,
    ResourceScope,
    RunScope,
    build_deps,
    compile_deps,
    deps_shape,
    make_provider,
    own_deps_form,
    resource_problems,
    run_without_loop,
    type_label,
)
from .handle import AgenToolHandle
from .serialization import serialize_fallback, serialize_input

__all__ = ('AgenToolInjector', 'get_injector', 'use_injector')

T = TypeVar('T')


class AgenToolInjector:
    """Runs agentools by name with their dependencies wired; holds agents and resource factories.

    Args:
        registry: Where an agent given as a model string (`Agent('agentool:NAME')`) finds its
            agentool; by default the registry in effect when it is registered.
        tracer_provider: Where the direct path's spans go, for every `call`. Without one, a call
            opens its span only inside a trace in progress, with the global provider's `agentool`
            tracer, so untraced code pays nothing for telemetry.
        meter_provider: Where the direct path's metrics go, for every `call`, traced or not (see
            `operation_span`). Without one, a call is measured only when it opens a span.
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
        self._providers: dict[Any, Provider] = {}
        self._shapes: dict[Any, DepsShape] = {}
        self._plans: dict[Any, DepsPlan | None] = {}
        self._kept: dict[Any, Any] = {}
        self._injector_scope = RunScope()
        """Where injector-scoped factories make their one instance; closed by `clear`/`aclear`."""
        self._policy = Policy(surface='direct', typed_errors=True)
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self._overridden = False
        self._scopeless_frames: dict[str, Frame] = {}
        self.serial_calls: GateTable = {}
        """The locks that run a `concurrent_safe=False` tool's calls through this injector one at a time."""
        # Which deps builder a subclass overrides (the guide's `CustomInjector`), found once.
        self._own_deps: OwnDeps | None = own_deps_form(type(self), AgenToolInjector)
        self.kept_deps: dict[Any, Any] = self._kept if self._own_deps is None else {}
        """The deps kept for calls given none, by deps type (a subclass building its own keeps none):
        every surface reads it before asking `deps_for`."""
        self._overrides: ContextVar[dict[str, Target] | None] = ContextVar(
            f'agentool_overrides_{id(self):x}', default=None
        )

    @property
    def tracer_provider(self) -> TracerProvider | None:
        """Where every direct call's span goes; `None`: only calls inside a trace in progress are traced."""
        return self._tracer_provider

    @tracer_provider.setter
    def tracer_provider(self, provider: TracerProvider | None) -> None:
        expected = 'an OpenTelemetry TracerProvider'
        check_instance('tracer_provider', provider, TracerProvider, optional=True, expected=expected)
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
            check_new_edges(name, self._edges_of(target), self._targets, self._edges_of)
        elif dependents := sorted(n for n, t in self._targets.items() if n != name and name in self._edges_of(t)):
            raise DependencyError(
                f'agentool {dependents[0]!r} depends on {name!r}, but the agent registered as {name!r} is not an '
                'agentool; dependencies must name agentools',
                agentool=dependents[0],
                dependency=name,
            )
        self._targets[name] = target
        self._plans.clear()  # a plan may have been given up for want of this agentool

    def check_dependencies(self, name: str, config: AgenToolConfig) -> None:
        """Raise the dependency error registering agentool `name` with `config` would cause, if any
        (dependencies not registered yet are allowed: `validate()` and the first run report them)."""
        edges = [*config.dependencies, *(h.agentool for h in self._shape(config.deps_type).handles)]
        check_new_edges(name, edges, self._targets, self._edges_of)

    def unregister(self, name: str) -> None:
        """Forget the agent registered under `name`."""
        if name not in self._targets:
            raise self._unknown(name)
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
            handle = self._handles[name] = AgenToolHandle(name, self)
        return handle

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
        instance per run, closed (`aclose()` or `close()`) when the run ends; with `'transient'`, one
        per consumer, closed alike; with `'injector'`, one for as long as this injector, closed by
        `clear()` (`await aclear()` when it closes with an await), whose parameters must be
        injector-scoped or instances too. A factory that raises fails the call with
        `DepsUnavailableError`.

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
        if cast(object, type_) is None or isinstance(type_, str | bytes | int | float | complex):
            # A type's name (or any plain value) is never a field's annotation: it would never be looked up.
            raise ConfigurationError(
                f'provide() takes a type to provide values of, not {quote(type_)}'
                + (' (pass the class itself, not its name)' if isinstance(type_, str) else ''),
                option='type_',
                value=quote(type_),
            )
        if (factory is None) == (instance is UNSET):
            raise DependencyError(f'provide({type_label(type_)}) takes a factory or an instance (exactly one)')
        if not replace and type_ in self._providers:
            raise DuplicateNameError(
                f'{type_label(type_)} is already provided to the injector; pass replace=True', type=type_label(type_)
            )
        given = None if instance is UNSET else instance
        self._providers[type_] = make_provider(type_, factory, given, scope, home=self._injector_scope)
        # What the old provider made for the injector's life is closed with it, on `clear`; the next use makes anew.
        self._injector_scope.forget(type_)
        self._plans.clear()
        # Kept deps built with what `type_` gave before (or without it) are built anew; the others stay.
        self._forget_kept(lambda shape: shape.deps_type == type_ or any(v.key == type_ for v in shape.values))

    def validate(self) -> None:
        """Check every registered agent at once: dependencies, cycles, deps fields, factory parameters
        and handle output types.

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
        """Forget every agent, factory, plan and kept deps, and close what injector-scoped factories made.

        Raises:
            ConfigurationError: an injector-scoped resource closes only with an `await`; nothing is
                cleared: use `await injector.aclear()`.
        """
        if waiting := self._injector_scope.async_closers():
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
        """Forget every agent, provider, plan and kept deps; the scope of injector-scoped resources, to be closed."""
        for table in (self._targets, self._handles, self._providers, self._shapes, self._plans, self._kept):
            table.clear()
        scope, self._injector_scope = self._injector_scope, RunScope()
        return scope

    def get(self, name: str) -> AbstractAgent[Any, Any]:
        """The agent `run(name, ...)` runs: the override in effect for `name`, else the one registered."""
        return self._target(name).agent

    @contextmanager
    def override(self, **replacements: Any) -> Generator[AgenToolInjector]:
        """Answer for the named agentools with replacements inside the block, in this task only.

        A replacement is an agent, a function taking the validated input model (sync or async), or a
        value (both checked against the replaced agentool's output type). Overrides nest, are undone on
        exit and reach through delegation.
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

    async def run(self, agent_name: str, input_data: Any, **run_kwargs: Any) -> AgentRunResult[Any]:
        """Run the agent behind `agent_name` on `input_data` (JSON text or any value pydantic can
        serialise) with full agent semantics; deps not given are built as on every surface."""
        target = self._target(agent_name)
        data = serialize_input(agent_name, input_data)
        prompt = data if isinstance(data, str) else data.decode()
        if target.manager is not None:  # a double standing in for an agentool takes only its input
            target.manager.validate_json(prompt)
        entry = self.enter(target, False)
        try:
            # An agentool's deps are the operation sequence's to build; a plain agent's, the wiring's.
            if target.manager is None and target.needs_deps and run_kwargs.get('deps') is None:
                run_kwargs['deps'] = await self.deps_for(target, target.deps_type, entry[1])
            result = await target.agent.run(prompt, **run_kwargs)
        except BaseException as error:
            await leave(entry, error)
            raise
        await leave(entry, None)
        return result

    async def call(self, name: str, input: Any, *, deps: Any = UNSET) -> Any:
        """The typed output of agentool `name` for `input`, without the pydantic-ai agent graph.

        Equal to `(await run(name, input)).output` with the same validation, routing, deps, overrides
        and typed errors, at the cost of a direct function call. It returns the tool's own value where
        a run's output is that value's JSON read back (see the model page). `deps=None` counts as no
        deps given, as for `run` and `agent.run`.
        """
        if deps is None:
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
        if (manager := target.call_manager) is None:
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
        # The schema's own validation for the common case; any failure goes back to the manager for
        # the typed error a run raises. (A short str needs no encoding to be measured: see `Target`.)
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

        Works whenever building them needs no event loop; use `await acreate_deps(name)` for
        resources that do. A subclass may override it (or `acreate_deps`) to build deps itself:
        every surface given no deps then asks it. This base form always builds with the wiring.

        Raises:
            DepsUnavailableError: a resource factory waits on I/O; names the async form to use.
        """
        return run_without_loop(self._wired_deps(agent_name), agent_name)

    async def acreate_deps(self, agent_name: str) -> Any:
        """The deps `run(name, ...)` would pass: an instance of the agent's `deps_type`, or `None`.

        Inside a run (or `run_scope()`) its resources belong to that run; outside one, closing
        them is the caller's job. A subclass overriding only `create_deps` is answered by it here.
        """
        if self._own_deps == 'create_deps':  # its `super().create_deps()` is the wiring's: no recursion
            return self.create_deps(agent_name)
        return await self._wired_deps(agent_name)

    @asynccontextmanager
    async def call_deps(self, name: str, deps_type: Any) -> AsyncGenerator[Any]:
        """The deps of one call of agentool `name` (declared `deps_type`) given none, for the block.

        Yields `None` when `deps_type` declares no deps, or admits `None` and cannot be built.
        Resources made for them are closed when the block ends (joined to a run in progress).

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

        A run of `target` is a link of the chain in progress (a repeat is a cycle error) and, when it
        `needs_run_scope`, runs in the run scope in progress, else its own, which leaving closes. A
        surface's call (`target` `None`) joins the frame in effect, with a run scope of its own when
        it `builds` deps and none is in progress.
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
            if closes := (scope is None and target.needs_run_scope):
                scope = RunScope()
            return (_frame.set(_new(Frame, (self, scope, (*chain, name)))), scope, closes)
        if not target.needs_run_scope:  # the common direct call: a frame that is always the same, made once
            if (same := self._scopeless_frames.get(target.name)) is None:
                same = self._scopeless_frames[target.name] = _new(Frame, (self, None, target.chain))
            return (_frame.set(same), None, False)
        scope = RunScope()
        return (_frame.set(_new(Frame, (self, scope, target.chain))), scope, True)

    async def deps_for(self, target: Target | str, deps_type: Any, scope: RunScope | None) -> Any:
        """The deps of a call given none of `target` (or of the agentool named so) in run `scope`, on every
        surface: a subclass's own `create_deps` or `acreate_deps` when it overrides one, else the wiring's.

        Raises:
            MissingDepsError: they cannot be built and `deps_type` does not admit `None`.
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
        return await self._supply(target, scope)

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
        """The error for a name no agent is registered under, suggesting the nearest."""
        registry = self.registry or get_registry()
        return not_found(
            name, self._targets, kind='agent', place='with the injector', note=hidden_by_scope(name, registry)
        )

    async def _wired_deps(self, name: str) -> Any:
        """The deps of `name` as the wiring builds them, in the run in progress (else a scope of their own)."""
        current = _frame.get()
        scope = current.scope if current is not None and current.injector is self else None
        return await self._supply(self._target(name), scope)

    async def _supply(self, target: Target, scope: RunScope | None) -> Any:
        """The wiring's deps of a call of `target` given none, with the lifetime the module describes
        (`scope`: the run's; a new one when `None`, which nobody closes: `create_deps` outside a run)."""
        if (kept := self._kept.get(target.deps_type, UNSET)) is not UNSET:
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
        deps = await build_deps(plan, self._injector_scope)
        # First wins: concurrent first calls built their own, and all of them get the one kept.
        return self._kept.setdefault(target.deps_type, deps)

    def _plan(self, target: Target) -> DepsPlan | None:
        if not target.needs_deps:
            return None
        plan = self._plans.get(target.deps_type, UNSET)
        if plan is UNSET:
            shape = self._shape(target.deps_type)
            for dependency in shape.handles:  # a handle on a non-agentool is refused now, not at its first use
                self._require_agentool(target.name, dependency.agentool)
            found: list[DependencyError] = []
            plan = compile_deps(target.name, shape, self._providers, self.handle, found)
            if found:
                raise found[0]
            self._plans[target.deps_type] = plan
        return plan

    def _shape(self, deps_type: Any) -> DepsShape:
        """What `deps_type` asks for, read once."""
        if (shape := self._shapes.get(deps_type)) is None:
            shape = self._shapes[deps_type] = deps_shape(deps_type)
        return shape

    def _forget_kept(self, changed: Callable[[DepsShape], bool]) -> None:
        """Drop the kept deps whose shape the wiring just `changed`: the next call builds them anew."""
        for deps_type in [t for t in self._kept if changed(self._shape(t))]:
            del self._kept[deps_type]

    def _edges_of(self, target: Target) -> list[str]:
        return [*target.dependencies, *(h.agentool for h in self._shape(target.deps_type).handles)]

    def _require_agentool(self, owner: str, dependency: str) -> None:
        note = hidden_by_scope(dependency, self.registry or get_registry())
        if (problem := dependency_problem(owner, dependency, self._targets, note=note)) is not None:
            raise problem


# On every direct call: `tuple.__new__` makes a named tuple at half the cost of its generated `__new__`.
_new = cast('Callable[[type[Any], tuple[Any, ...]], Any]', tuple.__new__)  # pyright: ignore[reportUnknownMemberType]


def get_injector() -> AgenToolInjector:
    """The injector in effect: the one running the current agentool, else the innermost
    `use_injector()` scope, else the default injector of the registry in effect.

    Pairing the default injector with the registry keeps them consistent: a fresh registry
    (`use_registry()`) comes with a fresh injector, and the process default with the process default.
    """
    return cast(AgenToolInjector, injector_in_effect(get_registry, AgenToolInjector))


@contextmanager
def use_injector(injector: AgenToolInjector | None = None) -> Generator[AgenToolInjector]:
    """Make `injector` (a fresh one by default) the injector in effect inside the block.

    Task-local (a context variable) and restored on exit, even on error.

    Raises:
        ConfigurationError: `injector` is not an `AgenToolInjector` (checked on entry, as `use_registry`
            does: otherwise every agentool lookup inside the block would fail somewhere unrelated).
    """
    check_instance('injector', injector, AgenToolInjector, optional=True)
    injector = AgenToolInjector() if injector is None else injector
    current = _frame.get()
    keep = current is not None and current.injector is injector
    token = _frame.set(current if keep and current is not None else Frame(injector, None, ()))
    try:
        yield injector
    finally:
        _frame.reset(token)
