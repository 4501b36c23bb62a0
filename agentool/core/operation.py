"""One operation, run the same way from every surface: `run_operation`.

Every surface ends here and says how it differs in a `Policy`; the steps and their order are told
in docs/architecture.md ("The story of a call").
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry.context import get_current
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Tracer, get_current_span
from pydantic import BaseModel
from pydantic_ai import ModelRetry, RunContext, ToolFailed

from ..errors import AgenToolNotFoundError
from ..telemetry import Surface, operation_span
from .manager import AgenToolManager
from .registry import get_registry
from .request import (
    InjectorInEffect,
    active_dispatcher,
    declares_deps,
    deps_admit_none,
    direct_context,
    failed_error,
    frame,
    injector_in_effect,
    is_durable,
    leave,
    missing_deps_error,
    operation_name,
    retry_error,
)

__all__ = ('DepsSource', 'Policy', 'UNSET', 'deps_from', 'run_operation')

UNSET: Any = object()
"""No deps given (`deps=None` counts as none too, on every surface that takes them)."""

DepsSource = Callable[[], AbstractAsyncContextManager[Any]]
"""A surface's own deps for one call given none (the toolset's and MCP's `deps`, a `DepsProvider`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """How one surface runs its operations: made once per surface, read on every call."""

    surface: Surface
    typed_errors: bool
    """A tool's `ModelRetry` / `ToolFailed` end the call as typed errors, else reach pydantic-ai."""
    tracer: Tracer | None = None
    """Where every call's span goes; `None`: the call's own tracer, else the global one."""
    meter_provider: MeterProvider | None = None
    """Where every call's metrics go; `None`: the global meter provider, when a span opens."""
    quiet: bool = field(init=False)
    """Untraced calls skip telemetry altogether (the direct path with no provider of its own)."""

    def __post_init__(self) -> None:
        # Read on every direct call: worked out once (frozen, hence `object.__setattr__`).
        quiet = self.surface == 'direct' and self.tracer is None and self.meter_provider is None
        object.__setattr__(self, 'quiet', quiet)


async def run_operation(
    policy: Policy,
    manager: AgenToolManager,
    validated: BaseModel,
    ctx: RunContext[Any] | None,
    deps: Any = UNSET,
    provider: DepsSource | None = None,
    host: InjectorInEffect | None = None,
    target: Any = None,
    data: str | bytes | None = None,
    tracer: Tracer | None = None,
) -> Any:
    """Run the operation `validated` names: durability, deps, the frame, the call, errors, leaving.

    The direct path (`host`, `target` and `data`, the input as JSON text, given) passes every argument
    by position; `ctx` is then the template every call copies (`None` when no routed tool takes one).
    `provider` is the surface's own deps source; `tracer` the run's own, when the policy names none.
    """
    operation: str | None = None  # named when a step needs it (the untraced direct path may not)
    if target is None:
        needs_deps = declares_deps(manager.config.deps_type)
        host = injector_in_effect(get_registry)
    else:
        needs_deps = target.needs_deps
    dispatcher = active_dispatcher() if deps is UNSET or data is None else None
    durable = False
    if dispatcher is not None:
        operation = operation_name(getattr(validated, manager.operation_field))
        if (durable := is_durable(manager, operation)) and data is not None:
            return await dispatcher.dispatch_call(host, manager, _name(manager, target), data, validated)
    # A surface's own provider is asked for any tool taking a context; the injector, when there is a deps type.
    builds = (
        deps is UNSET
        and (needs_deps or provider is not None)
        and (operation or (operation := operation_name(getattr(validated, manager.operation_field))))
        in manager.ctx_operations
    )
    if deps is UNSET:
        deps = None  # as `agent.run`: deps are built only for a tool taking a context
    entry = None if host is None else host.enter(target, builds)  # (token, scope, closes)
    close_deps: Callable[..., Any] | None = None
    try:
        if builds:
            deps_type = manager.config.deps_type if target is None else target.deps_type
            if provider is not None:
                opened = provider()
                deps, close_deps = await opened.__aenter__(), opened.__aexit__
            elif host is None:  # no injector at all: as an injector without the agentool
                if not deps_admit_none(deps_type):
                    unknown = AgenToolNotFoundError(f'no injector holds {manager.name!r}', agentool=manager.name)
                    raise missing_deps_error(manager.name, deps_type, unknown)
            # Kept deps (the common case) are one dict read.
            elif (deps := host.kept_deps.get(deps_type, UNSET)) is UNSET:
                assert entry is not None
                deps = await host.deps_for(manager.name if target is None else target, deps_type, entry[1])
        if ctx is not None:
            if data is not None:
                ctx = direct_context(ctx, deps, data if isinstance(data, str) else data.decode())
            elif builds:
                ctx = replace(ctx, deps=deps)
        # `in_trace()`, inlined: an empty OpenTelemetry context (the untraced case) costs one read.
        if policy.quiet and not durable and not ((otel := get_current()) and get_current_span(otel).is_recording()):
            # The manager's hot-path pair (`invoke`, then the output check): one coroutine fewer than `execute`.
            result = await manager.invoke(ctx, validated)  # pyright: ignore[reportArgumentType]
            if manager.checks_output and type(result) is not manager.output_class:
                result = manager.check_output(validated, result)
        else:
            span = operation_span(
                _name(manager, target),
                operation or operation_name(getattr(validated, manager.operation_field)),
                surface=policy.surface,
                tracer=policy.tracer or tracer,
                meter_provider=policy.meter_provider,
            )
            with span:
                if durable:
                    assert dispatcher is not None
                    assert ctx is not None
                    result = await dispatcher.dispatch_execute(ctx, manager, validated)
                else:
                    result = await manager.execute(ctx, validated)  # pyright: ignore[reportArgumentType]
    except BaseException as raised:
        error = _mapped(policy, manager.name, raised)
        try:
            if close_deps is not None:
                await close_deps(type(error), error, error.__traceback__)
        finally:
            if entry is not None:
                await leave(entry, error)
        if error is raised:
            raise
        raise error from None
    if close_deps is not None:
        await close_deps(None, None, None)
    if entry is not None:
        token, scope, closes = entry
        if closes and scope is not None and scope.owned:
            await leave(entry, None)
        elif token is not None:
            frame.reset(token)
    return result


def _name(manager: AgenToolManager, target: Any) -> str:
    """The agentool a call runs (on the direct path an override may answer with another's manager)."""
    return manager.name if target is None else target.name


def _mapped(policy: Policy, agentool: str, error: BaseException) -> BaseException:
    """The error a call ends with: a deterministic run's typed error for a retry or a reported failure."""
    if policy.typed_errors:
        if isinstance(error, ModelRetry):
            return retry_error(agentool, error.message)
        if isinstance(error, ToolFailed):
            return failed_error(agentool, error.message)
    return error


def deps_from(function: Callable[[], Any]) -> DepsSource:
    """A `DepsSource` of a surface's `deps` function: what it returns, or what its awaitable gives."""

    @asynccontextmanager
    async def source() -> AsyncGenerator[Any]:
        given = function()
        yield await given if inspect.isawaitable(given) else given

    return source
