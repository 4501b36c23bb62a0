"""`provide(T, factory, scope='injector')`: a resource made once, kept as long as the injector, closed when cleared.

The user story: an in-memory SQLite connection made by a run-scoped factory is made and closed on
every run, so the database forgets each write; made by an injector-scoped factory it keeps them,
on every surface.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.test import TestModel

from agentool import (
    AgenToolCapability,
    AgenToolInjector,
    AgenToolToolset,
    BaseOperationInput,
    ConfigurationError,
    RoutingConfig,
    create_agentool,
    get_injector,
)
from agentool.dispatch import DispatchCapability, JsonRule
from agentool.errors import DependencyError, DepsUnavailableError, InjectorValidationError, MissingDepsError
from tests.agentools import PingInput
from tests.surface_callers import over_mcp, tool_caller


class Db:
    """An in-memory SQLite database: what one connection holds is gone when it closes."""

    def __init__(self) -> None:
        self.connection = sqlite3.connect(':memory:', check_same_thread=False)
        self.connection.execute('create table notes (text text)')
        self.closed = False

    def close(self) -> None:
        self.connection.close()
        self.closed = True


@dataclass
class NotesDeps:
    db: Db


class NotesInput(BaseOperationInput):
    operation: Literal['add', 'count']
    text: str = ''


async def notes_add(ctx: RunContext[NotesDeps], text: str) -> int:
    ctx.deps.db.connection.execute('insert into notes values (?)', (text,))
    return await notes_count(ctx)


async def notes_count(ctx: RunContext[NotesDeps]) -> int:
    return int(ctx.deps.db.connection.execute('select count(*) from notes').fetchone()[0])


def create_notes(name: str = 'notes', **options: Any) -> Agent[Any, int]:
    routing = RoutingConfig(operation_map={'add': 'notes_add', 'count': 'notes_count'})
    return create_agentool(name, NotesInput, routing, [notes_add, notes_count], deps_type=NotesDeps, **options)


ADD = '{"operation": "add", "text": "x"}'
COUNT = '{"operation": "count"}'


def _surfaces(operation: str, args: dict[str, Any]) -> list[Callable[[], Awaitable[Any]]]:
    prompt = json.dumps({'operation': operation, **args})
    lean, graph = get_injector().get('notes'), get_injector().get('notes_graph')
    return [
        lambda: get_injector().call('notes', prompt),
        lambda: lean.run(prompt),
        lambda: graph.run(prompt),
        lambda: Agent('agentool:notes', output_type=int).run(prompt),
        lambda: Agent('agentool:notes', capabilities=[AgenToolCapability('notes')], output_type=int).run(prompt),
        lambda: Agent(tool_caller(f'notes_{operation}', args), toolsets=[AgenToolToolset(include=['notes'])]).run('go'),
        lambda: over_mcp(f'notes_{operation}', args),
        lambda: Agent(TestModel(), capabilities=[DispatchCapability([JsonRule(agentool='notes')])]).run(prompt),
    ]


async def _counted(count: Callable[[], Awaitable[Any]]) -> int:
    result = await count()
    return int(getattr(result, 'output', result))


async def test_a_run_scoped_connection_forgets_every_write() -> None:
    create_notes()
    injector = get_injector()
    injector.provide(Db, Db)
    assert await injector.call('notes', ADD) == 1
    assert await injector.call('notes', ADD) == 1  # a new database each run: the first write is gone


async def test_an_injector_scoped_connection_keeps_writes_across_runs_and_every_surface() -> None:
    create_notes()
    create_notes('notes_graph', lean=False)
    get_injector().provide(Db, Db, scope='injector')
    adds, counts = _surfaces('add', {'text': 'x'}), _surfaces('count', {})
    for done, add in enumerate(adds, start=1):
        await add()
        assert await _counted(counts[done % len(counts)]) == done  # counted through the next surface
    assert [await _counted(count) for count in counts] == [len(adds)] * len(counts)


async def test_it_is_made_once_under_concurrent_first_use() -> None:
    made: list[int] = []

    async def slow_db() -> Db:
        made.append(1)
        await asyncio.sleep(0)  # every other first call arrives while this one makes it
        return Db()

    create_notes()
    injector = get_injector()
    injector.provide(Db, slow_db, scope='injector')
    assert sorted(await asyncio.gather(*(injector.call('notes', ADD) for _ in range(50)))) == list(range(1, 51))
    assert made == [1]
    assert await injector.call('notes', COUNT) == 50


async def test_it_is_closed_when_the_injector_is_cleared_not_before() -> None:
    create_notes()
    injector = get_injector()
    injector.provide(Db, Db, scope='injector')
    await injector.call('notes', ADD)
    deps = await injector.acreate_deps('notes')
    await injector.call('notes', ADD)
    assert not deps.db.closed
    injector.clear()
    assert deps.db.closed
    assert 'notes' not in injector


class AsyncClient:
    """A resource that closes only with an await (as `httpx.AsyncClient`)."""

    def __init__(self) -> None:
        self.closed = False

    async def aclose(self) -> None:
        await asyncio.sleep(0)
        self.closed = True


@dataclass
class ClientDeps:
    client: AsyncClient


async def client_id(ctx: RunContext[ClientDeps]) -> int:
    return id(ctx.deps.client)


def create_pinger() -> None:
    routing = RoutingConfig(operation_map={'ping': 'client_id'})
    create_agentool('pinger', PingInput, routing, [client_id], deps_type=ClientDeps)


async def test_clear_refuses_an_async_closer_untouched_and_aclear_closes_it() -> None:
    create_pinger()
    injector = get_injector()
    injector.provide(AsyncClient, AsyncClient, scope='injector')
    first = await injector.call('pinger', {'operation': 'ping'})
    assert await injector.call('pinger', {'operation': 'ping'}) == first
    client = (await injector.acreate_deps('pinger')).client
    with pytest.raises(ConfigurationError, match=r'aclear\(\)') as caught:
        injector.clear()
    assert caught.value.details['closers'] == ['AsyncClient']
    assert 'pinger' in injector
    assert not client.closed
    await injector.aclear()
    assert client.closed
    assert 'pinger' not in injector


async def test_a_raising_factory_is_a_typed_error_with_its_cause_and_is_tried_again() -> None:
    attempts: list[int] = []

    def flaky() -> Db:
        attempts.append(1)
        if len(attempts) == 1:
            raise sqlite3.OperationalError('unable to open database file')
        return Db()

    create_notes()
    injector = get_injector()
    injector.provide(Db, flaky, scope='injector')
    with pytest.raises(DepsUnavailableError, match='unable to open database file') as caught:
        await injector.call('notes', ADD)
    assert caught.value.details == {'type': 'Db', 'error': 'OperationalError'}
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert await injector.call('notes', ADD) == 1  # the failure is not kept: the next call makes it
    assert await injector.call('notes', ADD) == 2


class Settings:
    """A run-scoped resource: made for each run."""


class Pool:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings


@dataclass
class PoolDeps:
    pool: Pool


async def pool_id(ctx: RunContext[PoolDeps]) -> int:
    return id(ctx.deps.pool)


async def test_an_injector_scoped_factory_cannot_take_a_run_scoped_resource() -> None:
    create_agentool(
        'pooled', PingInput, RoutingConfig(operation_map={'ping': 'pool_id'}), [pool_id], deps_type=PoolDeps
    )
    injector = get_injector()
    injector.provide(Settings, Settings)
    injector.provide(Pool, Pool, scope='injector')
    with pytest.raises(InjectorValidationError) as caught:
        injector.validate()
    assert any('lives as long as the injector' in str(problem) for problem in caught.value.problems)
    with pytest.raises(MissingDepsError, match='lives as long as the injector'):
        await injector.call('pooled', {'operation': 'ping'})
    injector.provide(Settings, instance=Settings(), replace=True)  # an instance lives as long as it must
    first = await injector.call('pooled', {'operation': 'ping'})
    assert await injector.call('pooled', {'operation': 'ping'}) == first


async def test_replacing_the_factory_makes_a_new_one_and_the_old_is_closed_on_clear() -> None:
    create_notes()
    injector = get_injector()
    injector.provide(Db, Db, scope='injector')
    await injector.call('notes', ADD)
    old = (await injector.acreate_deps('notes')).db
    injector.provide(Db, Db, scope='injector', replace=True)
    assert await injector.call('notes', COUNT) == 0  # a new database
    new = (await injector.acreate_deps('notes')).db
    assert new is not old
    assert not old.closed
    injector.clear()
    assert old.closed
    assert new.closed


def test_an_unknown_scope_is_refused_at_provide() -> None:
    injector = AgenToolInjector()
    with pytest.raises(ConfigurationError, match="'injector'") as caught:
        injector.provide(Db, Db, scope='process')  # pyright: ignore[reportArgumentType]
    assert caught.value.details == {'scope': "'process'"}
    with pytest.raises(DependencyError):
        injector.provide(Db)


def test_it_is_made_once_when_threads_with_their_own_event_loops_first_use_it_at_once() -> None:
    made: list[int] = []
    both = threading.Barrier(2)

    async def slow_db() -> Db:
        made.append(1)
        await asyncio.sleep(0.05)  # the other thread asks while this one makes it
        return Db()

    create_notes()
    injector = get_injector()
    injector.provide(Db, slow_db, scope='injector')

    def add() -> int:
        both.wait()
        return asyncio.run(injector.call('notes', ADD))

    with ThreadPoolExecutor(2) as pool:
        assert sorted(pool.map(lambda _: add(), range(2))) == [1, 2]
    assert made == [1]
