"""The storage example (`examples/storage.py`): operations, store and boundary (non-finite numbers, any
prefix, unopenable paths), processes sharing one new file (`make fuzz`), cancellation never wrapped.
"""

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
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from subprocess import PIPE
from typing import Any

import pytest
from pydantic import JsonValue
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import AgenToolRegistry, AgenToolToolset, InputValidationError, UnknownOperationError, get_injector
from agentool.cli import main
from examples.storage import (
    MEMORY,
    PATH_ENV,
    DeleteResult,
    ExistsResult,
    ListResult,
    ReadResult,
    SQLiteStore,
    StorageDeps,
    StorageResult,
    StoreError,
    WriteResult,
    create_storage,
    default_path,
    default_store,
    use_store,
)
from tests.agentools import ROOT, run_python

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
    keyed = [agent.run(write(f'k{i:03d}', i), deps=deps) for i in range(200)]
    same = [agent.run(write('shared', i), deps=deps) for i in range(50)]
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
        for _ in range(10):  # the loop runs on while the write waits for the lock
            await asyncio.sleep(0.01)
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
        return json.loads(run_python(_PLAIN_RUN.replace('sys.argv[1]', repr(prompt)), cwd=cwd, env=env))

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
        command = [sys.executable, str(WRITER), str(path), '2000', f'r{round_}-']
        writer = subprocess.Popen(command, cwd=tmp_path, env=_env(), stdout=PIPE, text=True)
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


NON_FINITE = [
    '{"operation": "write", "key": "k", "data": NaN}',
    '{"operation": "write", "key": "k", "data": 1e400}',
    '{"operation": "write", "key": "k", "data": [1, -Infinity]}',
    '{"operation": "write", "key": "k", "data": {"a": {"b": [Infinity]}}}',
]


@pytest.fixture
async def scoped_store() -> AsyncIterator[SQLiteStore]:
    """The storage agentool, and a store in effect for it (`use_store`)."""
    create_storage(replace=True)
    opened = SQLiteStore(MEMORY)
    with use_store(opened):
        yield opened
    await opened.aclose()


@pytest.mark.parametrize('surface', ['runs', 'injector call'])
@pytest.mark.parametrize('prompt', NON_FINITE)
async def test_non_finite_data_is_the_typed_input_error(scoped_store: SQLiteStore, prompt: str, surface: str) -> None:
    # Runs: the storage agent's own (lean) run, and the model string's agent (pydantic-ai's graph).
    deps = StorageDeps(store=scoped_store)
    nan = {'operation': 'write', 'key': 'k', 'data': [float('nan')]}
    injector = get_injector()
    first = (
        create_storage(replace=True).run(prompt, deps=deps) if surface == 'runs' else injector.call('storage', prompt)
    )
    with pytest.raises(InputValidationError, match='not a JSON number') as caught:
        await first
    assert caught.value.details['errors'][0]['loc'] == ['data']
    second = Agent('agentool:storage').run(prompt) if surface == 'runs' else injector.call('storage', nan)
    with pytest.raises(InputValidationError, match='not a JSON number'):
        await second
    assert not (await scoped_store.exists('k')).exists


def test_non_finite_data_is_the_typed_input_error_on_the_cli(
    scoped_store: SQLiteStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv('AGENTOOL_STORAGE_PATH', str(tmp_path / 'cli.sqlite3'))
    for prompt in NON_FINITE:
        assert main(['--import', 'examples.storage', 'call', 'storage', prompt]) == 1
        err = capsys.readouterr().err
        assert err.startswith("agentool: error: invalid input for agentool 'storage' operation 'write': field 'data'")
        assert 'not a JSON number' in err
    assert not (tmp_path / 'cli.sqlite3').exists()  # refused before the store was opened


async def test_non_finite_data_is_refused_through_the_llm_toolset(scoped_store: SQLiteStore) -> None:
    # An LLM's tool-call arguments are JSON text, which pydantic-ai's parser reads `NaN` and `1e400` in.
    # (An MCP client cannot send one: JSON clients write a non-finite float as null.)
    answers: list[str] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('storage_write', '{"key": "k", "data": [1e400, NaN]}')])
        answers.extend(str(part.content) for part in messages[-1].parts if isinstance(part, ToolReturnPart))
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(llm), toolsets=[AgenToolToolset()])
    assert (await agent.run('go')).output == 'done'
    assert len(answers) == 1
    assert 'not a JSON number' in answers[0]
    assert not (await scoped_store.exists('k')).exists


KEYS = [
    'a',
    'a\x00',
    'a\x00b',
    'a\x00c',
    'a\x01',
    'ab',
    'a%',
    'a_',
    'A',
    '\ud7ffz',
    '\ue000',
    '\U0010ffff',
    '\U0010ffffx',
]


@pytest.mark.parametrize('prefix', ['', 'a', 'a\x00', 'a\x00b', '\x00', '%', 'a_', '\ud7ff', '\U0010ffff', 'zzz'])
async def test_list_by_prefix_is_exact_for_any_prefix(prefix: str) -> None:
    store = SQLiteStore(MEMORY)
    for key in KEYS:
        await store.write(key, 1)
    listed = await store.list(prefix)
    assert listed.keys == sorted(key for key in KEYS if key.startswith(prefix))
    await store.aclose()


async def test_list_by_a_prefix_holding_nul_through_the_agent(scoped_store: SQLiteStore) -> None:
    for key in ('a\x00b', 'a\x00c', 'ab'):
        await scoped_store.write(key, 1)
    deps = StorageDeps(store=scoped_store)
    listed = await run(deps, operation='list', prefix='a\x00')
    assert isinstance(listed, ListResult)
    assert listed.keys == ['a\x00b', 'a\x00c']


def unopenable_paths(tmp_path: Path) -> list[Path]:
    directory = tmp_path / 'a-directory'
    directory.mkdir()
    afile = tmp_path / 'a-file'
    afile.write_text('')
    return [Path('/dev/null/x.db'), Path('/proc/nope/x.db'), directory, afile / 'x.db']


@pytest.mark.parametrize('operation', ['read', 'write'])
async def test_every_path_that_cannot_be_opened_is_a_store_error_naming_it(tmp_path: Path, operation: str) -> None:
    for path in unopenable_paths(tmp_path):
        store = SQLiteStore(path)
        with pytest.raises(StoreError) as caught:
            await (store.read('k') if operation == 'read' else store.write('k', 1))
        assert caught.value.details['path'] == str(path)
        assert caught.value.details['operation'] == operation
        assert str(path) in str(caught.value)
        assert not path.is_dir() or 'unable to open database file' in str(caught.value)
        await store.aclose()


@pytest.mark.skipif(sys.platform == 'win32' or os.geteuid() == 0, reason='root (or Windows) ignores the mode')
async def test_a_directory_without_permission_is_a_store_error(tmp_path: Path) -> None:
    locked = tmp_path / 'locked'
    locked.mkdir(mode=0o500)
    path = locked / 'sub' / 'x.db'
    store = SQLiteStore(path)
    with pytest.raises(StoreError) as caught:
        await store.read('k')
    assert caught.value.details == {
        'path': str(path),
        'operation': 'read',
        'sqlite_error': None,
        'os_error': 'PermissionError',
    }
    await store.aclose()


async def test_an_unopenable_store_is_a_store_error_through_the_agent(tmp_path: Path) -> None:
    create_storage(replace=True)
    store = SQLiteStore('/dev/null/x.db')
    with pytest.raises(StoreError, match=r'/dev/null/x\.db'):
        await get_injector().call('storage', {'operation': 'read', 'key': 'k'}, deps=StorageDeps(store=store))
    await store.aclose()


@pytest.mark.parametrize('path', ['data/a\x00b.db', '', 'a\udc80b.db', b'data/x.db', 42, None])
def test_a_path_no_file_can_have_is_refused_at_once(path: Any) -> None:
    with pytest.raises(StoreError, match='is not a usable file path') as raised:
        SQLiteStore(path)
    assert raised.value.details['operation'] == 'open'
    assert '\x00' not in str(raised.value)


async def test_a_directory_in_the_way_is_a_store_error_on_first_use(tmp_path: Path) -> None:
    (tmp_path / 'file').write_text('')
    store = SQLiteStore(tmp_path / 'file' / 'a.db')
    try:
        with pytest.raises(StoreError, match='cannot create its directory'):
            await store.read('k')
    finally:
        store.close()


HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
PROCESSES = 8
WRITES = 500 if HEAVY else 40
ROUNDS = 20 if HEAVY else 2


@pytest.mark.parametrize('round_', range(ROUNDS))
def test_processes_open_and_write_one_new_file_together(tmp_path: Path, round_: int) -> None:
    path = tmp_path / f'round-{round_}' / 'store.sqlite3'
    start_at = time.time() + 1.5  # after every interpreter has started and imported the store
    commands = [
        [sys.executable, str(WRITER), str(path), str(WRITES), f'p{n}-', str(start_at)] for n in range(PROCESSES)
    ]
    writers = [subprocess.Popen(command, stdout=PIPE, stderr=PIPE, text=True, env=_env()) for command in commands]
    acknowledged: list[str] = []
    failures: list[str] = []
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        acknowledged += out.split()
        if writer.returncode != 0:
            failures.append(err.strip().splitlines()[-1] if err.strip() else f'exit {writer.returncode}')
    assert failures == []
    assert len(acknowledged) == PROCESSES * WRITES
    with sqlite3.connect(path) as db:
        stored = {row[0] for row in db.execute('SELECT key FROM agentool_storage')}
        assert db.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
    assert stored == set(acknowledged)


async def test_stores_of_one_process_open_one_new_file_together(tmp_path: Path) -> None:
    # Before the fix about one round in 300 raised `database is locked` at the WAL switch.
    outcomes: list[str] = []
    for round_ in range(1000 if HEAVY else 150):
        stores = [SQLiteStore(tmp_path / f'{round_}.sqlite3') for _ in range(4)]
        try:
            await asyncio.gather(*(store.write(f'{n}-{i}', i) for i in range(3) for n, store in enumerate(stores)))
            outcomes.append('ok' if len((await stores[0].list()).keys) == 12 else 'lost writes')
        except StoreError as error:
            outcomes.append(str(error))
        finally:
            await asyncio.gather(*(store.aclose() for store in stores))
    assert set(outcomes) == {'ok'}


Run = Callable[[str], Coroutine[Any, Any, Any]]


class HookedStore(SQLiteStore):
    """A store that says when a write has reached it and calls `on_write(key, data)`, to cancel right then."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self.writing = asyncio.Event()
        self.on_write: Callable[[str, Any], None] = lambda key, data: None

    async def write(self, key: str, data: object) -> WriteResult:
        self.writing.set()
        self.on_write(key, data)
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
async def file_store(tmp_path: Path) -> AsyncIterator[HookedStore]:
    store = HookedStore(tmp_path / 'store.sqlite3')
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
async def test_a_run_cancelled_mid_write_settles_committed_or_not(file_store: HookedStore, surface: str) -> None:
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
async def test_a_timeout_mid_write_raises_timeout_error_and_settles(file_store: HookedStore, surface: str) -> None:
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
