"""The injector's wiring: typed deps, resources by type, run scopes, cleanup, cycles and `validate()`.

Also an injector subclass building deps itself (the guide's `CustomInjector`), asked by every surface
that builds deps; deps that cannot be built are one and the same `MissingDepsError` everywhere.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import pytest
from mcp import Client as McpClient
from pydantic import BaseModel, ConfigDict
from pydantic_ai import Agent, RunContext

from agentool import AgenToolHandle, BaseOperationInput, ConfigurationError, Uses
from agentool.core.agent import AgenToolAgent
from agentool.core.injector import AgenToolInjector, get_injector, use_injector
from agentool.errors import (
    DependencyCycleError,
    DependencyError,
    DepsUnavailableError,
    InjectorValidationError,
    MissingDepsError,
)
from agentool.mcp import create_mcp_server
from agentool.toolset import AgenToolToolset
from tests.agentools import GreeterDeps, Greeting, PingInput, agentool, call_then_answer, make_greeter, ping
from tests.surface_callers import over_mcp


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
    agentool('store', KeyInput, {'get': store_get}, deps_type=StoreDeps)
    agentool('cache', KeyInput, {'get': cache_get}, deps_type=CacheDeps)
    agentool('session', KeyInput, {'get': session_get}, deps_type=SessionDeps)


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


async def test_resources_are_closed_newest_first_even_when_the_tool_fails(injector: AgenToolInjector) -> None:
    events: list[str] = []

    async def failing(ctx: RunContext[SessionDeps], key: str) -> str:
        raise LookupError(key)

    create_layers()
    agentool('session', KeyInput, {'get': failing}, deps_type=SessionDeps, replace=True)
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
        # The documented error of every surface, naming the field and type.
        with pytest.raises(MissingDepsError) as caught:
            await how('store', {'operation': 'get', 'key': 'k'})
        details = caught.value.details
        assert (details['agentool'], details['field'], details['type']) == ('store', 'db', 'Database')
        assert details['deps_type'] == 'StoreDeps'
        assert 'Database' in details['reason']


class Handmade:
    """Neither a dataclass nor a pydantic model: the injector cannot build it."""


async def peek(ctx: RunContext[Handmade | None]) -> str:
    return repr(ctx.deps)


async def test_deps_the_type_lets_be_none_are_none_on_every_surface_when_they_cannot_be_built(
    injector: AgenToolInjector,
) -> None:
    agent = agentool('peek', PingInput, {'ping': peek}, deps_type=Handmade | None)
    assert (await agent.run('{"operation": "ping"}')).output == 'None'
    assert await injector.call('peek', {'operation': 'ping'}) == 'None'
    assert (await injector.run('peek', {'operation': 'ping'})).output == 'None'
    assert await injector.call('peek', {'operation': 'ping'}, deps=Handmade()) != 'None'  # given deps win


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


@pytest.mark.parametrize('key', ['Settings', b'Settings', None, 5])
def test_provide_refuses_a_type_name_or_a_plain_value_that_no_field_could_ever_be_annotated_with(
    injector: AgenToolInjector, key: Any
) -> None:
    with pytest.raises(ConfigurationError, match='provide\\(\\) takes a type') as caught:
        injector.provide(key, Settings)
    assert caught.value.details['option'] == 'type_'


# --- cycles -------------------------------------------------------------------------------------


def create_ping(name: str, dependencies: list[str]) -> None:
    agentool(name, PingInput, {'ping': ping}, dependencies=dependencies)


@pytest.mark.parametrize(
    ('chain', 'path'),
    [('ab', ['b', 'a', 'b']), ('abc', ['c', 'a', 'b', 'c']), ('a', ['a', 'a'])],
    ids=['two', 'three', 'self'],
)
def test_a_cycle_fails_when_it_closes(injector: AgenToolInjector, chain: str, path: list[str]) -> None:
    for name, dependency in itertools.pairwise(chain):
        create_ping(name, [dependency])
    with pytest.raises(DependencyCycleError) as caught:
        create_ping(chain[-1], [chain[0]])  # the dependency that closes the cycle
    assert caught.value.details['path'] == path
    assert ' → '.join(path) in str(caught.value)
    assert chain[-1] not in injector


@dataclass
class LoopDeps:
    other: AgenToolHandle[str]


def test_handle_fields_are_dependencies_too(injector: AgenToolInjector) -> None:
    create_ping('other', ['loop'])
    with pytest.raises(DependencyCycleError) as caught:
        agentool('loop', PingInput, {'ping': ping}, deps_type=LoopDeps)
    assert caught.value.details['path'] == ['loop', 'other', 'loop']


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
    agentool('misdeclared', PingInput, {'ping': ping}, deps_type=MisdeclaredDeps)
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


class MixedOperation(enum.Enum):
    PLAIN = 'plain'
    READS = 'reads'


class MixedEnumInput(BaseOperationInput):
    operation: MixedOperation


@pytest.mark.parametrize('schema', [MixedInput, MixedEnumInput], ids=['literal', 'enum'])
async def test_deps_are_built_only_for_a_tool_taking_a_context_on_every_surface(
    injector: AgenToolInjector, schema: type[BaseOperationInput]
) -> None:
    routes = {'plain': plain_tool, 'reads': reading_tool}
    agent = agentool('mixed', schema, routes, deps_type=NeedsUnprovided)
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


class FactoryAnnotationError(Exception):
    """A factory annotation's own code failing as the injector reads it."""


def _failing_annotation() -> type:
    raise FactoryAnnotationError('the annotation ran and failed')


def test_a_factory_annotation_raising_its_own_error_propagates_from_provide() -> None:
    def make_settings(url: _failing_annotation()) -> Settings:  # pyright: ignore[reportInvalidTypeForm]
        return Settings(url)

    injector = AgenToolInjector()
    with pytest.raises(FactoryAnnotationError):
        injector.provide(Settings, make_settings)


EVENTS: list[str] = []


class Pool:
    def __init__(self) -> None:
        EVENTS.append('make pool')

    async def aclose(self) -> None:
        EVENTS.append('close pool')


class Repo:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        EVENTS.append('make repo')

    def close(self) -> None:
        EVENTS.append('close repo')


@dataclass
class InnerDeps:
    pool: Pool


@dataclass
class OuterDeps:
    repo: Repo
    pool: Pool
    inner: AgenToolHandle[bool]


class StepInput(BaseOperationInput):
    operation: Literal['go', 'fail', 'wait']


WAITING: list[asyncio.Event] = []  # set by a tool once it runs; made in each test's own loop


async def inner_go(ctx: RunContext[InnerDeps]) -> bool:
    """Whether the run's pool is the one the caller got (run scope: shared)."""
    return ctx.deps.pool is SEEN[-1]


SEEN: list[Pool] = []


async def outer_go(ctx: RunContext[OuterDeps]) -> bool:
    """Call inner through its handle, in the same run."""
    SEEN.append(ctx.deps.pool)
    assert ctx.deps.repo.pool is ctx.deps.pool
    return await ctx.deps.inner({'operation': 'go'})


async def outer_fail(ctx: RunContext[OuterDeps]) -> bool:
    raise KeyError('the tool failed')


async def outer_wait(ctx: RunContext[OuterDeps]) -> bool:
    WAITING[-1].set()
    await asyncio.Event().wait()
    return False


def make_layers(injector: AgenToolInjector) -> None:
    EVENTS.clear()
    SEEN.clear()
    agentool('inner', StepInput, dict.fromkeys(('go', 'fail', 'wait'), inner_go), deps_type=InnerDeps)
    routes = {'go': outer_go, 'fail': outer_fail, 'wait': outer_wait}
    agentool('outer', StepInput, routes, deps_type=OuterDeps)
    injector.provide(Pool, Pool)
    injector.provide(Repo, Repo)
    injector.validate()


MADE_AND_CLOSED = ['make pool', 'make repo', 'close repo', 'close pool']


@pytest.mark.parametrize('surface', ['call', 'run', 'agent'])
async def test_run_scoped_resources_are_shared_in_a_run_and_closed_newest_first(
    injector: AgenToolInjector, surface: str
) -> None:
    make_layers(injector)
    if surface == 'agent':
        assert (await injector.get('outer').run('{"operation": "go"}')).output is True
    else:
        output = await getattr(injector, surface)('outer', {'operation': 'go'})
        assert (output if surface == 'call' else output.output) is True
    assert EVENTS == MADE_AND_CLOSED


@pytest.mark.parametrize('surface', ['call', 'run'])
@pytest.mark.parametrize(
    ('operation', 'error', 'match'),
    [('fail', KeyError, 'the tool failed'), ('wait', asyncio.CancelledError, None)],
    ids=['the tool fails, its error unchanged', 'the run is cancelled'],
)
async def test_resources_are_closed_when_the_tool_fails_or_the_run_is_cancelled(
    injector: AgenToolInjector, surface: str, operation: str, error: type[BaseException], match: str | None
) -> None:
    make_layers(injector)
    WAITING.append(asyncio.Event())
    task = asyncio.create_task(getattr(injector, surface)('outer', {'operation': operation}))
    if operation == 'wait':
        await WAITING[-1].wait()
        task.cancel()
    with pytest.raises(error, match=match):
        await task
    assert EVENTS == MADE_AND_CLOSED


async def test_a_transient_resource_is_made_for_each_consumer(injector: AgenToolInjector) -> None:
    make_layers(injector)
    injector.provide(Pool, Pool, scope='transient', replace=True)
    with pytest.raises(AssertionError):  # the repo's pool is not the deps' pool any more
        await injector.call('outer', {'operation': 'go'})
    assert EVENTS.count('make pool') == EVENTS.count('close pool') == 2


async def test_one_run_scope_shares_a_resource_between_concurrent_calls(injector: AgenToolInjector) -> None:
    make_layers(injector)

    async def slow_pool() -> Pool:
        await asyncio.sleep(0)  # really waits: concurrent consumers must wait for this one
        return Pool()

    injector.provide(Pool, slow_pool, replace=True)
    async with injector.run_scope():
        outputs = await asyncio.gather(*(injector.call('outer', {'operation': 'go'}) for _ in range(20)))
        assert EVENTS.count('make pool') == 1
        assert len({id(pool) for pool in SEEN}) == 1
    assert outputs == [True] * 20
    assert EVENTS.count('close pool') == 1
    assert EVENTS[-1] == 'close pool'


async def test_create_deps_is_synchronous_until_a_factory_really_waits(injector: AgenToolInjector) -> None:
    make_layers(injector)
    deps = injector.create_deps('outer')
    assert isinstance(deps, OuterDeps)
    assert deps.repo.pool is deps.pool
    assert deps.inner == injector.handle('inner')

    async def waiting_pool() -> Pool:
        await asyncio.sleep(0.001)
        return Pool()

    injector.provide(Pool, waiting_pool, replace=True)
    with pytest.raises(DepsUnavailableError) as caught:
        injector.create_deps('outer')
    assert 'acreate_deps' in str(caught.value)
    assert isinstance(await injector.acreate_deps('outer'), OuterDeps)


async def ping_a() -> str:
    return await get_injector().call('cyc_b', {'operation': 'ping'})


async def ping_b() -> str:
    return await get_injector().call('cyc_a', {'operation': 'ping'})


@pytest.mark.parametrize('surface', ['call', 'run'])
async def test_an_undeclared_cycle_is_reported_with_its_path_not_a_recursion_error(
    injector: AgenToolInjector, surface: str
) -> None:
    agentool('cyc_a', PingInput, {'ping': ping_a})
    agentool('cyc_b', PingInput, {'ping': ping_b})
    with pytest.raises(DependencyCycleError) as caught:
        await getattr(injector, surface)('cyc_a', {'operation': 'ping'})
    assert caught.value.details['path'] == ['cyc_a', 'cyc_b', 'cyc_a']
    assert 'cyc_a → cyc_b → cyc_a' in str(caught.value)


@dataclass
class LaterDeps:
    later: AgenToolHandle[str]


async def use_later(ctx: RunContext[LaterDeps | None]) -> str:
    return 'none' if ctx.deps is None else await ctx.deps.later({'operation': 'ping'})


async def later_ping() -> str:
    return 'later'


@pytest.mark.parametrize('surface', ['call', 'run'])
async def test_deps_given_up_as_none_are_built_once_their_dependency_is_registered(
    injector: AgenToolInjector, surface: str
) -> None:
    # Before the fix, the `None` was kept after `later` was registered ("until the wiring changes
    # (`provide`, `register`)" said the code; only `provide` forgot it).
    agentool('user', PingInput, {'ping': use_later}, deps_type=LaterDeps | None)

    async def ask() -> str:
        output = await getattr(injector, surface)('user', {'operation': 'ping'})
        return output if surface == 'call' else output.output

    assert await ask() == 'none'
    agentool('later', PingInput, {'ping': later_ping})
    assert await ask() == 'later'
    injector.unregister('later')
    assert await ask() == 'none'


async def peek_optional(ctx: RunContext[Greeting | None]) -> str:
    return 'none' if ctx.deps is None else ctx.deps.word


async def test_an_optional_deps_type_is_built_when_the_injector_can(injector: AgenToolInjector) -> None:
    # `Store | None`: a `Store` when it can be built, `None` only when it cannot.
    agent = agentool('peek', PingInput, {'ping': peek_optional}, deps_type=Greeting | None)
    assert await injector.call('peek', {'operation': 'ping'}) == 'none'
    injector.provide(Greeting, Greeting)
    assert await injector.call('peek', {'operation': 'ping'}) == 'hello'
    assert (await injector.run('peek', {'operation': 'ping'})).output == 'hello'
    assert (await agent.run('{"operation": "ping"}')).output == 'hello'


def test_a_tool_taking_a_context_reads_deps() -> None:
    async def get(ctx: RunContext[dict[str, str]]) -> str:
        return ctx.deps['k']

    agent = agentool('depsy', PingInput, {'ping': get}, deps_type=dict)
    assert agent.run_sync('{"operation": "ping"}', deps={'k': 'v'}).output == 'v'


@dataclass
class Conn:
    url: str
    pool: ClosingPool | None = None


class ClosingPool:
    """A resource the wiring provides; closed when the run that made it ends."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


class WhoInput(BaseOperationInput):
    operation: Literal['who']


async def who(ctx: RunContext[Conn]) -> str:
    return ctx.deps.url


async def plain() -> str:
    return 'no deps'


PROMPT = '{"operation": "who"}'


def surfaces(injector: AgenToolInjector, agent: AgenToolAgent, name: str) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every way to get agentool `name`'s output without giving it deps."""

    async def output(run: Awaitable[Any]) -> Any:
        return (await run).output

    return {
        'agent.run': lambda: output(agent.run(PROMPT)),
        'agent.run again': lambda: output(agent.run(PROMPT)),  # a later run: a lean agent may skip the graph
        'injector.run': lambda: output(injector.run(name, {'operation': 'who'})),
        'injector.call': lambda: injector.call(name, {'operation': 'who'}),
        'handle': lambda: injector.handle(name)({'operation': 'who'}),
        'handle.run': lambda: output(injector.handle(name).run({'operation': 'who'})),
    }


class SyncInjector(AgenToolInjector):
    """The guide's `CustomInjector`: overrides `create_deps(agent_name)`."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def create_deps(self, agent_name: str) -> Any:
        self.asked.append(agent_name)
        return Conn(f'db://{agent_name}')


class BothInjector(SyncInjector):
    """Overrides both forms: the surfaces, which are async, ask the async one."""

    async def acreate_deps(self, agent_name: str) -> Any:
        self.asked.append(f'async {agent_name}')
        return Conn(f'async://{agent_name}')


class AsyncInjector(SyncInjector):
    """Overrides the async form instead."""

    create_deps = AgenToolInjector.create_deps

    async def acreate_deps(self, agent_name: str) -> Any:
        self.asked.append(agent_name)
        return Conn(f'async://{agent_name}')


@pytest.fixture(params=[True, False], ids=['lean', 'graph'])
def lean(request: pytest.FixtureRequest) -> bool:
    return request.param


@pytest.mark.parametrize('kind', [SyncInjector, AsyncInjector, BothInjector])
async def test_an_overriding_create_deps_is_the_source_of_deps_on_every_surface(
    kind: type[SyncInjector], lean: bool
) -> None:
    injector = kind()
    with use_injector(injector):
        agent = agentool('who', WhoInput, {'who': who}, deps_type=Conn, lean=lean)
        expected = 'db://who' if kind is SyncInjector else 'async://who'
        for surface, run in surfaces(injector, agent, 'who').items():
            assert await run() == expected, surface
        assert await over_mcp('who_who', {}) == expected
        toolset_agent = Agent(call_then_answer('who_who', {}), toolsets=[AgenToolToolset()])
        assert (await toolset_agent.run('hi')).output == expected
        if kind is BothInjector:  # never the sync form
            assert set(injector.asked) == {'async who'}
        # Asked directly, the async form gives what the surfaces got (with only `create_deps`
        # overridden, it answers with that); the sync base form is always the wiring's.
        assert (await injector.acreate_deps('who')) == Conn(expected)
        if kind is SyncInjector:
            assert injector.create_deps('who') == Conn(expected)
        else:
            with pytest.raises(MissingDepsError):
                AgenToolInjector.create_deps(injector, 'who')
        # Given deps always win: the subclass is not asked.
        injector.asked.clear()
        assert await injector.call('who', {'operation': 'who'}, deps=Conn('given')) == 'given'
        assert (await agent.run(PROMPT, deps=Conn('given'))).output == 'given'
        assert injector.asked == []


@pytest.mark.parametrize('kind', [SyncInjector, BothInjector])
async def test_the_subclass_is_not_asked_for_an_agentool_without_a_deps_type(
    kind: type[SyncInjector], lean: bool
) -> None:
    injector = kind()
    with use_injector(injector):
        agent = agentool('plain', WhoInput, {'who': plain}, lean=lean)
        for surface, run in surfaces(injector, agent, 'plain').items():
            assert await run() == 'no deps', surface
    assert injector.asked == []


class ExtendingInjector(AgenToolInjector):
    """Builds on the wiring's deps through `super()`: no recursion, and the run owns the resources."""

    def create_deps(self, agent_name: str) -> Any:
        deps = super().create_deps(agent_name)
        deps.url = f'{deps.url}+{agent_name}'
        return deps


class AsyncExtendingInjector(AgenToolInjector):
    async def acreate_deps(self, agent_name: str) -> Any:
        deps = await super().acreate_deps(agent_name)
        deps.url = f'{deps.url}+{agent_name}'
        return deps


class CrossCallingInjector(AgenToolInjector):
    """An async override calling the sync base form, which builds with the wiring (never calling this back)."""

    async def acreate_deps(self, agent_name: str) -> Any:
        deps = self.create_deps(agent_name)
        deps.url = f'{deps.url}+{agent_name}'
        return deps


@dataclass
class Wired(Conn):
    url: str = 'wired'


async def who_wired(ctx: RunContext[Wired]) -> str:
    assert ctx.deps.pool is not None
    assert not ctx.deps.pool.closed
    return ctx.deps.url


@pytest.mark.parametrize('kind', [ExtendingInjector, AsyncExtendingInjector, CrossCallingInjector])
async def test_an_override_building_on_the_wiring_through_super(kind: type[AgenToolInjector], lean: bool) -> None:
    injector = kind()
    pools: list[ClosingPool] = []

    def pool() -> ClosingPool:
        pools.append(ClosingPool())
        return pools[-1]

    with use_injector(injector):
        injector.provide(ClosingPool, pool)
        agent = agentool('who', WhoInput, {'who': who_wired}, deps_type=Wired, lean=lean)
        for surface, run in surfaces(injector, agent, 'who').items():
            assert await run() == 'wired+who', surface
        # Each surface made its pool in the run it started, and that run closed it.
        assert len(pools) == 6
        assert all(made.closed for made in pools)
        # Asked directly, the async form applies the override once too; the sync base form,
        # which an async override may call, is the wiring's.
        assert (await injector.acreate_deps('who')).url == 'wired+who'
        assert injector.create_deps('who').url == ('wired+who' if kind is ExtendingInjector else 'wired')


# --- deps that cannot be built: one error, alike everywhere -------------------------------------


class Mailer:
    """A resource nobody provides."""


@dataclass
class Notify:
    mailer: Mailer


async def who_handmade(ctx: RunContext[Handmade]) -> str:
    return repr(ctx.deps)


async def who_notify(ctx: RunContext[Notify]) -> str:
    return repr(ctx.deps)


class RefusingInjector(AgenToolInjector):
    """Its own `create_deps` defers to the wiring, which cannot build them."""

    def create_deps(self, agent_name: str) -> Any:
        return super().create_deps(agent_name)


@pytest.mark.parametrize('kind', [AgenToolInjector, RefusingInjector])
@pytest.mark.parametrize(
    ('deps_type', 'tool', 'named'),
    [(Handmade, who_handmade, {}), (Notify, who_notify, {'field': 'mailer', 'type': 'Mailer'})],
)
async def test_deps_that_cannot_be_built_raise_the_same_error_on_every_surface(
    kind: type[AgenToolInjector], deps_type: type[Any], tool: Callable[..., Any], named: dict[str, str], lean: bool
) -> None:
    injector = kind()
    with use_injector(injector):
        agent = agentool('n', WhoInput, {'who': tool}, deps_type=deps_type, lean=lean)
        errors: dict[str, MissingDepsError] = {}
        for surface, run in surfaces(injector, agent, 'n').items():
            with pytest.raises(MissingDepsError) as caught:
                await run()
            errors[surface] = caught.value
        async with McpClient(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
            result = await client.call_tool('n_who', {})
    first = errors['injector.call']
    message = str(first)
    assert message.count(f'declares deps_type {deps_type.__name__}') == 1
    assert message.count('Pass deps=') == 1
    assert first.details['deps_type'] == deps_type.__name__
    assert first.details['reason']
    assert first.details.items() >= named.items()
    for surface, error in errors.items():
        assert (str(error), error.details) == (message, first.details), surface
    assert result.is_error
    assert message in result.content[0].model_dump()['text']


async def test_an_async_deps_function_gives_its_deps_not_a_coroutine(injector: AgenToolInjector) -> None:
    # Before the fix, the tool got the coroutine as `ctx.deps` (AttributeError, and a coroutine never awaited).
    make_greeter(provide=False)

    async def deps_for(*args: Any) -> GreeterDeps:
        return GreeterDeps(kv=injector.handle('kv'), greeting=Greeting())

    agent = Agent(call_then_answer('greeter_greet', {'user': 'u1'}), toolsets=[AgenToolToolset(deps=deps_for)])
    assert (await agent.run('hi')).output == 'hello Ada'
    async with McpClient(create_mcp_server(deps=deps_for)) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('greeter_greet', {'user': 'u1'})
    assert result.structured_content == {'result': 'hello Ada'}
