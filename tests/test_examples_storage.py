from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue
from pydantic_ai import Agent

from agentool import AgenToolRegistry, InputValidationError, UnknownOperationError
from examples.storage import (
    MEMORY,
    PATH_ENV,
    DeleteResult,
    ExistsResult,
    ListResult,
    ReadResult,
    SQLiteStore,
    StorageDeps,
    StoreError,
    WriteResult,
    create_storage,
    default_path,
    default_store,
    use_store,
)

ROOT = Path(__file__).resolve().parent.parent
WRITER = Path(__file__).resolve().parent / 'storage_crash_writer.py'


@pytest.fixture(params=['memory', 'file'])
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    """An in-memory store, then a file-backed one."""
    either = SQLiteStore(MEMORY if request.param == 'memory' else tmp_path / 'data' / 'store.sqlite3')
    yield either
    await either.aclose()


async def run(deps: StorageDeps, **input: Any) -> Any:
    return (await create_storage(replace=True).run(json.dumps(input), deps=deps)).output


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != PATH_ENV}
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    return {**env, **extra}


# --- operations and typed outputs -------------------------------------------------------------------


async def test_every_operation_gives_its_typed_output(any_store: SQLiteStore) -> None:
    deps = StorageDeps(store=any_store)
    value: JsonValue = {'name': 'Ada', 'tags': ['x', 1, 2.5, True, None]}
    assert await run(deps, operation='write', key='user:1', data=value) == WriteResult(key='user:1', created=True)
    assert await run(deps, operation='write', key='user:1', data=value) == WriteResult(key='user:1', created=False)
    assert await run(deps, operation='read', key='user:1') == ReadResult(key='user:1', found=True, data=value)
    assert await run(deps, operation='exists', key='user:1') == ExistsResult(key='user:1', exists=True)
    await run(deps, operation='write', key='team:1', data=None)
    assert await run(deps, operation='list') == ListResult(keys=['team:1', 'user:1'])
    assert await run(deps, operation='list', prefix='user:') == ListResult(prefix='user:', keys=['user:1'])
    assert await run(deps, operation='delete', key='user:1') == DeleteResult(key='user:1', deleted=True)
    assert await run(deps, operation='exists', key='user:1') == ExistsResult(key='user:1', exists=False)
    assert await run(deps, operation='read', key='team:1') == ReadResult(key='team:1', found=True, data=None)


async def test_missing_keys_are_outputs_not_errors(store: SQLiteStore) -> None:
    deps = StorageDeps(store=store)
    assert await run(deps, operation='read', key='nope') == ReadResult(key='nope', found=False)
    assert await run(deps, operation='delete', key='nope') == DeleteResult(key='nope', deleted=False)


async def test_prefix_is_literal_not_a_pattern(store: SQLiteStore) -> None:
    for key in ['a_b', 'axb', 'a%c', 'A_b']:
        await store.write(key, 1)
    assert (await store.list('a_')).keys == ['a_b']
    assert (await store.list('a%')).keys == ['a%c']


@pytest.mark.parametrize(
    ('input', 'expected'),
    [
        ({'operation': 'read'}, "operation 'read' requires field 'key'"),
        ({'operation': 'read', 'key': None}, 'requires a string key'),
        ({'operation': 'read', 'key': ''}, 'at least 1 character'),
        ({'operation': 'write', 'key': 'k'}, "operation 'write' requires field 'data'"),
        ({'operation': 'list', 'key': 'k'}, "operation 'list' does not take field 'key'"),
        ({'operation': 'read', 'key': 'k', 'data': 1}, "does not take field 'data'"),
        ({'operation': 'read', 'key': 'k', 'colour': 1}, "'colour'"),
    ],
)
async def test_bad_input_raises_typed_error(store: SQLiteStore, input: dict[str, Any], expected: str) -> None:
    with pytest.raises(InputValidationError, match=expected) as caught:
        await run(StorageDeps(store=store), **input)
    assert caught.value.agentool == 'storage'
    assert await store.list() == ListResult(keys=[])


async def test_unknown_operation_lists_the_known_ones(store: SQLiteStore) -> None:
    with pytest.raises(UnknownOperationError) as caught:
        await run(StorageDeps(store=store), operation='truncate')
    assert caught.value.details['known'] == ['read', 'write', 'list', 'delete', 'exists']


async def test_value_that_is_not_json_is_refused_before_any_write(store: SQLiteStore) -> None:
    with pytest.raises(ValueError, match='JSON'):
        await store.write('k', float('nan'))
    assert not (await store.exists('k')).exists


def test_create_storage_registers_storage(registry: AgenToolRegistry) -> None:
    create_storage()
    assert 'storage' in registry.list_names()


# --- the database ---------------------------------------------------------------------------------------


async def test_file_store_persists_across_reopen_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / 'nested' / 'dir' / 'store.sqlite3'
    first = SQLiteStore(path)
    await first.write('k', {'v': 1})
    await first.aclose()
    with sqlite3.connect(path) as raw:
        assert raw.execute('PRAGMA journal_mode').fetchone() == ('wal',)
    second = SQLiteStore(path)
    assert await second.read('k') == ReadResult(key='k', found=True, data={'v': 1})
    await second.aclose()


async def test_memory_stores_are_private(store: SQLiteStore) -> None:
    other = SQLiteStore(MEMORY)
    await store.write('k', 1)
    assert not (await other.exists('k')).exists
    await other.aclose()


async def test_constructing_a_store_touches_nothing(tmp_path: Path) -> None:
    path = tmp_path / 'later' / 'store.sqlite3'
    lazy = SQLiteStore(path)
    assert not path.parent.exists()
    await lazy.exists('k')
    assert path.exists()
    await lazy.aclose()


async def test_closed_store_raises_and_close_is_idempotent(store: SQLiteStore) -> None:
    await store.write('k', 1)
    await store.aclose()
    store.close()
    with pytest.raises(StoreError, match='closed'):
        await store.read('k')


async def test_a_lock_held_past_the_timeout_is_a_typed_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / 'store.sqlite3'
    impatient = SQLiteStore(path, timeout=0.05)
    await impatient.exists('warm-up')
    with sqlite3.connect(path, isolation_level=None) as holder:
        holder.execute('BEGIN IMMEDIATE')  # another writer keeps the lock past the timeout
        with pytest.raises(StoreError) as raised:
            await impatient.write('k', 1)
        holder.execute('ROLLBACK')
    error = raised.value
    assert error.details == {'path': str(path), 'operation': 'write', 'sqlite_error': 'SQLITE_BUSY'}
    assert str(error) == f'store {str(path)!r}: write failed: database is locked (SQLITE_BUSY)'
    assert isinstance(error.__cause__, sqlite3.OperationalError)
    assert not (await impatient.exists('k')).exists  # the failed write was not applied
    await impatient.aclose()


async def test_a_path_that_cannot_be_opened_is_a_typed_error(tmp_path: Path) -> None:
    directory = tmp_path / 'a-directory'
    directory.mkdir()
    unopenable = SQLiteStore(directory)
    with pytest.raises(StoreError, match='unable to open database file') as raised:
        await unopenable.read('k')
    assert raised.value.details['path'] == str(directory)
    assert raised.value.details['operation'] == 'read'
    await unopenable.aclose()


async def test_close_lets_queued_writes_finish(tmp_path: Path) -> None:
    path = tmp_path / 'store.sqlite3'
    closing = SQLiteStore(path)
    writes = [asyncio.create_task(closing.write(f'k{i}', i)) for i in range(20)]
    await asyncio.sleep(0)  # every write is queued on the worker before close
    await closing.aclose()
    assert all(w.done() and not w.cancelled() for w in writes)
    reopened = SQLiteStore(path)
    assert len((await reopened.list()).keys) == 20
    await reopened.aclose()


# --- concurrency and cancellation ----------------------------------------------------------------------


async def test_many_concurrent_writes_through_the_agent(any_store: SQLiteStore) -> None:
    deps = StorageDeps(store=any_store)
    agent = create_storage()
    keyed = [
        agent.run(json.dumps({'operation': 'write', 'key': f'k{i:03d}', 'data': i}), deps=deps) for i in range(200)
    ]
    same = [agent.run(json.dumps({'operation': 'write', 'key': 'shared', 'data': i}), deps=deps) for i in range(50)]
    outputs = [r.output for r in await asyncio.gather(*keyed, *same)]
    writes = [o for o in outputs if isinstance(o, WriteResult)]
    assert len(writes) == 250
    assert sum(w.created for w in writes if w.key == 'shared') == 1  # read-then-write is one transaction
    listed = await any_store.list()
    assert listed.keys == sorted([f'k{i:03d}' for i in range(200)] + ['shared'])
    assert (await any_store.read('k123')).data == 123


async def test_two_stores_on_one_file_write_concurrently(tmp_path: Path) -> None:
    path = tmp_path / 'store.sqlite3'
    first, second = SQLiteStore(path), SQLiteStore(path)
    await asyncio.gather(*(s.write(f'{n}-{i}', i) for i in range(100) for n, s in (('a', first), ('b', second))))
    assert len((await first.list()).keys) == 200
    await first.aclose()
    await second.aclose()


async def test_the_event_loop_keeps_running_during_a_blocked_write(tmp_path: Path) -> None:
    path = tmp_path / 'store.sqlite3'
    blocked = SQLiteStore(path, timeout=10)
    await blocked.exists('warm-up')
    with sqlite3.connect(path, isolation_level=None) as holder:
        holder.execute('BEGIN IMMEDIATE')  # another writer holds the lock
        write = asyncio.create_task(blocked.write('k', 1))
        ticks = 0
        for _ in range(10):
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 10
        assert not write.done()
        holder.execute('COMMIT')
    assert await write == WriteResult(key='k', created=True)
    await blocked.aclose()


async def test_cancelled_write_settles_committed_or_not_applied(tmp_path: Path) -> None:
    path = tmp_path / 'store.sqlite3'
    blocked = SQLiteStore(path, timeout=10)
    await blocked.exists('warm-up')
    with sqlite3.connect(path, isolation_level=None) as holder:
        holder.execute('BEGIN IMMEDIATE')
        started = asyncio.create_task(blocked.write('started', 1))
        await asyncio.sleep(0.2)  # the worker is now inside the write, waiting for the lock
        queued = asyncio.create_task(blocked.write('queued', 2))
        await asyncio.sleep(0)
        started.cancel()
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued  # not started: dropped at once, while the other write still waits
        await asyncio.sleep(0.05)
        assert not started.done()  # started: its cancellation waits for the transaction to end
        holder.execute('COMMIT')
    with pytest.raises(asyncio.CancelledError):
        await started
    assert (await blocked.list()).keys == ['started']
    await blocked.aclose()


# --- which store a run uses -------------------------------------------------------------------------------


async def test_plain_agent_uses_the_scoped_store(store: SQLiteStore) -> None:
    create_storage()
    with use_store(store):
        written = await Agent('agentool:storage').run('{"operation": "write", "key": "k", "data": [1]}')
        typed = Agent('agentool:storage', output_type=ReadResult)
        result = await typed.run('{"operation": "read", "key": "k"}')
    assert json.loads(written.output) == {'operation': 'write', 'key': 'k', 'created': True}
    assert result.output == ReadResult(key='k', found=True, data=[1])


async def test_deps_win_over_the_scoped_store_and_scopes_nest(store: SQLiteStore) -> None:
    other = SQLiteStore(MEMORY)
    with use_store(other):
        await run(StorageDeps(store=store), operation='write', key='k', data=1)
        with use_store(store):
            assert default_store() is store
        assert default_store() is other
    assert (await store.exists('k')).exists
    assert not (await other.exists('k')).exists
    await other.aclose()


async def test_scoped_store_is_task_local(store: SQLiteStore) -> None:
    async def inside() -> SQLiteStore:
        with use_store(store):
            await asyncio.sleep(0.01)
            return default_store()

    other = SQLiteStore(MEMORY)
    with use_store(other):
        seen = await asyncio.gather(inside(), asyncio.sleep(0.005, default_store()))
    assert seen == [store, other]
    await other.aclose()


def test_default_path_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(PATH_ENV, str(tmp_path / 'x.sqlite3'))
    assert default_path() == str(tmp_path / 'x.sqlite3')
    monkeypatch.setenv(PATH_ENV, MEMORY)
    assert default_path() == MEMORY
    monkeypatch.delenv(PATH_ENV)
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setenv('XDG_DATA_HOME', str(tmp_path / 'xdg'))
    monkeypatch.setattr(sys, 'platform', 'linux')
    assert default_path() == str(tmp_path / 'xdg' / 'agentool' / 'storage.sqlite3')
    monkeypatch.setenv('XDG_DATA_HOME', 'relative/is/ignored')
    assert default_path() == str(tmp_path / '.local' / 'share' / 'agentool' / 'storage.sqlite3')
    monkeypatch.setattr(sys, 'platform', 'darwin')
    assert default_path() == str(tmp_path / 'Library' / 'Application Support' / 'agentool' / 'storage.sqlite3')
    monkeypatch.setattr(sys, 'platform', 'win32')
    monkeypatch.setenv('LOCALAPPDATA', str(tmp_path / 'local'))
    assert default_path() == str(tmp_path / 'local' / 'agentool' / 'storage.sqlite3')


_PLAIN_RUN = """
import sys
from pydantic_ai import Agent
import examples.storage
print(Agent('agentool:storage').run_sync(sys.argv[1]).output)
"""


@pytest.mark.skipif(sys.platform == 'win32', reason='HOME decides the user-data directory on POSIX only')
def test_plain_agent_without_scope_uses_the_embedded_default(tmp_path: Path) -> None:
    cwd, home = tmp_path / 'cwd', tmp_path / 'home'
    cwd.mkdir()
    home.mkdir()
    env = _env(HOME=str(home))
    env.pop('XDG_DATA_HOME', None)

    def plain(prompt: str) -> Any:
        done = subprocess.run(
            [sys.executable, '-c', _PLAIN_RUN, prompt], cwd=cwd, env=env, capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout)

    assert plain('{"operation": "write", "key": "k", "data": "v"}')['created'] is True
    assert plain('{"operation": "read", "key": "k"}') == {'operation': 'read', 'key': 'k', 'found': True, 'data': 'v'}
    assert (home / '.local' / 'share' / 'agentool' / 'storage.sqlite3').exists()
    assert list(cwd.iterdir()) == []


# --- crash safety -----------------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == 'win32', reason='SIGKILL is POSIX')
def test_sigkill_at_a_random_moment_loses_no_reported_write(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    path = tmp_path / 'crash.sqlite3'
    reported: list[str] = []
    for round_ in range(5):  # five kills at different moments, on the same database
        kill_after = rng.randint(1, 1999)
        writer = subprocess.Popen(
            [sys.executable, str(WRITER), str(path), '2000', f'r{round_}-'],
            cwd=tmp_path,
            env=_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        lines: list[str] = []
        for line in writer.stdout:
            lines.append(line)
            if len(lines) >= kill_after:
                break
        time.sleep(rng.random() * 0.002)  # land anywhere inside the next transaction
        writer.kill()
        lines += writer.stdout.readlines()  # what it printed before dying
        writer.wait(timeout=30)
        assert writer.returncode == -signal.SIGKILL or len(lines) == 2000, f'seed={seed}'
        reported += [line[:-1] for line in lines if line.endswith('\n')]

    with sqlite3.connect(path) as raw:
        assert raw.execute('PRAGMA integrity_check').fetchall() == [('ok',)], f'seed={seed}'
        stored = dict(raw.execute('SELECT key, value FROM agentool_storage').fetchall())
    missing = [key for key in reported if key not in stored]
    assert not missing, f'seed={seed}: {len(missing)} reported keys lost, first {missing[0]}'
    for key in reported:
        assert json.loads(stored[key])['index'] == int(key.split('-')[1]), f'seed={seed}'
