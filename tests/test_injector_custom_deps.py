"""An injector subclass building deps itself (the guide's `CustomInjector`), and deps errors, alike on every surface.

A surface builds deps when its caller gave none: `injector.run`, `injector.call`, handles, the
agent `create_agentool` returns (lean or not) and MCP. Each asks a subclass's own `create_deps`
(or `acreate_deps`) for an agentool that declares a `deps_type`, and reports deps that cannot be
built with one and the same `MissingDepsError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from mcp import Client
from pydantic_ai import Agent, RunContext

from agentool import BaseOperationInput, MissingDepsError, RoutingConfig, create_agentool
from agentool.core.agent import AgenToolAgent
from agentool.core.injector import AgenToolInjector, use_injector
from agentool.mcp import create_mcp_server
from agentool.toolset import AgenToolToolset
from tests.agentools import GreeterDeps, Greeting, PingInput, call_then_answer, make_greeter


@dataclass
class Conn:
    url: str
    pool: Pool | None = None


class Pool:
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


ROUTES = RoutingConfig(operation_map={'who': 'who'})
PROMPT = '{"operation": "who"}'


def surfaces(injector: AgenToolInjector, agent: AgenToolAgent, name: str) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every way to get agentool `name`'s output without giving it deps."""

    async def agent_run() -> Any:
        return (await agent.run(PROMPT)).output

    async def injector_run() -> Any:
        return (await injector.run(name, {'operation': 'who'})).output

    async def handle_run() -> Any:
        return (await injector.handle(name).run({'operation': 'who'})).output

    return {
        'agent.run': agent_run,
        'agent.run again': agent_run,  # a later run, which a lean agent could answer without the graph
        'injector.run': injector_run,
        'injector.call': lambda: injector.call(name, {'operation': 'who'}),
        'handle': lambda: injector.handle(name)({'operation': 'who'}),
        'handle.run': handle_run,
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
        self.asked.append(agent_name)
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
        agent = create_agentool('who', WhoInput, ROUTES, [who], deps_type=Conn, lean=lean)
        expected = 'db://who' if kind is SyncInjector else 'async://who'
        for surface, run in surfaces(injector, agent, 'who').items():
            assert await run() == expected, surface
        async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
            result = await client.call_tool('who_who', {})
        assert result.structured_content == {'result': expected}
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


async def test_the_subclass_is_not_asked_for_an_agentool_without_a_deps_type(lean: bool) -> None:
    injector = SyncInjector()
    with use_injector(injector):
        agent = create_agentool('plain', WhoInput, RoutingConfig(operation_map={'who': 'plain'}), [plain], lean=lean)
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
    pools: list[Pool] = []

    def pool() -> Pool:
        pools.append(Pool())
        return pools[-1]

    with use_injector(injector):
        injector.provide(Pool, pool)
        routes = RoutingConfig(operation_map={'who': 'who_wired'})
        agent = create_agentool('who', WhoInput, routes, [who_wired], deps_type=Wired, lean=lean)
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


class Handmade:
    """Neither a dataclass nor a pydantic model, and nothing provides it: the injector cannot build it."""


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
        routes = RoutingConfig(operation_map={'who': tool.__name__})
        agent = create_agentool('n', WhoInput, routes, [tool], deps_type=deps_type, lean=lean)
        errors: dict[str, MissingDepsError] = {}
        for surface, run in surfaces(injector, agent, 'n').items():
            with pytest.raises(MissingDepsError) as caught:
                await run()
            errors[surface] = caught.value
        async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
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


@dataclass
class Tenant:
    name: str


async def whoami(ctx: RunContext[Tenant]) -> str:
    return ctx.deps.name


async def plain_ping() -> str:
    return 'pong'


class TenantInjector(AgenToolInjector):
    asked: list[str]

    def create_deps(self, agent_name: str) -> Any:
        self.asked.append(f'sync {agent_name}')
        return Tenant(name='sync')

    async def acreate_deps(self, agent_name: str) -> Any:
        self.asked.append(f'async {agent_name}')
        return Tenant(name='async')


async def test_a_subclass_is_the_source_of_deps_on_every_surface() -> None:
    custom = TenantInjector()
    custom.asked = []
    with use_injector(custom):
        who = create_agentool(
            'who', PingInput, RoutingConfig(operation_map={'ping': 'whoami'}), [whoami], deps_type=Tenant
        )
        create_agentool('plain', PingInput, RoutingConfig(operation_map={'ping': 'plain_ping'}), [plain_ping])
        assert await custom.call('who', {'operation': 'ping'}) == 'async'  # both overridden: the async one
        assert (await custom.run('who', {'operation': 'ping'})).output == 'async'
        assert (await who.run('{"operation": "ping"}')).output == 'async'
        assert await custom.handle('who')({'operation': 'ping'}) == 'async'
        agent = Agent(call_then_answer('who_ping', {}), toolsets=[AgenToolToolset()])
        assert (await agent.run('hi')).output == 'async'
        async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
            result = await client.call_tool('who_ping', {})
        assert result.structured_content == {'result': 'async'}
        assert await custom.call('plain', {'operation': 'ping'}) == 'pong'  # never asked: no deps_type
        assert await custom.call('who', {'operation': 'ping'}, deps=Tenant(name='given')) == 'given'  # given deps win
    assert custom.asked == ['async who'] * 6


async def test_an_async_deps_function_gives_its_deps_not_a_coroutine(injector: AgenToolInjector) -> None:
    # Before the fix, the tool got the coroutine as `ctx.deps` (AttributeError, and a coroutine never awaited).
    make_greeter(provide=False)

    async def deps_for(*args: Any) -> GreeterDeps:
        return GreeterDeps(kv=injector.handle('kv'), greeting=Greeting())

    agent = Agent(call_then_answer('greeter_greet', {'user': 'u1'}), toolsets=[AgenToolToolset(deps=deps_for)])
    assert (await agent.run('hi')).output == 'hello Ada'
    async with Client(create_mcp_server(deps=deps_for)) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('greeter_greet', {'user': 'u1'})
    assert result.structured_content == {'result': 'hello Ada'}
