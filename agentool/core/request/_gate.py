"""One call at a time for a route declared `concurrent_safe=False`, on every surface.

Every surface reaches a tool through `AgenToolManager.invoke`, so the gate sits there. The calls
that wait for each other are those of one tool function through one injector (they share its
deps); the table of locks belongs to the injector in effect. A call outside any injector's frame
waits only for the calls of its own gate.

One injector may serve several event loops at once (threads): the calls of each loop queue on an
`asyncio.Lock`, and the head of each queue then takes a `threading.Lock` shared by every loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from ._in_effect import GateTable, frame

__all__ = ('SerialGate',)

_GUARD = threading.Lock()
"""Guards the tables' bookkeeping only: one injector may serve several event loops (threads)."""

_held: ContextVar[frozenset[tuple[int, int]]] = ContextVar('agentool_serial_held', default=frozenset())
"""The gates (table, tool) the running call (and so the calls it makes) holds: a call made from inside one
never waits for it (a tool delegating to an agentool that routes to the same tool would otherwise wait for
itself), also on another event loop (a sync tool calling `run_sync` in its worker thread)."""


class _Held:
    """A lock and the count of calls holding or awaiting it (dropped from the table at zero)."""

    __slots__ = ('lock', 'users')

    def __init__(self, lock: Any) -> None:
        self.lock = lock
        self.users = 0


async def _acquire(lock: threading.Lock) -> None:
    """Take `lock` without blocking the event loop: at once when free, else in a worker thread."""
    if lock.acquire(blocking=False):
        return
    waiter = asyncio.ensure_future(asyncio.to_thread(lock.acquire))
    try:
        await asyncio.shield(waiter)
    except asyncio.CancelledError:
        # The thread still takes the lock: hand it back then, or every later call would wait forever.
        waiter.add_done_callback(lambda _: lock.release())
        raise


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
        table = self._own if (current := frame.get()) is None else current.injector.serial_calls
        key, shared_key = (id(asyncio.get_running_loop()), id(self._tool)), (0, id(self._tool))
        held = _held.get()
        if (id(table), id(self._tool)) in held:
            return await start()
        with _GUARD:
            waiting = table.get(key)
            if waiting is None:
                waiting = table[key] = _Held(asyncio.Lock())
            shared = table.get(shared_key)
            if shared is None:
                shared = table[shared_key] = _Held(threading.Lock())
            waiting.users += 1
            shared.users += 1
        try:
            async with waiting.lock:
                await _acquire(shared.lock)
                token = _held.set(held | {(id(table), id(self._tool))})
                try:
                    return await start()
                finally:
                    _held.reset(token)
                    shared.lock.release()
        finally:
            with _GUARD:
                waiting.users -= 1
                if not waiting.users:
                    del table[key]
                shared.users -= 1
                if not shared.users:
                    del table[shared_key]
