"""Cancelling a run mid-tool, with the example SQLite storage: the cancellation propagates as
`CancelledError` (or `TimeoutError` under `asyncio.timeout`), never wrapped; every write is either
committed whole or not applied; and the store stays usable afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue
from pydantic_ai import Agent

from agentool import get_injector
from examples.storage import MEMORY, SQLiteStore, StorageDeps, StorageResult, WriteResult, create_storage, use_store

HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: more writes and more rounds of random cancellations."""

Run = Callable[[str], Coroutine[Any, Any, Any]]


class SignallingStore(SQLiteStore):
    """A store that says when a write has reached it, i.e. when the storage tool is running."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self.writing = asyncio.Event()

    async def write(self, key: str, data: object) -> WriteResult:
        self.writing.set()
        return await super().write(key, data)


def surfaces(store: SQLiteStore) -> dict[str, Run]:
    """The ways a write reaches the storage agentool: with deps, the plain model string, the direct path."""
    agent = create_storage(replace=True)

    async def deps_run(prompt: str) -> Any:
        return (await agent.run(prompt, deps=StorageDeps(store=store))).output

    async def plain_run(prompt: str) -> Any:
        with use_store(store):
            return (await Agent('agentool:storage', output_type=StorageResult).run(prompt)).output

    async def direct_call(prompt: str) -> Any:
        return await get_injector().call('storage', prompt, deps=StorageDeps(store=store))

    return {'agent.run with deps': deps_run, 'plain Agent': plain_run, 'injector.call': direct_call}


SURFACES = ['agent.run with deps', 'plain Agent', 'injector.call']


def write(key: str, data: JsonValue) -> str:
    return json.dumps({'operation': 'write', 'key': key, 'data': data})


def value_for(i: int) -> JsonValue:
    """A value big enough that a half-written one would show: 200 entries, all derived from `i`."""
    return {'id': i, 'items': [f'{i}-{n}' for n in range(200)]}


@pytest.fixture
async def file_store(tmp_path: Path) -> AsyncIterator[SignallingStore]:
    store = SignallingStore(tmp_path / 'store.sqlite3')
    await store.exists('warm-up')  # the database and its schema exist before any test writes
    yield store
    await store.aclose()


def assert_no_lock_left(path: str) -> None:
    """Another connection can take the write lock at once: no transaction was left open."""
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute('BEGIN IMMEDIATE')
        other.execute('ROLLBACK')
    finally:
        other.close()


@pytest.mark.parametrize('surface', SURFACES)
async def test_a_run_cancelled_mid_write_settles_committed_or_not(file_store: SignallingStore, surface: str) -> None:
    run = surfaces(file_store)[surface]
    with sqlite3.connect(file_store.path, isolation_level=None) as holder:
        holder.execute('BEGIN IMMEDIATE')  # another writer holds the lock: the write blocks inside the tool
        task = asyncio.create_task(run(write('k', value_for(1))))
        await file_store.writing.wait()  # the tool is running
        await asyncio.sleep(0.1)  # and, all but surely, its transaction has started in the worker
        task.cancel()
        await asyncio.sleep(0.05)
        returned_while_locked = task.done()
        holder.execute('COMMIT')
    with pytest.raises(asyncio.CancelledError):
        await task
    stored = await file_store.read('k')
    if stored.found:  # the transaction had started: it was committed whole, and the run waited for it
        assert stored.data == value_for(1)
        assert not returned_while_locked
    assert_no_lock_left(file_store.path)
    assert isinstance(await run(write('k', value_for(2))), WriteResult)  # the store is still usable
    assert (await file_store.read('k')).data == value_for(2)


@pytest.mark.parametrize('surface', SURFACES)
async def test_a_timeout_mid_write_raises_timeout_error_and_settles(file_store: SignallingStore, surface: str) -> None:
    """`asyncio.timeout` turns the cancellation into `TimeoutError` only if it propagates unchanged."""
    run = surfaces(file_store)[surface]
    with sqlite3.connect(file_store.path, isolation_level=None) as holder:
        holder.execute('BEGIN IMMEDIATE')
        asyncio.get_running_loop().call_later(0.3, holder.execute, 'COMMIT')
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await run(write('k', value_for(3)))
    stored = await file_store.read('k')
    assert not stored.found or stored.data == value_for(3)
    assert_no_lock_left(file_store.path)


class HookedStore(SQLiteStore):
    """A store that calls `on_write(key, data)` as each write reaches it, so a test can cancel right then."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self.on_write: Callable[[str, Any], None] = lambda key, data: None

    async def write(self, key: str, data: object) -> WriteResult:
        self.on_write(key, data)
        return await super().write(key, data)


@pytest.mark.parametrize('path', ['memory', 'file'])
@pytest.mark.parametrize('surface', SURFACES)
async def test_random_cancellations_leave_every_value_whole_or_absent(tmp_path: Path, path: str, surface: str) -> None:
    store = HookedStore(MEMORY if path == 'memory' else tmp_path / 'store.sqlite3')
    run = surfaces(store)[surface]
    rng = random.Random(f'{path}-{surface}')
    loop = asyncio.get_running_loop()
    writes = 200 if HEAVY else 60
    for round_ in range(5 if HEAVY else 2):
        # Distinct keys, plus one key every task overwrites with its own value.
        prompts = [write(f'r{round_}-k{i}', value_for(i)) for i in range(writes)]
        prompts += [write(f'r{round_}-shared', value_for(i)) for i in range(writes)]
        tasks = [asyncio.create_task(run(prompt)) for prompt in prompts]
        cancelled = set(rng.sample(range(len(tasks)), len(tasks) // 2))
        # Half the cancellations land at a random moment of the run, half just as the tool reaches the store.
        at_any_time = set(rng.sample(sorted(cancelled), len(cancelled) // 2))
        for i in at_any_time:
            loop.call_later(rng.random() * 0.3, tasks[i].cancel)

        def cancel_in_tool(key: str, data: Any) -> None:
            # Called only while this round's tasks run, so the loop variables are this round's.
            i = data['id'] + (writes if key.endswith('shared') else 0)
            if i in cancelled and i not in at_any_time:  # noqa: B023
                loop.call_later(rng.random() * 0.002, tasks[i].cancel)  # noqa: B023

        store.on_write = cancel_in_tool
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        for i, outcome in enumerate(outcomes):
            # A cancellation is a bare CancelledError: never wrapped, never another error.
            assert isinstance(outcome, WriteResult) or type(outcome) is asyncio.CancelledError, repr(outcome)
            assert i in cancelled or isinstance(outcome, WriteResult)
        for i in range(writes):
            stored = await store.read(f'r{round_}-k{i}')
            assert stored.data == value_for(i) if stored.found else i in cancelled
        shared = await store.read(f'r{round_}-shared')
        completed = [i for i in range(writes) if isinstance(outcomes[writes + i], WriteResult)]
        assert shared.found or not completed
        assert not shared.found or shared.data in [value_for(i) for i in range(writes)]
    if path == 'file':
        assert_no_lock_left(store.path)
    await store.aclose()
