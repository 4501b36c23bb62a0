"""One call at a time for a route declared `concurrent_safe=False`, on every surface.

The calls of one tool through one injector wait for each other (they share its deps): each event
loop's queue on an `asyncio.Lock`, whose head takes a `threading.Lock` shared by every loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ._in_effect import GateTable, frame

__all__ = ('SerialGate',)

_GUARD = threading.Lock()
"""Guards the tables' bookkeeping only: one injector may serve several event loops (threads)."""

_held: ContextVar[frozenset[tuple[int, int]]] = ContextVar('agentool_serial_held', default=frozenset())
"""The gates (table, tool) the running call holds: a call made from inside one never waits for it (a
tool delegating back to itself would wait forever), on any event loop."""


@dataclass(slots=True)
class _Held:
    """A lock and the count of calls holding or awaiting it (dropped from the table at zero)."""

    lock: Any
    users: int = 0


async def _acquire(lock: threading.Lock) -> None:
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
    """Runs the calls of one tool one at a time per injector; a lock exists only while calls use it."""

    __slots__ = ('_own', '_tool')

    def __init__(self, tool: object) -> None:
        self._tool = tool
        self._own: GateTable = {}

    async def run(self, start: Callable[[], Awaitable[Any]]) -> Any:
        """Start the call (`start()`) once no other call of this tool holds the gate, and await it (a call
        cancelled while it waits never ran its tool)."""
        table = self._own if (current := frame.get()) is None else current.injector.serial_calls
        key, shared_key = (id(asyncio.get_running_loop()), id(self._tool)), (0, id(self._tool))
        held = _held.get()
        if (id(table), id(self._tool)) in held:
            return await start()
        with _GUARD:
            waiting = table.get(key) or table.setdefault(key, _Held(asyncio.Lock()))
            shared = table.get(shared_key) or table.setdefault(shared_key, _Held(threading.Lock()))
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
                for held_key, held_lock in ((key, waiting), (shared_key, shared)):
                    held_lock.users -= 1
                    if not held_lock.users:
                        del table[held_key]
