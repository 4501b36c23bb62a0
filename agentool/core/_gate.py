"""One call at a time for a route declared `concurrent_safe=False`, on every surface.

Every surface (the injector's `call`/`run`, plain and lean runs, the toolset, MCP, dispatch, the
CLI's servers) reaches a tool through `AgenToolManager.invoke`, so the gate sits there. The calls
that wait for each other are those of one tool function through one injector: they share that
injector's deps (also when two agentools route to the same tool and share a deps type). Calls
through another injector (other deps) do not wait. The table of locks belongs to the injector in
effect, which the injector package makes reachable through a slot it fills when imported (the
core cannot import it); without one, each gate keeps its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

__all__ = ('SerialGate', 'GateTable', 'plug_gate_table')

GateTable = dict[tuple[int, int], Any]
"""Locks by (event loop, tool function), each with the count of calls holding or awaiting it."""

_tables: list[Callable[[], GateTable]] = []
_GUARD = threading.Lock()
"""Guards the tables' bookkeeping only: one injector may serve several event loops (threads)."""

_held: ContextVar[frozenset[tuple[int, int, int]]] = ContextVar('agentool_serial_held', default=frozenset())
"""The gates the running call (and so the calls it makes) holds: a call made from inside one never waits
for it (a tool delegating to an agentool that routes to the same tool would otherwise wait for itself)."""


def plug_gate_table(table: Callable[[], GateTable]) -> None:
    """Make `table` give the locks of the injector in effect (the injector package plugs it, once)."""
    _tables[:] = [table]


class _Waiting:
    __slots__ = ('lock', 'users')

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class SerialGate:
    """Runs the calls of one tool one at a time per injector (and event loop).

    A lock exists only while calls hold or await it, so nothing is kept for idle tools or gone injectors.
    """

    __slots__ = ('_own', '_tool')

    def __init__(self, tool: object) -> None:
        self._tool = tool
        self._own: GateTable = {}

    async def run(self, start: Callable[[], Awaitable[Any]]) -> Any:
        """Start the call (`start()`) once no other call of this tool holds the gate, and await it.

        Started only then: a call cancelled while it waits never ran its tool (nor its transform).
        """
        table = _tables[0]() if _tables else self._own
        key = (id(asyncio.get_running_loop()), id(self._tool))
        held = _held.get()
        if (id(table), *key) in held:
            return await start()
        with _GUARD:
            waiting = table.get(key)
            if waiting is None:
                waiting = table[key] = _Waiting()
            waiting.users += 1
        try:
            async with waiting.lock:
                token = _held.set(held | {(id(table), *key)})
                try:
                    return await start()
                finally:
                    _held.reset(token)
        finally:
            with _GUARD:
                waiting.users -= 1
                if not waiting.users:
                    del table[key]
