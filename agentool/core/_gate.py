"""One call at a time for a route declared `concurrent_safe=False`, on every surface.

Every surface (the injector's `call`/`run`, plain and lean runs, the toolset, MCP, dispatch, the
CLI's servers) reaches a tool through `AgenToolManager.invoke`, so the gate sits there: a route's
calls made through one injector wait for each other, since they share that injector's deps. Calls
through another injector (other deps) do not wait. The injector in effect is asked for through a
slot the injector package fills when it is imported (the core cannot import it).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ('SerialGate', 'plug_gate_owner')

_owner: list[Callable[[], object]] = []


def plug_gate_owner(owner: Callable[[], object]) -> None:
    """Make `owner` what names the calls that share deps (the injector package plugs `get_injector`)."""
    _owner[:] = [owner]


class _Waiting:
    __slots__ = ('lock', 'users')

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class SerialGate:
    """Runs one route's calls one at a time per injector (and event loop).

    A lock per injector with calls in progress, dropped when its last call ends, so a gate holds
    nothing for injectors that are idle or gone.
    """

    __slots__ = ('_guard', '_waiting')

    def __init__(self) -> None:
        self._waiting: dict[tuple[int, int], _Waiting] = {}
        self._guard = threading.Lock()  # the table only; one injector may serve several loops (threads)

    async def run(self, start: Callable[[], Awaitable[Any]]) -> Any:
        """Start the call (`start()`) once no other call of this route holds the gate, and await it.

        Started only then: a call cancelled while it waits never ran its tool (nor its transform).
        """
        owner = _owner[0]() if _owner else None
        key = (id(asyncio.get_running_loop()), id(owner))
        with self._guard:
            waiting = self._waiting.get(key)
            if waiting is None:
                waiting = self._waiting[key] = _Waiting()
            waiting.users += 1
        try:
            async with waiting.lock:
                return await start()
        finally:
            with self._guard:
                waiting.users -= 1
                if not waiting.users:
                    del self._waiting[key]
