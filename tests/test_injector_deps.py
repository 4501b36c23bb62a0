"""The injector's wiring: typed deps, resources by type, run scopes, cleanup, cycles and `validate()`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict
from pydantic_ai import RunContext

from agentool import BaseOperationInput, ConfigurationError, RoutingConfig, create_agentool
from agentool.core.handle import AgenToolHandle, Uses
from agentool.core.injector import AgenToolInjector, get_injector, use_injector
from agentool.errors import (
    DependencyCycleError,
    DependencyError,
    DepsUnavailableError,
    InjectorValidationError,
    MissingDepsError,
)


@pytest.fixture
def injector() -> Iterator[AgenToolInjector]:
    with use_injector() as fresh:
        yield fresh


# --- resources ----------------------------------------------------------------------------------


@dataclass
class Settings:
    url: str = 'memory://'


@dataclass
class Database:
    settings: Settings
    events: list[str]
    closed: bool = False

    def close(self) -> None:
        self.closed = True
        self.events.append(f'close db {self.settings.url}')


class Client:
    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.closed = False

    async def aclose(self) -> None:
        await asyncio.sleep(0)
        self.closed = True
        self.events.append('aclose client')


# --- a three-level system: session → cache → store ------------------------------------------


class KeyInput(BaseOperationInput):
    operation: Literal['get']
    key: str


@dataclass
class StoreDeps:
    db: Database


@dataclass
class CacheDeps:
    store: AgenToolHandle[str]
    db: Database


class SessionDeps(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    backend: Annotated[AgenToolHandle[str], Uses('cache')]
    db: Database
    client: Client | None = None


async def store_get(ctx: RunContext[StoreDeps], key: str) -> str:
    return f'store({key}, db={id(ctx.deps.db)})'


async def cache_get(ctx: RunContext[CacheDeps], key: str) -> str:
    inner = await ctx.deps.store({'operation': 'get', 'key': key})
    return f'cache({inner}, db={id(ctx.deps.db)})'


async def session_get(ctx: RunContext[SessionDeps], key: str) -> str:
    inner = await ctx.deps.backend.call({'operation': 'get', 'key': key})
    return f'session({inner}, db={id(ctx.deps.db)})'


def create_layers() -> None:
    create_agentool(
        'store', KeyInput, RoutingConfig(operation_map={'get': 'store_get'}), [store_get], deps_type=StoreDeps
    )
    create_agentool(
        'cache', KeyInput, RoutingConfig(operation_map={'get': 'cache_get'}), [cache_get], deps_type=CacheDeps
    )
    create_agentool(
        'session', KeyInput, RoutingConfig(operation_map={'get': 'session_get'}), [session_get], deps_type=SessionDeps
    )


def provide_db(injector: AgenToolInjector, made: list[Database], events: list[str]) -> None:
    def make_db(settings: Settings) -> Database:  # its parameter is resolved by type too
        db = Database(settings, events)
        made.append(db)
        return db

    injector.provide(Settings, instance=Settings('sqlite://'))
    injector.provide(Database, make_db)


# --- typed deps, three levels deep ------------------------------------------------------------


@pytest.mark.parametrize('how', ['run', 'call'])
async def test_three_levels_of_typed_deps_share_one_database_per_run(injector: AgenToolInjector, how: str) -> None:
    made: list[Database] = []
    events: list[str] = []
    create_layers()
    provide_db(injector, made, events)

    async def get(key: str) -> str:
        given = {'operation': 'get', 'key': key}
        return (await injector.run('session', given)).output if how == 'run' else await injector.call('session', given)

    first = await get('k')
    assert len(made) == 1  # one run: one database, shared by all three levels
    db = id(made[0])
    assert first == f'session(cache(store(k, db={db}), db={db}), db={db})'
    assert made[0].closed
    second = await get('k')
    assert len(made) == 2  # a fresh one for the next run
    assert str(id(made[1])) in second
    assert events == ['close db sqlite://', 'close db sqlite://']


async def test_handles_go_through_the_injector(injector: AgenToolInjector) -> None:
    create_layers()
    provide_db(injector, [], [])
    deps = await injector.acreate_deps('cache')
    assert isinstance(deps, CacheDeps)
    assert deps.store == injector.handle('store')
    assert (await deps.store.run({'operation': 'get', 'key': 'x'})).output.startswith('store(x')


async def test_transient_resources_are_made_for_each_consumer(injector: AgenToolInjector) -> None:
    made: list[Database] = []
    create_layers()

    def make_db(settings: Settings) -> Database:
        made.append(Database(settings, []))
        return made[-1]

    injector.provide(Settings, instance=Settings())
    injector.provide(Database, make_db, scope='transient')
    await injector.call('session', {'operation': 'get', 'key': 'k'})
    assert len(made) == 3
    assert len({id(db) for db in made}) == 3


async def test_concurrent_consumers_in_one_run_wait_for_one_instance(injector: AgenToolInjector) -> None:
    made: list[Database] = []

    async def slow_db(settings: Settings) -> Database:
        await asyncio.sleep(0.01)
        made.append(Database(settings, []))
        return made[-1]

    create_layers()
    injector.provide(Settings, instance=Settings())
    injector.provide(Database, slow_db)
    async with injector.run_scope():
        outputs = await asyncio.gather(*(injector.call('store', {'operation': 'get', 'key': str(i)}) for i in range(3)))
    assert len(made) == 1
    assert all(f'db={id(made[0])}' in output for output in outputs)


async def test_resources_are_closed_newest_first_even_when_the_tool_fails(injector: AgenToolInjector) -> None:
    events: list[str] = []

    async def failing(ctx: RunContext[SessionDeps], key: str) -> str:
        raise LookupError(key)

    create_layers()
    create_agentool(
        'session',
        KeyInput,
        RoutingConfig(operation_map={'get': 'failing'}),
        [failing],
        deps_type=SessionDeps,
        replace=True,
    )
    provide_db(injector, [], events)
    injector.provide(Client, lambda: Client(events))
    for how in (injector.run, injector.call):
        events.clear()
        with pytest.raises(LookupError):
            await how('session', {'operation': 'get', 'key': 'k'})
        assert events == ['aclose client', 'close db sqlite://']


async def test_a_failing_cleanup_is_raised_and_every_closer_still_runs(injector: AgenToolInjector) -> None:
    events: list[str] = []

    class Fragile(Database):
        def close(self) -> None:
            raise OSError('disk gone')

    def make_db(settings: Settings) -> Database:
        return Fragile(settings, events)

    create_layers()
    injector.provide(Settings, instance=Settings())
    injector.provide(Database, make_db)
    injector.provide(Client, lambda: Client(events))
    with pytest.raises(OSError, match='disk gone'):
        await injector.call('session', {'operation': 'get', 'key': 'k'})
    assert events == ['aclose client']


async def test_instances_are_never_closed(injector: AgenToolInjector) -> None:
    db = Database(Settings(), [])
    create_layers()
    injector.provide(Database, instance=db)
    await injector.call('store', {'operation': 'get', 'key': 'k'})
    assert not db.closed


async def test_a_factory_error_is_a_typed_error_with_the_factory_exception_as_cause(injector: AgenToolInjector) -> None:
    def broken() -> Database:
        raise RuntimeError('no connection')

    create_layers()
    injector.provide(Database, broken)
    with pytest.raises(DepsUnavailableError, match='no connection') as caught:
        await injector.call('store', {'operation': 'get', 'key': 'k'})
    assert caught.value.details == {'type': 'Database', 'error': 'RuntimeError'}
    assert isinstance(caught.value.__cause__, RuntimeError)


async def test_an_unresolvable_deps_field_is_a_typed_error_before_the_tool_runs(injector: AgenToolInjector) -> None:
    create_layers()
    for how in (injector.run, injector.call):
        # The documented error of every surface, still a DependencyError naming the field and type.
        with pytest.raises(MissingDepsError) as caught:
            await how('store', {'operation': 'get', 'key': 'k'})
        assert isinstance(caught.value, DependencyError)
        details = caught.value.details
        assert (details['agentool'], details['field'], details['type']) == ('store', 'db', 'Database')
        assert details['deps_type'] == 'StoreDeps'
        assert 'Database' in details['reason']


class Handmade:
    """Neither a dataclass nor a pydantic model: the injector cannot build it."""


class OneOp(BaseOperationInput):
    operation: Literal['peek']


async def peek(ctx: RunContext[Handmade | None]) -> str:
    return repr(ctx.deps)


async def test_deps_the_type_lets_be_none_are_none_on_every_surface_when_they_cannot_be_built(
    injector: AgenToolInjector,
) -> None:
    agent = create_agentool(
        'peek', OneOp, RoutingConfig(operation_map={'peek': 'peek'}), [peek], deps_type=Handmade | None
    )
    assert (await agent.run('{"operation": "peek"}')).output == 'None'
    assert await injector.call('peek', {'operation': 'peek'}) == 'None'
    assert (await injector.run('peek', {'operation': 'peek'})).output == 'None'
    assert await injector.call('peek', {'operation': 'peek'}, deps=Handmade()) != 'None'  # given deps win


async def test_explicit_deps_are_used_as_given(injector: AgenToolInjector) -> None:
    create_layers()
    db = Database(Settings(), [])
    output = await injector.call('store', {'operation': 'get', 'key': 'k'}, deps=StoreDeps(db))
    assert output == f'store(k, db={id(db)})'


def test_provide_takes_a_factory_or_an_instance(injector: AgenToolInjector) -> None:
    with pytest.raises(DependencyError):
        injector.provide(Settings)
    injector.provide(Settings, Settings)
    with pytest.raises(ConfigurationError):
        injector.provide(Settings, Settings)
    injector.provide(Settings, instance=Settings(), replace=True)


# --- cycles -------------------------------------------------------------------------------------


class PingInput(BaseOperationInput):
    operation: Literal['ping']


async def ping() -> str:
    return 'pong'


def create_ping(name: str, dependencies: list[str]) -> None:
    create_agentool(name, PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping], dependencies=dependencies)


def test_a_cycle_of_two_fails_when_it_closes(injector: AgenToolInjector) -> None:
    create_ping('a', ['b'])
    with pytest.raises(DependencyCycleError) as caught:
        create_ping('b', ['a'])
    assert caught.value.details['path'] == ['b', 'a', 'b']
    assert 'b → a → b' in str(caught.value)
    assert 'b' not in injector


def test_a_cycle_of_three_fails_when_it_closes(injector: AgenToolInjector) -> None:
    create_ping('a', ['b'])
    create_ping('b', ['c'])
    with pytest.raises(DependencyCycleError) as caught:
        create_ping('c', ['a'])
    assert caught.value.details['path'] == ['c', 'a', 'b', 'c']


def test_a_self_dependency_is_a_cycle(injector: AgenToolInjector) -> None:
    with pytest.raises(DependencyCycleError) as caught:
        create_ping('a', ['a'])
    assert caught.value.details['path'] == ['a', 'a']


@dataclass
class LoopDeps:
    other: AgenToolHandle[str]


def test_handle_fields_are_dependencies_too(injector: AgenToolInjector) -> None:
    create_ping('other', ['loop'])
    with pytest.raises(DependencyCycleError) as caught:
        create_agentool('loop', PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping], deps_type=LoopDeps)
    assert caught.value.details['path'] == ['loop', 'other', 'loop']


async def test_an_undeclared_cycle_is_reported_at_run_time_not_as_a_recursion_error(injector: AgenToolInjector) -> None:
    async def bounce(name: str) -> str:
        target = {'left': 'right', 'right': 'left'}[name]
        return await get_injector().call(target, {'operation': 'ping'})

    async def left() -> str:
        return await bounce('left')

    async def right() -> str:
        return await bounce('right')

    create_agentool('left', PingInput, RoutingConfig(operation_map={'ping': 'left'}), [left])
    create_agentool('right', PingInput, RoutingConfig(operation_map={'ping': 'right'}), [right])
    for how in (injector.run, injector.call):
        with pytest.raises(DependencyCycleError) as caught:
            await how('left', {'operation': 'ping'})
        assert caught.value.details['path'] == ['left', 'right', 'left']


def test_resource_factories_in_a_cycle_are_reported(injector: AgenToolInjector) -> None:
    def make_settings(db: Database) -> Settings:
        return db.settings

    def make_db(settings: Settings) -> Database:
        return Database(settings, [])

    injector.provide(Settings, make_settings)
    injector.provide(Database, make_db)
    with pytest.raises(InjectorValidationError) as caught:
        injector.validate()
    (problem,) = caught.value.problems
    assert isinstance(problem, DependencyCycleError)
    assert problem.details['path'] in (['Settings', 'Database', 'Settings'], ['Database', 'Settings', 'Database'])


# --- validate() --------------------------------------------------------------------------------


@dataclass
class MisdeclaredDeps:
    store: AgenToolHandle[int]  # 'store' outputs str
    missing: Annotated[AgenToolHandle[str], Uses('nowhere')]
    client: Client
    note: str = 'defaults are fine'
    flags: list[str] = field(default_factory=list[str])


def test_validate_reports_every_problem_at_once(injector: AgenToolInjector) -> None:
    create_layers()  # store needs a Database nobody provides

    def needs_url(url: str) -> Client:
        return Client([])

    injector.provide(Client, needs_url)  # a factory parameter no factory provides
    create_ping('pinger', ['stroe'])  # a typo
    create_agentool(
        'misdeclared', PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping], deps_type=MisdeclaredDeps
    )
    with pytest.raises(InjectorValidationError) as caught:
        injector.validate()
    problems = {(type(p).__name__, p.details.get('agentool'), p.details.get('dependency') or p.details.get('field'))
                for p in caught.value.problems}  # fmt: skip
    assert ('DependencyError', 'pinger', 'stroe') in problems
    assert ('DependencyError', 'misdeclared', 'nowhere') in problems
    assert ('DependencyError', 'misdeclared', 'store') in problems  # AgenToolHandle[int] on a str agentool
    assert ('DependencyError', 'store', 'db') in problems
    assert ('DependencyError', 'misdeclared', 'client') in problems  # the Client factory cannot be built
    assert len(caught.value.details['problems']) == len(caught.value.problems) >= 5
    json.dumps(caught.value.details)  # structured details stay JSON-safe
    assert "did you mean 'store'" in str(caught.value)


def test_validate_passes_on_a_consistent_system(injector: AgenToolInjector) -> None:
    create_layers()
    provide_db(injector, [], [])
    injector.validate()


async def test_a_factory_may_provide_the_whole_deps_object(injector: AgenToolInjector) -> None:
    db = Database(Settings('given://'), [])
    create_layers()

    async def make_deps() -> StoreDeps:
        return StoreDeps(db)

    injector.provide(StoreDeps, make_deps)
    assert await injector.call('store', {'operation': 'get', 'key': 'k'}) == f'store(k, db={id(db)})'


# --- deps are built only for a tool that can read them --------------------------------------------


class Unprovided:
    """A resource no factory provides."""


@dataclass
class NeedsUnprovided:
    thing: Unprovided


class MixedInput(BaseOperationInput):
    operation: Literal['plain', 'reads']


async def plain_tool() -> str:
    return 'plain'


async def reading_tool(ctx: RunContext[NeedsUnprovided]) -> str:
    return type(ctx.deps).__name__


async def test_deps_are_built_only_for_a_tool_taking_a_context_on_every_surface(injector: AgenToolInjector) -> None:
    routing = RoutingConfig(operation_map={'plain': 'plain_tool', 'reads': 'reading_tool'})
    agent = create_agentool('mixed', MixedInput, routing, [plain_tool, reading_tool], deps_type=NeedsUnprovided)
    plain, reads = '{"operation": "plain"}', '{"operation": "reads"}'
    # A tool that takes no context cannot read deps: none are built, so none can be missing.
    assert await injector.call('mixed', plain) == 'plain'
    assert (await injector.run('mixed', plain)).output == 'plain'
    assert (await agent.run(plain)).output == 'plain'
    messages: set[str] = set()
    for surface in (injector.call('mixed', reads), injector.run('mixed', reads), agent.run(reads)):
        with pytest.raises(MissingDepsError) as raised:
            await surface
        messages.add(raised.value.message)
    assert len(messages) == 1  # the same error on every surface
