"""Deps shared by concurrent calls: a route declared `concurrent_safe=False` runs one call at a time.

The finding: a sync tool reading `ctx.deps.n`, sleeping and writing it back lost most of 500
concurrent writes through MCP and the injector, which ignored the flag. Every surface now waits its
turn for such a route, per injector, and the counter ends at `CALLS` on each. A hundred calls are
enough to show it: unguarded, 50 concurrent calls of either tool keep at most a quarter of their
writes (a fifth of the time the 500 took).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.test import TestModel

from agentool import (
    AgenToolCapability,
    AgenToolToolset,
    BaseOperationInput,
    Route,
    RoutingConfig,
    create_agentool,
)
from agentool.core.injector import AgenToolInjector, get_injector, use_injector
from agentool.dispatch import DispatchCapability, JsonRule
from tests.surface_callers import tool_caller

CALLS = 100


@dataclass
class Counter:
    n: int = 0


class CounterInput(BaseOperationInput):
    operation: Literal['bump', 'abump', 'read']


def bump(ctx: RunContext[Counter]) -> int:
    """A sync tool: runs in a worker thread, so unguarded calls overlap between the read and the write."""
    n = ctx.deps.n
    time.sleep(0.0005)
    ctx.deps.n = n + 1
    return n + 1


async def abump(ctx: RunContext[Counter]) -> int:
    """An async tool: unguarded calls interleave at the await."""
    n = ctx.deps.n
    await asyncio.sleep(0)
    ctx.deps.n = n + 1
    return n + 1


async def read(ctx: RunContext[Counter]) -> int:
    return ctx.deps.n


def create_counter(name: str = 'counter', **options: Any) -> Agent[Any, int]:
    unsafe = {name: Route(tool=name, concurrent_safe=False) for name in ('bump', 'abump')}
    routing = RoutingConfig(operation_map={**unsafe, 'read': 'read'})
    return create_agentool(name, CounterInput, routing, [bump, abump, read], deps_type=Counter, **options)


async def _through_mcp(operation: str, calls: int) -> None:
    from mcp import Client

    from agentool.mcp import create_mcp_server

    async with Client(create_mcp_server(), mode='auto') as client:  # pyright: ignore[reportArgumentType]
        results = await asyncio.gather(*(client.call_tool(f'counter_{operation}', {}) for _ in range(calls)))
    assert not any(result.is_error for result in results)


def surfaces(injector: AgenToolInjector, operation: str, calls: int = CALLS) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Per surface: `calls` concurrent calls of `operation` of the counter, through that surface."""
    prompt = json.dumps({'operation': operation})
    lean, graph = create_counter(), create_counter('counter_graph', lean=False)
    toolset_agent = Agent(tool_caller(f'counter_{operation}', {}), toolsets=[AgenToolToolset(include=['counter'])])
    dispatch_agent = Agent(TestModel(), capabilities=[DispatchCapability([JsonRule(agentool='counter')])])
    capability_agent = Agent('agentool:counter', capabilities=[AgenToolCapability('counter')], output_type=int)
    plain_agent = Agent('agentool:counter', output_type=int)

    def many(start: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
        return lambda: asyncio.gather(*(start() for _ in range(calls)))

    return {
        'injector.call': many(lambda: injector.call('counter', prompt)),
        'injector.run': many(lambda: injector.run('counter', prompt)),
        'lean run': many(lambda: lean.run(prompt)),
        'graph run': many(lambda: graph.run(prompt)),
        'plain model string': many(lambda: plain_agent.run(prompt)),
        'capability': many(lambda: capability_agent.run(prompt)),
        'toolset': many(lambda: toolset_agent.run('go')),
        'dispatch': many(lambda: dispatch_agent.run(prompt)),
        'mcp': lambda: _through_mcp(operation, calls),
    }


SURFACES = (
    'injector.call',
    'injector.run',
    'lean run',
    'graph run',
    'plain model string',
    'capability',
    'toolset',
    'dispatch',
    'mcp',
)


@pytest.mark.parametrize('surface', SURFACES)
async def test_concurrent_sync_writes_to_shared_deps_are_all_kept(injector: AgenToolInjector, surface: str) -> None:
    await surfaces(injector, 'bump')[surface]()
    assert await injector.call('counter', '{"operation": "read"}') == CALLS


@pytest.mark.parametrize('surface', ['injector.call', 'toolset', 'mcp'])
async def test_concurrent_async_writes_to_shared_deps_are_all_kept(injector: AgenToolInjector, surface: str) -> None:
    await surfaces(injector, 'abump')[surface]()
    assert await injector.call('counter', '{"operation": "read"}') == CALLS


class PairInput(BaseOperationInput):
    operation: Literal['meet', 'meet_unsafe']


@dataclass
class Meeting:
    arrived: int = 0
    both: anyio.Event | None = None


async def meet(ctx: RunContext[Meeting]) -> str:
    """Returns only once two calls are inside at the same time (the test bounds the wait)."""
    if ctx.deps.both is None:
        ctx.deps.both = anyio.Event()
    ctx.deps.arrived += 1
    if ctx.deps.arrived == 2:
        ctx.deps.both.set()
    await ctx.deps.both.wait()
    return 'met'


def create_pair() -> None:
    routing = RoutingConfig(operation_map={'meet': 'meet', 'meet_unsafe': Route(tool='meet', concurrent_safe=False)})
    create_agentool('pair', PairInput, routing, [meet], deps_type=Meeting)


async def test_a_concurrent_safe_route_still_runs_calls_at_once(injector: AgenToolInjector) -> None:
    create_pair()
    with anyio.fail_after(10):
        assert await asyncio.gather(*(injector.call('pair', '{"operation": "meet"}') for _ in range(2))) == ['met'] * 2


async def test_an_unsafe_route_never_has_two_calls_inside(injector: AgenToolInjector) -> None:
    create_pair()
    calls = [asyncio.ensure_future(injector.call('pair', '{"operation": "meet_unsafe"}')) for _ in range(2)]
    await asyncio.sleep(0.05)  # both calls have had every chance to enter
    assert [call.done() for call in calls] == [False, False]
    assert (await injector.acreate_deps('pair')).arrived == 1  # the second waits at the gate
    for call in calls:
        call.cancel()
    await asyncio.gather(*calls, return_exceptions=True)


async def test_the_gate_is_per_injector(injector: AgenToolInjector) -> None:
    # Two injectors keep two deps instances: their calls share nothing, so neither waits for the other.
    # Both wait on one event the test passes in, which only works if both are inside at once.
    create_pair()
    other = AgenToolInjector(registry=injector.registry)
    other.register('pair', injector.get('pair'))
    shared = Meeting()
    injector.provide(Meeting, instance=shared)
    other.provide(Meeting, instance=shared)
    prompt = '{"operation": "meet_unsafe"}'
    with anyio.fail_after(10):
        assert await asyncio.gather(injector.call('pair', prompt), other.call('pair', prompt)) == ['met'] * 2


async def test_a_call_cancelled_at_the_gate_never_runs_its_tool(injector: AgenToolInjector) -> None:
    create_counter()
    first = asyncio.ensure_future(injector.call('counter', '{"operation": "bump"}'))
    second = asyncio.ensure_future(injector.call('counter', '{"operation": "bump"}'))
    await asyncio.sleep(0)
    second.cancel()
    assert await first == 1
    with pytest.raises(asyncio.CancelledError):
        await second
    assert await injector.call('counter', '{"operation": "bump"}') == 2  # the gate is free again


async def test_two_agentools_routing_to_one_unsafe_tool_share_its_gate(injector: AgenToolInjector) -> None:
    # `counter` and `counter_graph` share the deps type, so the instance: their calls of `bump` wait in turn.
    create_counter()
    create_counter('counter_graph', lean=False)
    bump = '{"operation": "bump"}'
    calls = [injector.call(name, bump) for _ in range(200) for name in ('counter', 'counter_graph')]
    await asyncio.gather(*calls)
    assert await injector.call('counter_graph', '{"operation": "read"}') == 400


class RelayInput(BaseOperationInput):
    operation: Literal['relay']
    depth: int = 0


async def relay(depth: int) -> int:
    """Delegates to the other agentool, which routes to this very tool: it must not wait for itself."""
    if depth == 0:
        return 0
    return 1 + await get_injector().call('relay_b', {'operation': 'relay', 'depth': depth - 1})


async def test_a_call_made_from_inside_the_gate_does_not_wait_for_it(injector: AgenToolInjector) -> None:
    routing = RoutingConfig(operation_map={'relay': Route(tool='relay', concurrent_safe=False)})
    create_agentool('relay_a', RelayInput, routing, [relay])
    create_agentool('relay_b', RelayInput, routing, [relay])
    with anyio.fail_after(10):
        results = await asyncio.gather(
            *(injector.call('relay_a', {'operation': 'relay', 'depth': 1}) for _ in range(5))
        )
    assert results == [1] * 5


def test_unsafe_calls_from_several_threads_each_with_its_own_event_loop_are_all_kept(
    injector: AgenToolInjector,
) -> None:
    # A threaded web server calling `run_sync`: each thread runs its own event loop on the one injector.
    lean = create_counter()
    threads, each = 10, 20

    def work(index: int) -> None:
        with use_injector(injector):
            for _ in range(each):
                if index % 2:
                    lean.run_sync('{"operation": "bump"}')
                else:
                    asyncio.run(injector.call('counter', '{"operation": "bump"}'))

    workers = [threading.Thread(target=work, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert injector.create_deps('counter').n == threads * each


def relay_sync(depth: int) -> int:
    """A sync tool running its own agentool again, on an event loop of its worker thread, from inside the gate."""
    if depth == 0:
        return 0
    return 1 + get_injector().get('relay_sync').run_sync(json.dumps({'operation': 'relay', 'depth': depth - 1})).output


def test_a_sync_tool_running_its_own_agentool_on_another_loop_does_not_wait_for_itself(
    injector: AgenToolInjector,
) -> None:
    routing = RoutingConfig(operation_map={'relay': Route(tool='relay_sync', concurrent_safe=False)})
    create_agentool('relay_sync', RelayInput, routing, [relay_sync], output_type=int)
    results: list[int] = []

    def work() -> None:
        with use_injector(injector):
            results.append(asyncio.run(injector.call('relay_sync', {'operation': 'relay', 'depth': 2})))

    worker = threading.Thread(target=work, daemon=True)  # daemon: a deadlock fails the test, not the session
    worker.start()
    worker.join(timeout=20)
    assert results == [2]
