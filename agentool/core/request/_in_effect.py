"""The injector in effect, reached by the core without importing the injector (which builds on it).

It is the task-local `frame`'s, else the registry's `default_injector`.
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
    'frame',
    'injector_in_effect',
    'leave',
)

GateTable = dict[tuple[int, int], Any]
"""An injector's locks by (event loop, tool function) for `SerialGate`; `(0, tool)` is shared by every loop."""


class KeepsInjector(Protocol):
    default_injector: InjectorInEffect | None


class Frame(NamedTuple):
    """What travels with the task while an injector runs: the injector, the run and its chain of agentools."""

    injector: InjectorInEffect
    scope: Any
    """The run in progress: its `RunScope`, or `None` outside one."""
    chain: tuple[str, ...]
    """The agentools calling each other in this task, outermost first (a repeat is a cycle)."""


Entry: TypeAlias = 'tuple[Token[Frame | None] | None, Any, bool]'
"""What `leave` undoes: the frame's reset token (`None`: joined), the run scope, whether the call made it."""


class InjectorInEffect(Protocol):
    """What the core asks of the injector in effect (`AgenToolInjector` is the one implementation)."""

    serial_calls: GateTable
    kept_deps: dict[Any, Any]
    """Deps it keeps by deps type, handed out as they are (read before asking `deps_for`)."""

    def enter(self, target: Any, builds: bool) -> Entry: ...

    async def deps_for(self, target: Any, deps_type: Any, scope: Any) -> Any: ...


frame: ContextVar[Frame | None] = ContextVar('agentool_injector_frame', default=None)
"""Travels with the task: nested calls share the run's resources and chain, concurrent tasks do not."""


def injector_in_effect(
    registry: Callable[[], KeepsInjector], make: Callable[[], InjectorInEffect] | None = None
) -> InjectorInEffect | None:
    """The frame's injector, else `registry()`'s default one (made by `make` when it has none)."""
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
    """Close the run scope `entry` owns (the one place a run's resources are closed), then restore the frame."""
    token, scope, closes = entry
    try:
        if closes and scope is not None and scope.owned:
            await scope.aclose(error)
    finally:
        if token is not None:
            frame.reset(token)
