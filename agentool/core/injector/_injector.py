"""`AgenToolInjector`: run agentools by name, wire their dependencies, swap any of them in tests.

The injector in effect, the run in progress and the overrides travel with the task (context
variables), so nested calls share a run and concurrent tasks stay apart; `_supply` decides how long
built deps live.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, Literal, TypeVar, cast

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
    deps_admit_none,
    injector_in_effect,
    leave,
    missing_deps_error,
    type_label,
)
from ..request import frame as _frame
from ._graph import check_new_edges, cycle_error, dependency_problem, graph_problems, not_an_agentool, raise_problems
from ._targets import Target, agent_target, stub_target
from ._wiring import (
    DepsPlan,
    DepsShape,
    Provider,
    ResourceScope,
    RunScope,
    build_deps,
    compile_deps,
    deps_shape,
    make_provider,
    resource_problems,
    run_without_loop,
)
from .handle import AgenToolHandle
from .serialization import serialize_fallback, serialize_input

T = TypeVar('T')


class AgenToolInjector:
    """Runs agentools by name with their dependencies wired; holds agents and resource factories.

    Args:
        registry: Where `Agent('agentool:NAME')` finds its agentool (default: the one in effect).
        tracer_provider: Where every `call`'s span goes; without one, only calls inside a trace
            in progress open a span, so untraced code pays nothing for telemetry.
        meter_provider: Where every `call`'s metrics go; without one, only traced calls are measured.
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
        self._injector_scope = RunScope()  # injector-scoped instances; closed by `clear`/`aclear`
        self._policy = Policy(surface='direct', typed_errors=True)
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self._overridden = False
        self._scopeless_frames: dict[str, Frame] = {}
        self.serial_calls: GateTable = {}
        """The locks that run a `concurrent_safe=False` tool's calls one at a time."""
        # The deps builder a subclass overrides (the guide's `CustomInjector`): the async one if both.
        cls, base = type(self), AgenToolInjector
        own_sync = cls.create_deps is not base.create_deps
        own = 'acreate_deps' if cls.acreate_deps is not base.acreate_deps else 'create_deps' if own_sync else None
        self._own_deps: Literal['create_deps', 'acreate_deps'] | None = own
        self.kept_deps: dict[Any, Any] = self._kept if self._own_deps is None else {}
        """Kept deps by deps type, read before `deps_for` (none for a subclass building its own)."""
        self._overrides: ContextVar[dict[str, Target] | None] = ContextVar(
            f'agentool_overrides_{id(self):x}', default=None
        )

    @property
    def tracer_provider(self) -> TracerProvider | None:
        """Where every direct call's span goes (see the class)."""
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
        """Where every direct call's metrics go (see the class)."""
        return self._policy.meter_provider

    @meter_provider.setter
    def meter_provider(self, provider: MeterProvider | None) -> None:
        check_instance('meter_provider', provider, MeterProvider, optional=True)
        self._policy = replace(self._policy, meter_provider=provider)

    def register(self, name: str, agent: AbstractAgent[Any, Any], *, replace: bool = False) -> None:
        """Register `agent` under `name` (`create_agentool` does this for every agentool).

        Raises `DependencyError` when a dependency on or of `agent` names a non-agentool or closes a
        cycle (`DependencyCycleError`).
        """
        check_name(name)  # first: a name that is not a string would break every later lookup
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
            raise not_an_agentool(dependents[0], name)
        self._targets[name] = target
        self._plans.clear()  # a plan may have been given up for want of this agentool

    def check_dependencies(self, name: str, config: AgenToolConfig) -> None:
        """Raise the error registering `config` as `name` would cause (missing ones are allowed)."""
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
        """A handle on agentool `name` through this injector; overrides apply when it is called."""
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

        Give a `factory` (sync or async, its parameters resolved by type; what it made is closed with
        its `scope`) or a ready `instance` (shared, never closed). See the injector guide.
        """
        check_flag('replace', replace)
        try:
            hash(type_)
        except TypeError:  # it could never be looked up: refused now, not at the first run
            raise ConfigurationError(
                f'provide() takes a type to provide values of; got {type_!r}', option='type_', value=repr(type_)
            ) from None
        if cast(object, type_) is None or isinstance(type_, str | bytes | int | float | complex):
            # A type's name (or any plain value) is never a field's annotation: never looked up.
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
        self._injector_scope.forget(type_)  # the old instance is still closed on `clear`
        self._plans.clear()
        # Kept deps built with what `type_` gave before (or without it) are built anew.
        self._forget_kept(lambda shape: shape.deps_type == type_ or any(v.key == type_ for v in shape.values))

    def validate(self) -> None:
        """Check every registered agent's dependencies, cycles, deps fields, factories and handles;
        `InjectorValidationError` lists every problem found (`.problems`)."""
        problems = graph_problems(self._targets, self._edges_of, self._shape)
        for name in sorted(self._targets):
            found: list[DependencyError] = []
            compile_deps(name, self._shape(self._targets[name].deps_type), self._providers, self.handle, found)
            problems += found
        raise_problems([*problems, *resource_problems(self._providers)])

    def clear(self) -> None:
        """Forget every agent, factory and kept deps; close what injector-scoped factories made.

        `ConfigurationError` (nothing cleared) when a resource closes only with an `await`: use `aclear`.
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
        """`clear()`, awaiting the closers that need it."""
        await self._forget().aclose(None)

    def _forget(self) -> RunScope:
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

        A replacement is an agent, a (sync or async) function of the validated input, or a value.
        """
        active = dict(self._overrides.get() or {})
        for name, replacement in replacements.items():
            if (replaced := self._targets.get(name)) is None:
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

        `(await run(name, input)).output` (same validation, routing, deps, overrides and errors) at
        the cost of a function call; `deps=None` counts as none given, as for `run`.
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
        # The schema's own validation for the common case; a failure goes back to the manager for
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
        """The deps `run(agent_name, ...)` would pass, built without an event loop.

        A subclass may override it (or `acreate_deps`): every surface given no deps then asks it.
        `DepsUnavailableError` when a resource factory awaits I/O: use `acreate_deps`.
        """
        return run_without_loop(self._wired_deps(agent_name), agent_name)

    async def acreate_deps(self, agent_name: str) -> Any:
        """The deps `run(name, ...)` would pass; inside a run (or `run_scope()`) their resources
        are that run's, else the caller's to close."""
        if self._own_deps == 'create_deps':  # its `super().create_deps()` is the wiring's: no recursion
            return self.create_deps(agent_name)
        return await self._wired_deps(agent_name)

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
        """Enter the frame of one call or run of `target` (`None`: a surface's call that `builds`
        deps or not), joining the run in progress; undone by `request.leave`."""
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
        if not target.needs_run_scope:  # the common direct call: the same frame, made once
            if (same := self._scopeless_frames.get(target.name)) is None:
                same = self._scopeless_frames[target.name] = _new(Frame, (self, None, target.chain))
            return (_frame.set(same), None, False)
        scope = RunScope()
        return (_frame.set(_new(Frame, (self, scope, target.chain))), scope, True)

    async def deps_for(self, target: Target | str, deps_type: Any, scope: RunScope | None) -> Any:
        """The deps of a call of `target` (or the agentool named so) given none, in run `scope`:
        a subclass's own `create_deps`/`acreate_deps`, else the wiring's (else `MissingDepsError`)."""
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
        """The wiring's deps of `name`, in the run in progress if any."""
        current = _frame.get()
        scope = current.scope if current is not None and current.injector is self else None
        return await self._supply(self._target(name), scope)

    async def _supply(self, target: Target, scope: RunScope | None) -> Any:
        """The wiring's deps of `target`: kept, built per run in `scope`, or `None`."""
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
            for handle in shape.handles:  # a handle on a non-agentool is refused now, not at first use
                note = hidden_by_scope(handle.agentool, self.registry or get_registry())
                if (problem := dependency_problem(target.name, handle.agentool, self._targets, note=note)) is not None:
                    raise problem
            found: list[DependencyError] = []
            plan = compile_deps(target.name, shape, self._providers, self.handle, found)
            if found:
                raise found[0]
            self._plans[target.deps_type] = plan
        return plan

    def _shape(self, deps_type: Any) -> DepsShape:
        if (shape := self._shapes.get(deps_type)) is None:
            shape = self._shapes[deps_type] = deps_shape(deps_type)
        return shape

    def _forget_kept(self, changed: Callable[[DepsShape], bool]) -> None:
        """Drop the kept deps whose shape `changed`: the next call builds them anew."""
        for deps_type in [t for t in self._kept if changed(self._shape(t))]:
            del self._kept[deps_type]

    def _edges_of(self, target: Target) -> list[str]:
        declared = () if target.manager is None else target.manager.config.dependencies
        return [*declared, *(h.agentool for h in self._shape(target.deps_type).handles)]


# On every direct call: `tuple.__new__` makes a named tuple at half the cost of its generated `__new__`.
_new = cast('Callable[[type[Any], tuple[Any, ...]], Any]', tuple.__new__)  # pyright: ignore[reportUnknownMemberType]


def get_injector() -> AgenToolInjector:
    """The injector in effect: the one running the current agentool, else the innermost
    `use_injector()` scope's, else the registry in effect's own."""
    return cast(AgenToolInjector, injector_in_effect(get_registry, AgenToolInjector))


@contextmanager
def use_injector(injector: AgenToolInjector | None = None) -> Generator[AgenToolInjector]:
    """Make `injector` (a fresh one by default) the injector in effect inside the block, task-local."""
    check_instance('injector', injector, AgenToolInjector, optional=True)
    injector = AgenToolInjector() if injector is None else injector
    current = _frame.get()
    keep = current is not None and current.injector is injector
    token = _frame.set(current if keep and current is not None else Frame(injector, None, ()))
    try:
        yield injector
    finally:
        _frame.reset(token)
