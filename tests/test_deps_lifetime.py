"""Deps the injector builds for a caller that gave none live as long as the injector, on every surface;
and `provide(T, factory, scope='injector')`: a resource made once, kept as long as the injector,
closed when cleared (an in-memory SQLite connection made per run forgets each write; made per
injector it keeps them, on every surface).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import pytest
from mcp import Client
from pydantic_ai import Agent, RunContext, UnexpectedModelBehavior
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from agentool import (
    AgenToolCapability,
    AgenToolConfig,
    AgenToolModel,
    AgenToolToolset,
    BaseOperationInput,
    ConfigurationError,
    RoutingConfig,
    create_agentool,
    get_injector,
    get_registry,
    use_injector,
    use_registry,
)
from agentool.core.injector import AgenToolInjector
from agentool.core.manager import MANAGER_TOOL_NAME
from agentool.dispatch import DispatchCapability, JsonRule
from agentool.errors import (
    DependencyError,
    DepsUnavailableError,
    InjectorValidationError,
    InputValidationError,
    MissingDepsError,
)
from agentool.mcp import create_mcp_server
from tests.agentools import MADE, GreeterDeps, Greeting, PingInput, call_then_answer, make_greeter
from tests.surface_callers import over_mcp, tool_caller


@dataclass
class TallyDeps:
    """State a tool keeps: what a new user writes first."""

    notes: dict[int, str] = field(default_factory=dict[int, str])


class TallyInput(BaseOperationInput):
    operation: Literal['add', 'count']
    text: str = ''


async def tally_add(ctx: RunContext[TallyDeps], text: str) -> int:
    ctx.deps.notes[len(ctx.deps.notes)] = text
    await asyncio.sleep(0)  # a concurrent add may run here: nothing it stored may be lost
    return len(ctx.deps.notes)


class NeedyInput(BaseOperationInput):
    operation: Literal['add']
    text: str | None = None


async def needy_add(text: str) -> int:
    """Needs the `text` the schema leaves optional: a requirement of the operation's own."""
    return len(text)


async def tally_count(ctx: RunContext[TallyDeps]) -> int:
    return len(ctx.deps.notes)


def create_tally(name: str = 'tally', **options: Any) -> Agent[Any, int]:
    routing = RoutingConfig(operation_map={'add': 'tally_add', 'count': 'tally_count'})
    return create_agentool(name, TallyInput, routing, [tally_add, tally_count], deps_type=TallyDeps, **options)


ADD = '{"operation": "add", "text": "x"}'
COUNT = '{"operation": "count"}'


async def test_add_through_every_surface_then_count_through_every_surface() -> None:
    create_tally()
    create_tally('tally_graph', lean=False)
    # `tally` and `tally_graph` share the deps type, so they share the instance.
    await _add_then_count_through_every_surface('tally')


async def _counted(count: Callable[[], Awaitable[Any]]) -> int:
    result = await count()
    return int(getattr(result, 'output', result))


async def test_500_concurrent_adds_are_all_kept() -> None:
    create_tally()
    injector = get_injector()
    await asyncio.gather(*(injector.call('tally', ADD) for _ in range(500)))
    assert await injector.call('tally', COUNT) == 500


async def test_two_registry_scopes_and_two_injectors_never_share() -> None:
    create_tally()
    await get_injector().call('tally', ADD)
    with use_registry():
        create_tally()
        assert await get_injector().call('tally', COUNT) == 0
        await get_injector().call('tally', ADD)
        await get_injector().call('tally', ADD)
        with use_injector() as other:
            other.register('tally', create_tally('tally_other'))
            assert await other.call('tally', COUNT) == 0
        assert await get_injector().call('tally', COUNT) == 2
    assert await get_injector().call('tally', COUNT) == 1


async def test_given_deps_always_win() -> None:
    agent = create_tally()
    mine = TallyDeps(notes={0: 'a', 1: 'b'})
    assert await get_injector().call('tally', ADD, deps=mine) == 3
    assert (await agent.run(COUNT, deps=mine)).output == 3
    assert await get_injector().call('tally', COUNT) == 0


async def test_a_provided_instance_is_what_every_surface_gets() -> None:
    agent = create_tally()
    mine = TallyDeps()
    get_injector().provide(TallyDeps, instance=mine)
    await get_injector().call('tally', ADD)
    await agent.run(ADD)
    assert len(mine.notes) == 2


class Connection:
    """A run-scoped resource: made for each run, closed at its end."""

    opened: ClassVar[list[Connection]] = []

    def __init__(self) -> None:
        self.closed = False
        Connection.opened.append(self)

    def close(self) -> None:
        self.closed = True


@dataclass
class ConnectedDeps:
    connection: Connection
    notes: dict[int, str] = field(default_factory=dict[int, str])


async def connected_add(ctx: RunContext[ConnectedDeps], text: str) -> int:
    assert not ctx.deps.connection.closed
    ctx.deps.notes[len(ctx.deps.notes)] = text
    return len(ctx.deps.notes)


async def test_deps_holding_a_run_scoped_resource_are_built_per_run_and_closed() -> None:
    routing = RoutingConfig(operation_map={'add': 'connected_add', 'count': 'connected_add'})
    agent = create_agentool('connected', TallyInput, routing, [connected_add], deps_type=ConnectedDeps)
    injector = get_injector()
    injector.provide(Connection, Connection)
    Connection.opened.clear()
    assert await injector.call('connected', ADD) == 1
    assert (await agent.run(ADD)).output == 1  # a run of its own: fresh deps
    assert len(Connection.opened) == 2
    assert all(c.closed for c in Connection.opened)


async def test_a_deps_type_provided_by_a_factory_is_built_per_run() -> None:
    create_tally()
    injector = get_injector()
    injector.provide(TallyDeps, TallyDeps)  # declared run-scoped: fresh deps for each run
    assert await injector.call('tally', ADD) == 1
    assert await injector.call('tally', ADD) == 1


async def test_providing_a_field_type_rebuilds_only_the_deps_it_changes() -> None:
    create_tally()
    injector = get_injector()
    await injector.call('tally', ADD)
    injector.provide(Connection, instance=Connection())  # TallyDeps has no Connection field
    assert await injector.call('tally', COUNT) == 1


class Opaque:
    """Deps only a provider can make: neither a dataclass nor a pydantic model."""

    def __init__(self, value: int) -> None:
        self.value = value


async def read_opaque(ctx: RunContext[Opaque]) -> int:
    return ctx.deps.value


async def test_the_plain_form_reports_deps_the_injector_cannot_build() -> None:
    routing = RoutingConfig(operation_map={'add': 'read_opaque', 'count': 'read_opaque'})
    create_agentool('opaque', TallyInput, routing, [read_opaque], deps_type=Opaque)
    with pytest.raises(DepsUnavailableError, match=r'provide\(Opaque, instance=') as caught:
        await Agent('agentool:opaque').run(COUNT)
    assert caught.value.agentool == 'opaque'
    get_injector().provide(Opaque, instance=Opaque(7))
    assert (await Agent('agentool:opaque', output_type=int).run(COUNT)).output == 7


async def test_use_store_redirects_a_run_after_its_deps_were_built_outside_the_block() -> None:
    from examples.storage import MEMORY, SQLiteStore, create_storage, use_store

    storage: Agent[Any, Any] = create_storage(replace=True)  # importing the example may have created it
    store = SQLiteStore(MEMORY)
    try:
        await get_injector().call('storage', '{"operation": "exists", "key": "k"}')  # deps built and kept
        with use_store(store):
            await storage.run('{"operation": "write", "key": "k", "data": 1}')
            await Agent('agentool:storage').run('{"operation": "write", "key": "j", "data": 2}')
        assert (await store.list()).keys == ['j', 'k']
    finally:
        await store.aclose()


# --- the manager registered as a tool on an LLM agent (the architecture guide's pattern) ---------------


async def test_the_manager_tool_asks_an_llm_to_retry_listing_every_failing_field() -> None:
    create_tally()
    manager = get_registry().get_manager('tally')
    prompts: list[str] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]  # what answers the latest tool call, if any
        if isinstance(last, ToolReturnPart) and last.outcome == 'success':
            return ModelResponse(parts=[TextPart(str(last.content))])
        if last.part_kind != 'user-prompt':  # the retry prompt (its part differs between pydantic-ai releases)
            prompts.append(str(getattr(last, 'content', '')))
            return ModelResponse(parts=[ToolCallPart(MANAGER_TOOL_NAME, {'operation': 'add', 'text': 'fixed'})])
        wrong = {'operation': 'add', 'text': 5, 'colour': 'red'}  # a wrong type and an unknown field
        return ModelResponse(parts=[ToolCallPart(MANAGER_TOOL_NAME, wrong)])

    agent = Agent(FunctionModel(llm), deps_type=TallyDeps, retries=1)
    agent.tool(name=MANAGER_TOOL_NAME)(manager)
    deps = TallyDeps()
    assert (await agent.run('add a note', deps=deps)).output == '1'
    assert deps.notes == {0: 'fixed'}
    assert len(prompts) == 1
    assert "field 'text'" in prompts[0]
    assert "field 'colour'" in prompts[0]


async def test_the_manager_tool_asks_again_for_unmet_requirements_and_stops_at_the_retry_limit() -> None:
    create_agentool('needy', NeedyInput, RoutingConfig(operation_map={'add': 'needy_add'}), [needy_add])
    calls: list[dict[str, Any]] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append({'operation': 'add'})  # never gives the `text` the operation needs
        return ModelResponse(parts=[ToolCallPart(MANAGER_TOOL_NAME, calls[-1])])

    agent = Agent(FunctionModel(llm), retries=2)
    agent.tool(name=MANAGER_TOOL_NAME)(get_registry().get_manager('needy'))
    with pytest.raises(UnexpectedModelBehavior, match='exceeded max retries count of 2'):
        await agent.run('add a note')
    assert len(calls) == 3


async def test_a_deterministic_run_of_the_manager_tool_keeps_the_typed_error() -> None:
    create_tally()
    agent = Agent(AgenToolModel('tally'), deps_type=TallyDeps)
    agent.tool(name=MANAGER_TOOL_NAME)(get_registry().get_manager('tally'))
    with pytest.raises(InputValidationError, match="field 'colour'"):
        await agent.run('{"operation": "add", "text": "x", "colour": "red"}', deps=TallyDeps())


async def test_the_toolset_builds_deps_for_a_run_given_none(injector: AgenToolInjector) -> None:
    # "an agentool that declares a deps_type gets the same deps on every surface that is not given
    # any"; "a tool that declared a deps type is never handed None". Before the fix, the tool got
    # the run's `None` and failed with AttributeError: 'NoneType' object has no attribute 'greeting'.
    make_greeter()
    agent = Agent(call_then_answer('greeter_greet', {'user': 'u1'}), toolsets=[AgenToolToolset()])
    assert (await agent.run('hi')).output == 'hello Ada'
    assert MADE == ['make', 'close']  # made for the call, closed when it ended
    # Given deps still win (the run's own, or the toolset's `deps=` function).
    given = GreeterDeps(kv=injector.handle('kv'), greeting=Greeting())
    model = call_then_answer('greeter_greet', {'user': 'u1'})
    agent = Agent(model, toolsets=[AgenToolToolset()], deps_type=GreeterDeps)
    assert (await agent.run('hi', deps=given)).output == 'hello Ada'


async def test_the_toolset_reports_deps_it_cannot_build_as_missing_deps(injector: AgenToolInjector) -> None:
    make_greeter(provide=False)  # nothing provides Greeting
    agent = Agent(call_then_answer('greeter_greet', {'user': 'u1'}), toolsets=[AgenToolToolset()])
    with pytest.raises(MissingDepsError) as caught:
        await agent.run('hi')
    assert caught.value.details['deps_type'] == 'GreeterDeps'
    assert 'Greeting' in caught.value.details['reason']


async def test_mcp_builds_deps_per_call_and_closes_them(injector: AgenToolInjector) -> None:
    make_greeter()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('greeter_greet', {'user': 'u1'})
        assert not result.is_error
        assert result.structured_content == {'result': 'hello Ada'}
        assert MADE == ['make', 'close']
        result = await client.call_tool('greeter_greet', {'user': 'u2'})
    assert result.structured_content == {'result': 'hello u2'}
    assert MADE == ['make', 'close'] * 2  # one run scope per call


@dataclass
class _Greeting:
    word: str = 'hello'


class _GreetInput(BaseOperationInput):
    operation: Literal['greet']


async def _greet(ctx: RunContext[_Greeting]) -> str:
    return ctx.deps.word


async def test_call_given_deps_none_builds_the_deps_as_run_does(injector: AgenToolInjector) -> None:
    routing = RoutingConfig(operation_map={'greet': '_greet'})
    create_agentool('greeter', _GreetInput, routing, [_greet], deps_type=_Greeting)
    prompt = '{"operation": "greet"}'
    assert (await injector.run('greeter', prompt, deps=None)).output == 'hello'
    assert await injector.call('greeter', prompt, deps=None) == 'hello'


async def test_an_agentool_no_injector_holds_gets_missing_deps_or_none_on_the_core_surfaces() -> None:
    # Registered through the registry alone, in a registry no injector was ever made for.
    with use_registry() as registry:
        routing = RoutingConfig(operation_map={'add': 'tally_add', 'count': 'tally_count'})
        for name, deps_type in (('bare', TallyDeps), ('lenient', TallyDeps | None)):
            registry.register(
                name, AgenToolConfig(TallyInput, routing, tools=(tally_add, tally_count), deps_type=deps_type)
            )
        with pytest.raises(MissingDepsError, match='registered with no injector') as caught:
            await Agent('agentool:bare', capabilities=[AgenToolCapability('bare')], output_type=int).run(COUNT)
        assert caught.value.details['agentool'] == 'bare'
        with pytest.raises(MissingDepsError, match='registered with no injector'):
            await Agent('agentool:bare', output_type=int).run(COUNT)
        # `TallyDeps | None`: the tool is handed `None`, which it reads as it may.
        with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'notes'"):
            await Agent('agentool:lenient', output_type=int).run(COUNT)
        assert 'agentool.injector' not in vars(registry)  # nothing made an injector behind the caller's back


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


def _surfaces(name: str, operation: str, args: dict[str, Any]) -> list[Callable[[], Awaitable[Any]]]:
    """One call of `operation` on agentool `name` through each surface (the lean and graph runs: `name_graph`)."""
    prompt, tool = json.dumps({'operation': operation, **args}), f'{name}_{operation}'
    lean, graph = get_injector().get(name), get_injector().get(f'{name}_graph')
    return [
        lambda: get_injector().call(name, prompt),
        lambda: lean.run(prompt),
        lambda: graph.run(prompt),
        lambda: Agent(f'agentool:{name}', output_type=int).run(prompt),
        lambda: Agent(f'agentool:{name}', capabilities=[AgenToolCapability(name)], output_type=int).run(prompt),
        lambda: Agent(tool_caller(tool, args), toolsets=[AgenToolToolset(include=[name])]).run('go'),
        lambda: over_mcp(tool, args),
        lambda: Agent(TestModel(), capabilities=[DispatchCapability([JsonRule(agentool=name)])]).run(prompt),
    ]


async def _add_then_count_through_every_surface(name: str) -> None:
    adds, counts = _surfaces(name, 'add', {'text': 'x'}), _surfaces(name, 'count', {})
    for done, add in enumerate(adds, start=1):
        await add()
        assert await _counted(counts[done % len(counts)]) == done  # counted through the next surface
    assert [await _counted(count) for count in counts] == [len(adds)] * len(counts)


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
    await _add_then_count_through_every_surface('notes')


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
    routing = RoutingConfig(operation_map={'ping': 'pool_id'})
    create_agentool('pooled', PingInput, routing, [pool_id], deps_type=PoolDeps)
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
        counts = list(pool.map(lambda _: add(), range(2)))
    # one database saw both writes; each thread counts after its own write, maybe after the other's too
    assert max(counts) == 2
    assert made == [1]
