"""Overrides under concurrency: a thousand tasks entering and leaving `injector.override(...)` while
running, each seeing its own replacement only (also through delegation), and nothing left behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic_ai import Agent, RunContext

from agentool import AgenToolHandle, AgenToolInjector, BaseOperationInput, RoutingConfig, create_agentool

HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: ten times the tasks, more rounds each."""
TASKS = 10_000 if HEAVY else 1_000
ROUNDS = 4 if HEAVY else 2
# Every task runs on the direct path each round; a fifth of them (all under `make fuzz`) also run the
# full agent graph, which keeps the normal suite fast.


class WhoInput(BaseOperationInput):
    operation: Literal['who']
    tag: str


async def who(tag: str) -> str:
    """The real agentool: says it is real."""
    await asyncio.sleep(0)  # a suspension point inside the tool, where other tasks run
    return f'real:{tag}'


async def who_v2(tag: str) -> str:
    """An agentool that can stand in for `who`."""
    return f'v2:{tag}'


@dataclass
class OuterDeps:
    who: AgenToolHandle[str]


async def outer(ctx: RunContext[OuterDeps], tag: str) -> str:
    """Delegates to `who` through a deps handle, so `who`'s override in effect must reach it."""
    return 'outer>' + await ctx.deps.who({'operation': 'who', 'tag': tag})


def prompt(tag: str) -> str:
    return json.dumps({'operation': 'who', 'tag': tag})


@pytest.fixture(autouse=True)
def who_and_outer(injector: AgenToolInjector) -> None:
    """`who`, and `outer` delegating to it, in this test's own registry and injector (conftest's)."""
    routing = RoutingConfig(operation_map={'who': 'who'})
    create_agentool('who', WhoInput, routing, [who])
    create_agentool('outer', WhoInput, RoutingConfig(operation_map={'who': 'outer'}), [outer], deps_type=OuterDeps)


async def expect(injector: AgenToolInjector, tag: str, answer: str, *, full_run: bool = False) -> None:
    """`who` answers `answer` on the direct path (and in a full run), and `outer` passes it through."""
    assert await injector.call('who', prompt(tag)) == answer
    assert await injector.call('outer', prompt(tag)) == f'outer>{answer}'
    if full_run:
        assert (await injector.run('who', prompt(tag))).output == answer


async def one_task(injector: AgenToolInjector, i: int, stand_in: Agent[Any, str], rng: random.Random) -> str:
    tag = f't{i}'
    real = f'real:{tag}'
    await expect(injector, tag, real)
    if i % 4 == 0:  # a quarter never override: they must see the real agentool throughout
        for round_ in range(ROUNDS):
            await asyncio.sleep(0)
            await expect(injector, tag, real, full_run=round_ == 0 and (HEAVY or i % 5 == 0))
        return 'untouched'
    replacement: Any = stand_in if i % 4 == 1 else (lambda input: f'stub{i}:{input.tag}')
    answer = f'v2:{tag}' if i % 4 == 1 else f'stub{i}:{tag}'
    with injector.override(who=replacement):
        for round_ in range(ROUNDS):
            await asyncio.sleep(rng.random() / 1000)
            await expect(injector, tag, answer, full_run=round_ == 0 and (HEAVY or i % 5 == 0))
            if i % 4 == 3 and round_ == 0:  # nested: a value for a while, then the outer override again
                with injector.override(who=f'value{i}'):
                    await asyncio.sleep(0)
                    await expect(injector, tag, f'value{i}')
                await expect(injector, tag, answer)
    await asyncio.sleep(0)
    await expect(injector, tag, real)
    return 'overridden'


async def test_a_thousand_concurrent_tasks_see_only_their_own_overrides(injector: AgenToolInjector) -> None:
    stand_in = create_agentool('who_v2', WhoInput, RoutingConfig(operation_map={'who': 'who_v2'}), [who_v2])
    rng = random.Random(2024)
    outcomes = await asyncio.gather(*(one_task(injector, i, stand_in, rng) for i in range(TASKS)))
    assert outcomes.count('untouched') == TASKS // 4
    await expect(injector, 'after', 'real:after', full_run=True)  # nothing left behind


async def test_child_tasks_inherit_an_override_but_never_leak_theirs(injector: AgenToolInjector) -> None:
    async def child(i: int) -> str:
        inherited = await injector.call('who', prompt('c'))
        with injector.override(who=f'child{i}'):
            await asyncio.sleep(0)
            assert await injector.call('outer', prompt('c')) == f'outer>child{i}'
        return inherited

    with injector.override(who='parent'):
        inherited = await asyncio.gather(*(asyncio.create_task(child(i)) for i in range(100)))
        assert set(inherited) == {'parent'}
        await expect(injector, 'p', 'parent')
    await expect(injector, 'p', 'real:p')


async def test_an_override_is_left_when_its_block_fails_or_is_cancelled(injector: AgenToolInjector) -> None:
    entered = asyncio.Event()

    async def stuck() -> None:
        with injector.override(who='stuck'):
            entered.set()
            await asyncio.sleep(3600)

    async def failing() -> None:
        with injector.override(who='failing'):
            await expect(injector, 'f', 'failing')
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        await failing()
    await expect(injector, 'f', 'real:f')
    task = asyncio.create_task(stuck())
    await entered.wait()
    await expect(injector, 'f', 'real:f')  # the stuck task's override is its own
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await expect(injector, 'f', 'real:f', full_run=True)
