"""`AgenToolInjector`: run agentools by name, wire their dependencies, swap any of them in tests.

Three things travel with the running task (as context variables), never through process globals:
the injector in effect, the run in progress (its resources and the chain of agentools calling
each other, which is how a cycle is caught before it recurses) and the overrides entered with
`injector.override(...)`. Agentools calling each other through the injector (`get_injector()`,
a deps handle) therefore share the run's resources and see the caller's overrides, while
concurrent tasks see only their own.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar, Token
from typing import Any, cast

from opentelemetry.context import get_current
from opentelemetry.trace import Tracer, TracerProvider, get_current_span
from pydantic import BaseModel, ValidationError
from pydantic_ai import AgentRunResult, ModelRetry, ToolFailed
from pydantic_ai.agent import AbstractAgent
from pydantic_core import PydanticSerializationError, to_json

from ...errors import ConfigurationError
from ...telemetry import TRACER_NAME, operation_span
from .._gate import GateTable
from .._lookup import not_found
from .._tool_errors import failed_error, retry_error
from ..durability import active_dispatcher, is_durable
from ..manager import AgenToolManager
from ..output import json_output_text
from ..registry import AgenToolRegistry
from ._deps import OwnDeps, own_deps_form, run_without_loop
from ._frame import Frame as _Frame
from ._frame import frame as _frame
from ._graph import cycle_error
from ._resources import RunScope
from ._targets import (
    Target,
    agent_target,
    run_context,
    serialise,
    serialise_fallback,
    stub_target,
)
from ._wiring import UNSET, Wiring

__all__ = ('AgenToolInjector',)

_new = object.__new__


class AgenToolInjector(Wiring):
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
        super().__init__(registry=registry)
        self._tracer: Tracer | None = None
        self.tracer_provider = tracer_provider
        self._overridden = False
        self.serial_calls: GateTable = {}
        """The locks that run a `concurrent_safe=False` tool's calls through this injector one at a time."""
        # Which deps builder a subclass overrides (the guide's `CustomInjector`), found once: a surface
        # building the deps of a call given none reads this one attribute to know whether to ask it.
        self._own_deps: OwnDeps | None = own_deps_form(type(self), AgenToolInjector)
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
        self._tracer = None if provider is None else provider.get_tracer(TRACER_NAME)

    # --- agents --------------------------------------------------------------------------------

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
                raise not_found(name, self._targets, kind='agent', place='with the injector')
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
        data = serialise(name, input)
        prompt = data if isinstance(data, str) else data.decode()
        # The same error the model raises, before any resource is made.
        validated = None if (manager := target.manager) is None else manager.validate_json(prompt)
        token, scope, owner = self._enter(name)
        try:
            if 'deps' not in run_kwargs:
                if validated is not None and not _reads_deps(manager, validated):
                    run_kwargs['deps'] = None  # as `agent.run`: deps are built only for a tool taking a context
                elif self._own_deps is not None and target.needs_deps:
                    run_kwargs['deps'] = await self.acreate_deps(name)
                else:
                    run_kwargs['deps'] = await self._supply(target, scope)
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
                raise not_found(name, self._targets, kind='agent', place='with the injector')
        except TypeError:  # an unhashable name
            raise not_found(name, self._targets, kind='agent', place='with the injector') from None
        # Not an agentool, or an output function reshapes its output: only its agent can answer.
        if (manager := target.direct) is None:
            kwargs: dict[str, Any] = {} if deps is UNSET else {'deps': deps}
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
        # In a durable run, the call is one unit of its engine (unless the route opts out).
        dispatcher = active_dispatcher() if deps is UNSET else None
        if dispatcher is not None and is_durable(manager, manager.operation_of(validated)):
            return await dispatcher.dispatch_call(self, manager, name, data, validated)
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
                if deps is UNSET:
                    if not target.needs_deps or not _reads_deps(manager, validated):
                        deps = None  # as `agent.run`: deps are built only for a tool taking a context
                    elif self._own_deps is not None:  # the subclass's own deps, as on every surface
                        deps = await self.acreate_deps(name)
                    elif (deps := self._kept.get(target.deps_type, UNSET)) is UNSET:  # kept: one dict read
                        deps = await self._supply(target, scope)
                if (ctx_type := target.ctx_type) is not None:  # `run_context`, inlined: the common case
                    ctx = _new(ctx_type)
                    if deps is not None:  # the class says `None`
                        ctx.deps = deps
                    ctx.prompt = data if isinstance(data, str) else data.decode()
                elif not target.takes_ctx:
                    ctx = None  # no routed tool takes a context, and the manager reads none itself
                else:
                    ctx = run_context(target, deps, data)
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

    # --- internals -----------------------------------------------------------------------------

    def _target(self, name: str) -> Target:
        if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers pass anything
            raise not_found(name, self._targets, kind='agent', place='with the injector')
        overrides = self._overrides.get()
        if overrides and (target := overrides.get(name)) is not None:
            return target
        if (target := self._targets.get(name)) is None:
            raise not_found(name, self._targets, kind='agent', place='with the injector')
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

    async def _wired_deps(self, name: str) -> Any:
        """The deps of `name` as the wiring builds them, in the run in progress (else in a scope of their own)."""
        frame = _frame.get()
        scope = frame[1] if frame is not None and frame[0] is self else None
        return await self._supply(self._target(name), RunScope() if scope is None else scope)


def _reads_deps(manager: AgenToolManager | None, validated: BaseModel | None) -> bool:
    """Whether the tool `validated` routes to takes a context, the only way deps reach it."""
    if manager is None or validated is None:
        return True
    return manager.tool_for(manager.operation_of(validated)).takes_ctx
