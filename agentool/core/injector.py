"""`AgenToolInjector`: run agentools by name, wire their dependencies, swap any of them in tests.

Three things travel with the running task (as context variables), never through process globals:
the injector in effect, the run in progress (its resources and the chain of agentools calling
each other, which is how a cycle is caught before it recurses) and the overrides entered with
`injector.override(...)`. Agentools calling each other through the injector (`get_injector()`,
a deps handle) therefore share the run's resources and see the caller's overrides, while
concurrent tasks see only their own.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar, Token
from typing import Any, TypeAlias, TypeVar, cast

from opentelemetry.context import get_current
from opentelemetry.trace import Tracer, TracerProvider, get_current_span
from pydantic import ValidationError
from pydantic_ai import AgentRunResult, ModelRetry, ToolFailed
from pydantic_ai.agent import AbstractAgent
from pydantic_core import PydanticSerializationError, to_json

from ..errors import DependencyError, DuplicateNameError, InjectorValidationError
from ..telemetry import TRACER_NAME, operation_span
from ._deps import DepsPlan, DepsShape, build_deps, compile_deps, deps_shape
from ._graph import check_new_edges, cycle_error, graph_problems, missing_dependency, not_an_agentool, not_found
from ._resources import Provider, ResourceScope, RunScope, make_provider, resource_problems, type_label
from ._targets import (
    Target,
    agent_target,
    failed_error,
    retry_error,
    run_context,
    serialise,
    serialise_fallback,
    stub_target,
)
from .handle import AgenToolHandle
from .registry import AgenToolConfig, AgenToolRegistry, get_registry

__all__ = ('AgenToolInjector', 'ResourceScope', 'get_injector', 'use_injector')

T = TypeVar('T')
_Frame: TypeAlias = 'tuple[AgenToolInjector, RunScope | None, tuple[str, ...]]'

_frame: ContextVar[_Frame | None] = ContextVar('agentool_injector_frame', default=None)
"""The injector in effect, the run in progress (`None` outside one) and the chain of agentools in it."""
_COMPANION = 'agentool.injector'
"""Where a registry keeps its default injector (a key no attribute name can collide with)."""
_UNSET: Any = object()


class AgenToolInjector:
    """Runs agentools by name with their dependencies wired; holds agents and resource factories.

    Args:
        registry: Where an agent given as a model string (`Agent('agentool:NAME')`) finds its
            agentool; by default the registry in effect when it is registered.
        tracer_provider: Where the direct path's spans go, for every `call`. Without one, a call
            opens its span only inside a trace in progress (the current span is recording: a
            request, an agent run, a span of yours), with the global provider's `agentool` tracer,
            so untraced code pays nothing for telemetry.
    """

    def __init__(
        self, *, registry: AgenToolRegistry | None = None, tracer_provider: TracerProvider | None = None
    ) -> None:
        self.registry = registry
        self._tracer: Tracer | None = None
        self.tracer_provider = tracer_provider
        self._targets: dict[str, Target] = {}
        self._providers: dict[Any, Provider] = {}
        self._shapes: dict[Any, DepsShape] = {}
        self._plans: dict[Any, DepsPlan | None] = {}
        self._handles: dict[str, AgenToolHandle[Any]] = {}
        self._overridden = False
        self._overrides: ContextVar[dict[str, Target] | None] = ContextVar(
            f'agentool_overrides_{id(self):x}', default=None
        )

    @property
    def tracer_provider(self) -> TracerProvider | None:
        """Where every direct call's span goes; `None`: only calls inside a trace in progress are traced."""
        return self._tracer_provider

    @tracer_provider.setter
    def tracer_provider(self, provider: TracerProvider | None) -> None:
        self._tracer_provider = provider
        self._tracer = None if provider is None else provider.get_tracer(TRACER_NAME)

    # --- agents --------------------------------------------------------------------------------

    def register(self, name: str, agent: AbstractAgent[Any, Any], *, replace: bool = False) -> None:
        """Register `agent` under `name` (`create_agentool` does this for every agentool it creates).

        Raises:
            DuplicateNameError: `name` is taken and `replace` is false.
            DependencyError: an agentool depends on `name` but `agent` is not an agentool, or the
                agent's own dependencies name a non-agentool.
            DependencyCycleError: the agent's dependencies close a cycle (`details['path']`).
        """
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

    def check_dependencies(self, name: str, config: AgenToolConfig) -> None:
        """Raise the dependency error registering agentool `name` with `config` would cause, if any.

        Dependencies not registered yet are allowed here (they may come later); `validate()` and the
        first run report them.
        """
        self._check_edges(name, [*config.dependencies, *(h.agentool for h in self._shape(config.deps_type).handles)])

    def unregister(self, name: str) -> None:
        """Forget the agent registered under `name`."""
        if name not in self._targets:
            raise not_found(name, list(self._targets))
        del self._targets[name]

    def get(self, name: str) -> AbstractAgent[Any, Any]:
        """The agent `run(name, ...)` runs: the override in effect for `name`, else the one registered."""
        return self._target(name).agent

    def list_names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._targets)

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    def handle(self, name: str) -> AgenToolHandle[Any]:
        """A handle on agentool `name` through this injector; overrides apply when it is called."""
        handle = self._handles.get(name)
        if handle is None:
            handle = self._handles[name] = AgenToolHandle(name, self)
        return handle

    # --- resources -----------------------------------------------------------------------------

    def provide(
        self,
        type_: type[T],
        factory: Callable[..., Any] | None = None,
        *,
        instance: Any = _UNSET,
        scope: ResourceScope = 'run',
        replace: bool = False,
    ) -> None:
        """Provide values of `type_` to deps fields and factory parameters annotated with it.

        Give a `factory` (sync or async; its parameters are themselves resolved by type) or a ready
        `instance` (shared, never closed: the caller owns it). With `scope='run'` a factory makes one
        instance per run, shared by every consumer in it; with `'transient'`, one per consumer.
        What a factory made is closed (`aclose()` or `close()`) when the run ends.
        """
        if (factory is None) == (instance is _UNSET):
            raise DependencyError(f'provide({type_label(type_)}) takes a factory or an instance (exactly one)')
        if not replace and type_ in self._providers:
            raise DuplicateNameError(
                f'{type_label(type_)} is already provided to the injector; pass replace=True', type=type_label(type_)
            )
        self._providers[type_] = make_provider(type_, factory, None if instance is _UNSET else instance, scope)
        self._plans.clear()

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
                raise not_found(name, list(self._targets))
            if isinstance(replacement, AbstractAgent):
                agent = cast('AbstractAgent[Any, Any]', replacement)
                active[name] = agent_target(name, agent, registry=self.registry)
            else:
                active[name] = stub_target(name, replaced, replacement, type(self))
        self._overridden = True
        token = self._overrides.set(active)
        try:
            yield self
        finally:
            self._overrides.reset(token)

    # --- running -------------------------------------------------------------------------------

    async def run(self, name: str, input: Any, **run_kwargs: Any) -> AgentRunResult[Any]:
        """Run the agent behind `name` on `input` with full agent semantics; return the run result.

        `input` is a JSON string, a dict, a pydantic model or any value pydantic can serialise.
        Unless `deps=` is given, the agent's deps are built by the injector for this run.
        """
        target = self._target(name)
        data = serialise(name, input)
        prompt = data if isinstance(data, str) else data.decode()
        if target.manager is not None:
            target.manager.validate_json(prompt)  # same error the model raises, before any resource is made
        token, scope, owner = self._enter(name)
        try:
            if 'deps' not in run_kwargs:
                run_kwargs['deps'] = await self._deps(target, scope)
            result = await target.agent.run(prompt, **run_kwargs)
        except BaseException as error:
            if owner and scope.owned:
                await scope.aclose(error)
            raise
        finally:
            _frame.reset(token)
        if owner and scope.owned:
            await scope.aclose(None)
        return result

    async def call(self, name: str, input: Any, *, deps: Any = _UNSET) -> Any:
        """The typed output of agentool `name` for `input`, without the pydantic-ai agent graph.

        Equal to `(await run(name, input)).output` with the same validation, routing, transforms,
        deps, overrides and typed errors (a tool's `ModelRetry` becomes `ToolRetryError`, as in a
        run), at the cost of a direct function call. Tools delegating to other agentools use it.
        """
        # Until an override is first entered (in any task), no task can have one: skip the lookup.
        overrides = self._overrides.get() if self._overridden else None
        target = overrides.get(name) if overrides else None
        if target is None and (target := self._targets.get(name)) is None:
            raise not_found(name, list(self._targets))
        manager = target.manager
        if manager is None:  # not an agentool: only its agent can answer
            kwargs: dict[str, Any] = {} if deps is _UNSET else {'deps': deps}
            return (await self.run(name, input, **kwargs)).output
        if type(input) is str:
            data: str | bytes = input
        elif type(input) is dict:
            try:
                data = to_json(input, by_alias=True, fallback=serialise_fallback)
            except PydanticSerializationError:
                data = serialise(name, input)  # raises the typed error
        else:
            data = serialise(name, input)
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
        # `_enter`, inlined: this is the hot path.
        frame = _frame.get()
        if frame is not None and frame[0] is self and (frame[1] is not None or frame[2]):
            if name in (chain := frame[2]):
                raise cycle_error([*chain[chain.index(name) :], name])
            scope = frame[1]
            if owner := (scope is None and not target.leaf):
                scope = RunScope()
            token = _frame.set((self, scope, (*chain, name)))
        else:
            owner = not target.leaf
            scope = RunScope() if owner else None
            token = _frame.set((self, scope, target.chain))
        try:
            try:
                if deps is _UNSET:
                    if not target.needs_deps or (plan := self._plan(target)) is None:
                        deps = None
                    elif plan.needs_scope:
                        deps = await build_deps(plan, scope)
                    else:  # only handles: no await needed
                        assert plan.construct is not None
                        deps = plan.construct(**plan.handles)
                ctx = run_context(target, deps, data) if target.takes_ctx else target.no_ctx
                # `in_trace()`, inlined: an empty OpenTelemetry context (the untraced case) costs one read.
                if self._tracer is None and not ((otel := get_current()) and get_current_span(otel).is_recording()):
                    # `execute` inlined (`invoke` + the output check): one coroutine fewer per call.
                    result = await manager.invoke(ctx, validated)  # pyright: ignore[reportArgumentType]
                    if manager.checks_output and type(result) is not manager.output_class:
                        result = manager.check_output(validated, result)
                else:
                    with operation_span(name, manager.operation_of(validated), tracer=self._tracer):
                        result = await manager.execute(ctx, validated)  # pyright: ignore[reportArgumentType]
            except ModelRetry as retry:
                raise retry_error(manager.name, retry.message) from None
            except ToolFailed as failed:
                raise failed_error(manager.name, failed.message) from None
        except BaseException as error:
            if owner and scope is not None and scope.owned:
                await scope.aclose(error)
            raise
        finally:
            _frame.reset(token)
        if owner and scope is not None and scope.owned:
            await scope.aclose(None)
        if target.typed_output or isinstance(result, str):
            return result
        return to_json(result).decode()  # an untyped agentool's run output is its JSON text

    async def create_deps(self, name: str) -> Any:
        """The deps `run(name, ...)` would pass: an instance of the agent's `deps_type`, or `None`.

        Inside a run (or `run_scope()`) its resources belong to that run; outside one, closing
        them is the caller's job.
        """
        target = self._target(name)
        frame = _frame.get()
        scope = frame[1] if frame is not None and frame[0] is self else None
        return await self._deps(target, RunScope() if scope is None else scope)

    @asynccontextmanager
    async def run_scope(self) -> AsyncGenerator[None]:
        """Make the block one run: runs and calls inside share run-scoped resources, closed on exit."""
        frame = _frame.get()
        if frame is not None and frame[0] is self and frame[1] is not None:
            yield  # already inside a run: join it
            return
        scope = RunScope()
        token = _frame.set((self, scope, frame[2] if frame is not None and frame[0] is self else ()))
        try:
            yield
        except BaseException as error:
            await scope.aclose(error)
            raise
        finally:
            _frame.reset(token)
        await scope.aclose(None)

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
        problems += resource_problems(self._providers)
        unique = list({p.message: p for p in problems}.values())
        if unique:
            listing = ''.join(f'\n  - {type(p).__name__}: {p.message}' for p in unique)
            raise InjectorValidationError(f'the injector found {len(unique)} problem(s):{listing}', problems=unique)

    def clear(self) -> None:
        """Forget every agent, factory and cached plan (overrides end with their `with` blocks)."""
        self._targets.clear()
        self._providers.clear()
        self._shapes.clear()
        self._plans.clear()
        self._handles.clear()

    # --- internals -----------------------------------------------------------------------------

    def _target(self, name: str) -> Target:
        overrides = self._overrides.get()
        if overrides and (target := overrides.get(name)) is not None:
            return target
        if (target := self._targets.get(name)) is None:
            raise not_found(name, list(self._targets))
        return target

    def _enter(self, name: str) -> tuple[Token[_Frame | None], RunScope, bool]:
        """Enter a run of `name`: nested in the run in progress (checking for a cycle), or a new one."""
        frame = _frame.get()
        if frame is not None and frame[0] is self and (frame[1] is not None or frame[2]):
            if name in (chain := frame[2]):
                raise cycle_error([*chain[chain.index(name) :], name])
            scope, owner = (frame[1], False) if frame[1] is not None else (RunScope(), True)
            return _frame.set((self, scope, (*chain, name))), scope, owner
        scope = RunScope()
        return _frame.set((self, scope, (name,))), scope, True

    async def _deps(self, target: Target, scope: RunScope | None) -> Any:
        plan = self._plan(target)
        return None if plan is None else await build_deps(plan, scope)

    def _plan(self, target: Target) -> DepsPlan | None:
        if not target.needs_deps:
            return None
        plan = self._plans.get(target.deps_type, _UNSET)
        if plan is _UNSET:
            shape = self._shape(target.deps_type)
            for dependency in shape.handles:  # a handle on a non-agentool is refused now, not at its first use
                self._require_agentool(target.name, dependency.agentool)
            plan = self._plans[target.deps_type] = compile_deps(target.name, shape, self._providers, self.handle)
        return plan

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


def get_injector() -> AgenToolInjector:
    """The injector in effect: the one running the current agentool, else the innermost
    `use_injector()` scope, else the default injector of the registry in effect.

    Pairing the default injector with the registry keeps them consistent: a fresh registry
    (`use_registry()`) comes with a fresh injector, and the process default with the process default.
    """
    frame = _frame.get()
    if frame is not None:
        return frame[0]
    # The registry owns its default injector, so the two are collected together: a global map from
    # registry to injector would keep every scoped registry alive through the agents it holds.
    companion = vars(get_registry())
    injector = companion.get(_COMPANION)
    if injector is None:
        injector = companion[_COMPANION] = AgenToolInjector()
    return injector


@contextmanager
def use_injector(injector: AgenToolInjector | None = None) -> Generator[AgenToolInjector]:
    """Make `injector` (a fresh one by default) the injector in effect inside the block.

    Task-local (a context variable) and restored on exit, even on error.
    """
    injector = AgenToolInjector() if injector is None else injector
    frame = _frame.get()
    keep = frame is not None and frame[0] is injector
    token = _frame.set(frame if keep and frame is not None else (injector, None, ()))
    try:
        yield injector
    finally:
        _frame.reset(token)
