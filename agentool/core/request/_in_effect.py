"""The injector in effect, as the core's own surfaces reach it without importing the injector.

The injector package builds on the core, so the core cannot import it; what the core needs of it
is named by `InjectorInEffect`. The injector in effect is the task-local `frame`'s, else the
default injector the registry in effect keeps (`AgenToolRegistry.default_injector`), which
`get_injector()` creates.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any, NamedTuple, Protocol, TypeAlias

__all__ = (
    'Entry',
    'Frame',
    'GateTable',
    'InjectorInEffect',
    'KeepsInjector',
    'frame',
    'injector_in_effect',
    'leave',
)

GateTable = dict[tuple[int, int], Any]
"""Locks by (event loop, tool function), each with the count of calls holding or awaiting it; `(0, tool)` (no
loop has id 0) holds the lock shared by every loop. One per injector: `InjectorInEffect.serial_calls`."""


class KeepsInjector(Protocol):
    """A registry, as the core sees it: it keeps its default injector (`AgenToolRegistry`)."""

    default_injector: InjectorInEffect | None


class Frame(NamedTuple):
    """What travels with the task while an injector runs: the injector, the run and its chain of agentools."""

    injector: InjectorInEffect
    scope: Any
    """The run in progress: its `RunScope`, or `None` outside one."""
    chain: tuple[str, ...]
    """The agentools calling each other in this task, outermost first (a repeat is a cycle)."""


Entry: TypeAlias = 'tuple[Token[Frame | None] | None, Any, bool]'
"""A frame entered for one call or run, and what `leave` undoes: the token that resets the frame (`None`
when the call joined the frame in effect), the run scope the call runs in (or `None`) and whether the call
made that scope, so leaving closes it. (A plain tuple: the direct path makes one per call.)"""


class InjectorInEffect(Protocol):
    """What the core asks of the injector in effect (`AgenToolInjector` is the one implementation)."""

    serial_calls: GateTable
    """The locks of its `concurrent_safe=False` routes."""
    kept_deps: dict[Any, Any]
    """Deps it keeps by deps type, handed out as they are (read before asking `deps_for`)."""

    def enter(self, target: Any, builds: bool) -> Entry:
        """Enter the frame for one call: of its own `target` (its direct path), or of a surface's call."""
        ...

    async def deps_for(self, target: Any, deps_type: Any, scope: Any) -> Any:
        """The deps of a call given none of `target` (its own, or an agentool's name), in run `scope`."""
        ...


frame: ContextVar[Frame | None] = ContextVar('agentool_injector_frame', default=None)
"""Travels with the task: agentools calling each other share the run's resources and chain,
concurrent tasks do not."""


def injector_in_effect(
    registry: Callable[[], KeepsInjector], make: Callable[[], InjectorInEffect] | None = None
) -> InjectorInEffect | None:
    """The injector of the frame, else the default injector of `registry()` (the one in effect), made by
    `make` when it has none."""
    current = frame.get()
    if current is not None:
        return current.injector
    # The registry owns its default injector, so the two are collected together: a global map from
    # registry to injector would keep every scoped registry alive through the agents it holds.
    kept = registry()
    if kept.default_injector is None and make is not None:
        kept.default_injector = make()
    return kept.default_injector


async def leave(entry: Entry, error: BaseException | None) -> None:
    """Leave a frame entered for a call or run: close the run scope it owns (the one place a run's
    resources are closed), then restore the frame it found, whatever the closing raises."""
    token, scope, closes = entry
    try:
        if closes and scope is not None and scope.owned:
            await scope.aclose(error)
    finally:
        if token is not None:
            frame.reset(token)
