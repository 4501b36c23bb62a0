"""The injector in effect, as the core's own surfaces reach it without importing the injector.

The injector package builds on the core (it builds and recognises agentool agents), so the core
cannot import it. What the core's surfaces need of it is small: the deps of a call given none (the
plain model string, `AgenToolCapability`'s manager tool) and the locks of `concurrent_safe=False`
routes (`_gate`, in `AgenToolManager.invoke`). Both come from the injector in effect, which lives
here, below both: the task-local `frame` the injector sets when it runs or is entered, else the
default injector the registry in effect keeps (`COMPANION`), which `get_injector()` creates.
Nothing is plugged in at import time: a surface that starts without a frame looks it up here.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar, Token
from typing import Any, Protocol, TypeAlias

from ...errors import AgenToolNotFoundError
from ._missing_deps import deps_admit_none, missing_deps_error

__all__ = (
    'COMPANION',
    'Frame',
    'GateTable',
    'InjectorInEffect',
    'deps_in_effect',
    'enter',
    'frame',
    'injector_in_effect',
    'leave',
)

GateTable = dict[tuple[int, int], Any]
"""Locks by (event loop, tool function), each with the count of calls holding or awaiting it; `(0, tool)` (no
loop has id 0) holds the lock shared by every loop. One per injector: `InjectorInEffect.serial_calls`."""

COMPANION = 'agentool.injector'
"""Where a registry keeps its default injector (a key no attribute name can collide with)."""


class InjectorInEffect(Protocol):
    """What the core asks of the injector in effect (`AgenToolInjector` is the one implementation)."""

    @property
    def serial_calls(self) -> GateTable:
        """The locks of its `concurrent_safe=False` routes."""
        ...

    def call_deps(self, name: str, deps_type: Any) -> AbstractAsyncContextManager[Any]:
        """The deps of one call of agentool `name` given none, for the block."""
        ...


Frame: TypeAlias = 'tuple[InjectorInEffect, Any, tuple[str, ...]]'
"""The injector in effect, the run in progress (its resource scope, `None` outside one) and the chain of
agentools in it."""

frame: ContextVar[Frame | None] = ContextVar('agentool_injector_frame', default=None)
"""A context variable, so it travels with the task: agentools calling each other share the run's
resources and chain (which is how a cycle is caught before it recurses), concurrent tasks do not."""


def injector_in_effect(registry: Callable[[], object]) -> InjectorInEffect | None:
    """The injector of the frame, else the default injector of `registry()` (the one in effect), if it has one."""
    current = frame.get()
    if current is not None:
        return current[0]
    injector: InjectorInEffect | None = vars(registry()).get(COMPANION)
    return injector


def enter(registry: Callable[[], object]) -> Token[Frame | None] | None:
    """Make the injector in effect the frame's for a call that starts without one (undo with `leave`).

    So that what the call does (a gated route, agentools it calls) meets the injector every other
    surface meets. `None` when there is a frame already, or no injector to enter.
    """
    if frame.get() is not None:
        return None
    injector: InjectorInEffect | None = vars(registry()).get(COMPANION)
    return None if injector is None else frame.set((injector, None, ()))


def leave(token: Token[Frame | None] | None) -> None:
    """Undo `enter`."""
    if token is not None:
        frame.reset(token)


@asynccontextmanager
async def deps_in_effect(name: str, deps_type: Any, registry: Callable[[], object]) -> AsyncGenerator[Any]:
    """The deps of one call of agentool `name` given none, from the injector in effect (`call_deps`).

    With no injector at all (none was ever made for the registry in effect), as an injector that
    does not know `name`: `None` when `deps_type` admits it.

    Raises:
        MissingDepsError: they cannot be built and `deps_type` does not admit `None`.
    """
    injector = injector_in_effect(registry)
    if injector is not None:
        async with injector.call_deps(name, deps_type) as deps:
            yield deps
        return
    if not deps_admit_none(deps_type):
        unknown = AgenToolNotFoundError(f'no injector holds {name!r}', agentool=name)
        raise missing_deps_error(name, deps_type, unknown)
    yield None
