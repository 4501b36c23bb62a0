"""The sessions example: every operation, expiry on a controlled clock, errors, and storage overridden."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeAlias

import pytest
from pydantic import JsonValue
from pydantic_ai import Agent

from agentool import (
    AgenToolInjector,
    ConfigurationError,
    InputValidationError,
    OutputError,
    RoutingConfig,
    UnknownOperationError,
    create_agentool,
    get_injector,
)
from examples.sessions import (
    DEFAULT_TTL_SECONDS,
    KEY_PREFIX,
    Clock,
    Session,
    SessionCreateResult,
    SessionDeleteResult,
    SessionGetResult,
    SessionRenewResult,
    SessionsDeps,
    SessionsResult,
    create_sessions,
)
from examples.storage import (
    DeleteResult,
    ExistsResult,
    ListResult,
    ReadResult,
    SQLiteStore,
    StorageInput,
    StorageResult,
    WriteResult,
    create_storage,
    use_store,
)
from tests.agentools import python_env, run_python

START = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
SessionsAgent: TypeAlias = Agent[SessionsDeps | None, SessionsResult]
Ask: TypeAlias = Callable[..., Awaitable[Any]]


class ManualClock(Clock):
    """A clock that only moves when told to."""

    def __init__(self, now: datetime) -> None:
        self.current = now

    def now(self) -> datetime:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


@pytest.fixture
def sessions(store: SQLiteStore) -> SessionsAgent:
    """The two agentools in this test's registry, and its injector given one shared in-memory store."""
    create_storage(replace=True)
    agent = create_sessions(replace=True)
    get_injector().provide(SQLiteStore, instance=store)  # an instance: shared by every run, never closed
    return agent


@pytest.fixture
def clock(sessions: SessionsAgent) -> ManualClock:
    manual = ManualClock(START)
    get_injector().provide(Clock, instance=manual)
    return manual


@pytest.fixture(params=['call', 'run', 'agent'])
def ask(request: pytest.FixtureRequest, sessions: SessionsAgent) -> Ask:
    """Ask sessions through `injector.call`, `injector.run`, or the agent `create_sessions` returned."""

    async def ask(**input: Any) -> Any:
        if request.param == 'call':
            return await get_injector().call('sessions', input)
        if request.param == 'run':
            return (await get_injector().run('sessions', input)).output
        return (await sessions.run(json.dumps(input))).output  # no deps given: the injector builds them

    return ask


async def stored(store: SQLiteStore, session_id: str) -> JsonValue:
    read = await store.read(KEY_PREFIX + session_id)
    return read.data if read.found else 'absent'


# --- operations ---------------------------------------------------------------------------------------


async def test_every_operation_gives_its_typed_output(ask: Ask, clock: ManualClock, store: SQLiteStore) -> None:
    created = await ask(operation='create', user='ada', data={'theme': 'dark'}, ttl_seconds=600)
    assert isinstance(created, SessionCreateResult)
    session = created.session
    assert (session.user, session.data) == ('ada', {'theme': 'dark'})
    assert session.created_at == START
    assert session.expires_at == START + timedelta(seconds=600)
    assert session.created_at.tzinfo is UTC
    assert await stored(store, session.id) == session.model_dump(mode='json')  # kept in the injector's store

    got = await ask(operation='get', session_id=session.id)
    assert got == SessionGetResult(session_id=session.id, status='active', session=session)

    clock.advance(300)
    renewed = await ask(operation='renew', session_id=session.id, ttl_seconds=900)
    assert isinstance(renewed, SessionRenewResult)
    assert renewed.status == 'active'
    assert renewed.session == session.model_copy(update={'expires_at': START + timedelta(seconds=1200)})
    active = SessionGetResult(session_id=session.id, status='active', session=renewed.session)
    assert await ask(operation='get', session_id=session.id) == active

    assert await ask(operation='delete', session_id=session.id) == SessionDeleteResult(
        session_id=session.id, deleted=True
    )
    assert await stored(store, session.id) == 'absent'
    missing = SessionGetResult(session_id=session.id, status='missing')
    assert await ask(operation='get', session_id=session.id) == missing
    gone = SessionDeleteResult(session_id=session.id, deleted=False)
    assert await ask(operation='delete', session_id=session.id) == gone


async def test_sessions_get_distinct_ids(ask: Ask, clock: ManualClock) -> None:
    first = await ask(operation='create', user='ada')
    second = await ask(operation='create', user='ada')
    assert first.session.id != second.session.id
    assert first.session.data == {}
    assert first.session.expires_at == START + timedelta(seconds=DEFAULT_TTL_SECONDS)


async def test_without_a_provided_clock_the_real_utc_clock_is_used(ask: Ask) -> None:
    before = datetime.now(UTC)
    session = (await ask(operation='create', user='ada')).session
    assert before <= session.created_at <= datetime.now(UTC)
    assert session.created_at.tzinfo is UTC
    assert session.expires_at - session.created_at == timedelta(seconds=DEFAULT_TTL_SECONDS)


async def test_a_plain_model_string_agent_reaches_the_same_sessions(ask: Ask, clock: ManualClock) -> None:
    created = await ask(operation='create', user='ada')
    plain = Agent('agentool:sessions', output_type=SessionsResult)
    got = (await plain.run(json.dumps({'operation': 'get', 'session_id': created.session.id}))).output
    assert got == SessionGetResult(session_id=created.session.id, status='active', session=created.session)


# --- expiry -----------------------------------------------------------------------------------------------


async def test_a_session_expires_when_the_clock_reaches_expires_at(
    ask: Ask, clock: ManualClock, store: SQLiteStore
) -> None:
    session = (await ask(operation='create', user='ada', ttl_seconds=60)).session
    clock.advance(59)
    assert (await ask(operation='get', session_id=session.id)).status == 'active'
    clock.advance(1)
    expired = SessionGetResult(session_id=session.id, status='expired')
    assert await ask(operation='get', session_id=session.id) == expired
    assert await ask(operation='renew', session_id=session.id) == SessionRenewResult(
        session_id=session.id, status='expired'
    )
    assert await stored(store, session.id) != 'absent'  # expired, not removed: delete removes it
    assert (await ask(operation='delete', session_id=session.id)).deleted


async def test_renewing_keeps_a_session_alive(ask: Ask, clock: ManualClock) -> None:
    session = (await ask(operation='create', user='ada', ttl_seconds=60)).session
    for _ in range(3):
        clock.advance(50)
        assert (await ask(operation='renew', session_id=session.id, ttl_seconds=60)).status == 'active'
    clock.advance(50)
    got = await ask(operation='get', session_id=session.id)
    assert got.status == 'active'
    assert got.session.expires_at == START + timedelta(seconds=210)
    assert got.session.created_at == START


async def test_renewing_an_unknown_session_reports_it_missing(ask: Ask) -> None:
    assert await ask(operation='renew', session_id='nope') == SessionRenewResult(session_id='nope', status='missing')


# --- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('input', 'field'),
    [
        ({'operation': 'create'}, 'user'),
        ({'operation': 'create', 'user': None}, 'user'),
        ({'operation': 'create', 'user': 'ada', 'ttl_seconds': 0}, 'ttl_seconds'),
        ({'operation': 'create', 'user': 'ada', 'data': ['not', 'an', 'object']}, 'data'),
        ({'operation': 'create', 'user': 'ada', 'session_id': 'x'}, 'session_id'),
        ({'operation': 'get'}, 'session_id'),
        ({'operation': 'get', 'session_id': ''}, 'session_id'),
        ({'operation': 'renew', 'session_id': 'x', 'user': 'ada'}, 'user'),
        ({'operation': 'delete', 'session_id': 'x', 'ttl_seconds': 5}, 'ttl_seconds'),
    ],
)
async def test_bad_input_is_a_typed_error(ask: Ask, input: dict[str, Any], field: str) -> None:
    with pytest.raises(InputValidationError) as caught:
        await ask(**input)
    assert caught.value.details['agentool'] == 'sessions'
    assert field in str(caught.value)


async def test_an_unknown_operation_is_a_typed_error(ask: Ask) -> None:
    with pytest.raises(UnknownOperationError):
        await ask(operation='refresh', session_id='x')


async def test_a_naive_clock_is_refused(ask: Ask, sessions: SessionsAgent) -> None:
    get_injector().provide(Clock, instance=ManualClock(datetime(2030, 1, 1)))  # no tzinfo
    with pytest.raises(ConfigurationError, match='naive') as caught:
        await ask(operation='create', user='ada')
    assert caught.value.details['clock'] == 'ManualClock'


async def test_without_a_provided_store_the_default_store_applies(store: SQLiteStore) -> None:
    create_storage(replace=True)
    create_sessions(replace=True)
    injector = get_injector()
    injector.validate()  # storage's deps default to `default_store()`: nothing to provide
    with use_store(store):
        created = await injector.call('sessions', {'operation': 'create', 'user': 'ada'})
    assert (await store.list()).keys == [f'session:{created.session.id}']


# --- typed deps and overrides ------------------------------------------------------------------------


async def test_the_injector_fills_the_typed_deps(sessions: SessionsAgent, clock: Clock) -> None:
    injector = get_injector()
    deps = await injector.acreate_deps('sessions')
    assert isinstance(deps, SessionsDeps)
    assert deps.storage == injector.handle('storage')
    assert deps.clock is clock


def create_dict_storage(values: dict[str, JsonValue]) -> Agent[None, StorageResult]:
    """Another agentool with storage's input, keeping values in a dict."""

    async def read(key: str) -> ReadResult:
        return ReadResult(key=key, found=key in values, data=values.get(key))

    async def write(key: str, data: JsonValue) -> WriteResult:
        created = key not in values
        values[key] = data
        return WriteResult(key=key, created=created)

    async def list_keys(prefix: str | None = None) -> ListResult:
        return ListResult(prefix=prefix, keys=sorted(k for k in values if k.startswith(prefix or '')))

    async def delete(key: str) -> DeleteResult:
        return DeleteResult(key=key, deleted=values.pop(key, None) is not None)

    async def exists(key: str) -> ExistsResult:
        return ExistsResult(key=key, exists=key in values)

    routes = {'read': 'read', 'write': 'write', 'list': 'list_keys', 'delete': 'delete', 'exists': 'exists'}
    tools = [read, write, list_keys, delete, exists]
    return create_agentool('dict_storage', StorageInput, RoutingConfig(operation_map=routes), tools)


async def test_storage_overridden_by_another_agentool(ask: Ask, clock: ManualClock, store: SQLiteStore) -> None:
    values: dict[str, JsonValue] = {}
    injector = get_injector()
    with injector.override(storage=create_dict_storage(values)):
        session = (await ask(operation='create', user='ada')).session
        assert (await ask(operation='get', session_id=session.id)).session == session
    assert values == {KEY_PREFIX + session.id: session.model_dump(mode='json')}
    assert (await store.list()).keys == []  # the override reached through the handle: SQLite untouched
    assert (await ask(operation='get', session_id=session.id)).status == 'missing'


async def test_storage_overridden_by_a_stub_function(ask: Ask, clock: ManualClock, store: SQLiteStore) -> None:
    record = Session(id='s1', user='grace', data={}, created_at=START, expires_at=START + timedelta(seconds=5))
    seen: list[StorageInput] = []

    def stub(input: StorageInput) -> dict[str, Any]:
        seen.append(input)  # the validated input model
        return {'operation': 'read', 'key': input.key, 'found': True, 'data': record.model_dump(mode='json')}

    with get_injector().override(storage=stub):
        got = await ask(operation='get', session_id='s1')
    assert got == SessionGetResult(session_id='s1', status='active', session=record)
    assert seen == [StorageInput(operation='read', key='session:s1')]


async def test_storage_overridden_by_a_stub_value(ask: Ask) -> None:
    with get_injector().override(storage=ReadResult(key='session:s1', found=False)):
        assert (await ask(operation='get', session_id='s1')).status == 'missing'


@pytest.mark.parametrize(
    'answer',
    [
        WriteResult(key='session:s1', created=True),  # the wrong kind of result for a read
        ReadResult(key='session:s1', found=True, data={'id': 's1'}),  # a record that is not a session
    ],
)
async def test_a_misbehaving_storage_is_a_typed_error(ask: Ask, answer: StorageResult) -> None:
    with get_injector().override(storage=answer), pytest.raises(OutputError) as caught:
        await ask(operation='get', session_id='s1')
    assert caught.value.details['dependency'] == 'storage'


async def test_a_storage_failure_propagates_unchanged(ask: Ask) -> None:
    def broken(input: StorageInput) -> StorageResult:
        raise sqlite3.OperationalError('disk I/O error')

    with get_injector().override(storage=broken), pytest.raises(sqlite3.OperationalError, match='disk I/O'):
        await ask(operation='create', user='ada')


async def test_overrides_are_undone_after_the_block(ask: Ask, clock: ManualClock) -> None:
    injector: AgenToolInjector = get_injector()
    session = (await ask(operation='create', user='ada')).session
    with injector.override(storage=ReadResult(key='x', found=False)):
        assert (await ask(operation='get', session_id=session.id)).status == 'missing'
    assert (await ask(operation='get', session_id=session.id)).status == 'active'


# --- the module -----------------------------------------------------------------------------------------


def test_importing_the_module_registers_sessions_and_storage(tmp_path: Path) -> None:
    env = {k: v for k, v in python_env().items() if k not in {'AGENTOOL_STORAGE_PATH', 'XDG_DATA_HOME'}}
    script = "from agentool.cli import main\nraise SystemExit(main(['--import', 'examples.sessions', 'list']))"
    listed = run_python(script, cwd=tmp_path, env={**env, 'HOME': str(tmp_path)})
    assert [line.split()[0] for line in listed.splitlines()] == ['sessions', 'storage']
    assert list(tmp_path.iterdir()) == []  # no I/O at import
