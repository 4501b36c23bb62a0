"""Injector overrides: task-local, nestable, undone on error, reaching through delegation, stubs; and
under concurrency, hundreds of tasks entering and leaving `injector.override(...)` while running, each
seeing its own replacement only (also through delegation), and nothing left behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, AgentRunResult, RunContext
from pydantic_ai.models.test import TestModel

from agentool import (
    AgenToolHandle,
    AgenToolNotFoundError,
    BaseOperationInput,
    InputValidationError,
    OutputError,
    RoutingConfig,
    create_agentool,
)
from agentool.core.injector import AgenToolInjector, get_injector
from agentool.errors import DependencyError
from tests.agentools import RICH, Rich, make_calc, make_greeter, make_rich


class LookupInput(BaseOperationInput):
    operation: Literal['lookup']
    key: str


class Found(BaseModel):
    key: str
    value: str
    source: str


async def back_lookup(key: str) -> Found:
    return Found(key=key, value=key.upper(), source='back')


async def mock_lookup(key: str) -> Found:
    return Found(key=key, value='mocked', source='mock')


async def front_lookup(key: str) -> str:
    found: Found = await get_injector().call('back', {'operation': 'lookup', 'key': key})
    return f'{found.source}:{found.value}'


async def front_run_lookup(key: str) -> str:
    found = (await get_injector().run('back', {'operation': 'lookup', 'key': key})).output
    return f'{found.source}:{found.value}'


@dataclass
class HandleDeps:
    back: AgenToolHandle[Found]


async def handle_lookup(ctx: RunContext[HandleDeps], key: str) -> str:
    found = await ctx.deps.back({'operation': 'lookup', 'key': key})
    return f'{found.source}:{found.value}'


def create_system() -> None:
    """`back` and its stand-in `mock_back`; `front`, `front_run` and `front_handle` delegating to `back`."""
    fronts = {'front': front_lookup, 'front_run': front_run_lookup}
    for name, tool in {'back': back_lookup, 'mock_back': mock_lookup, **fronts}.items():
        routing = RoutingConfig(operation_map={'lookup': tool.__name__})
        create_agentool(name, LookupInput, routing, [tool], dependencies=['back'] if name in fronts else None)
    routing = RoutingConfig(operation_map={'lookup': 'handle_lookup'})
    create_agentool('front_handle', LookupInput, routing, [handle_lookup], deps_type=HandleDeps)


_KEY = {'operation': 'lookup', 'key': 'k'}


async def output(injector: AgenToolInjector, name: str, how: str) -> Any:
    return (await injector.run(name, _KEY)).output if how == 'run' else await injector.call(name, _KEY)


# --- replacing an agentool with another ----------------------------------------------------------


@pytest.mark.parametrize('how', ['run', 'call'])
async def test_an_agentool_replacement_answers_and_is_undone(injector: AgenToolInjector, how: str) -> None:
    create_system()
    mock = injector.get('mock_back')
    with injector.override(back=mock):
        assert injector.get('back') is mock
        assert (await output(injector, 'back', how)).source == 'mock'
    assert (await output(injector, 'back', how)).source == 'back'


async def test_an_override_entered_after_direct_calls_still_applies(injector: AgenToolInjector) -> None:
    # `call` skips the override lookup until an override is first entered: the first one must be seen.
    create_system()
    assert (await injector.call('back', _KEY)).source == 'back'
    with injector.override(back=injector.get('mock_back')):
        assert (await injector.call('back', _KEY)).source == 'mock'
    assert (await injector.call('back', _KEY)).source == 'back'


@pytest.mark.parametrize('front', ['front', 'front_run', 'front_handle'])
@pytest.mark.parametrize('how', ['run', 'call'])
async def test_overrides_reach_through_delegation(injector: AgenToolInjector, front: str, how: str) -> None:
    create_system()
    assert await output(injector, front, how) == 'back:K'
    with injector.override(back=injector.get('mock_back')):
        assert await output(injector, front, how) == 'mock:mocked'
    with injector.override(back=lambda input: Found(key=input.key, value='stubbed', source='stub')):
        assert await output(injector, front, how) == 'stub:stubbed'


async def test_a_plain_agent_may_replace_an_agentool(injector: AgenToolInjector) -> None:
    create_system()
    llm = Agent(TestModel(custom_output_text='from a model'))
    with injector.override(front=llm):
        assert await injector.call('front', _KEY) == 'from a model'


def test_overriding_an_unknown_name_fails(injector: AgenToolInjector) -> None:
    create_system()
    with pytest.raises(AgenToolNotFoundError), injector.override(bakc=lambda input: None):
        pass


# --- stubs ---------------------------------------------------------------------------------------


async def test_a_stub_function_gets_the_validated_input(injector: AgenToolInjector) -> None:
    create_system()
    seen: list[Any] = []

    async def stub(input: LookupInput) -> dict[str, str]:
        seen.append(input)
        return {'key': input.key, 'value': 'async', 'source': 'stub'}  # validated into Found

    with injector.override(back=stub):
        found = await injector.call('back', _KEY)
    assert found == Found(key='k', value='async', source='stub')
    assert seen == [LookupInput(operation='lookup', key='k')]


async def test_stub_output_is_checked_against_the_output_type(injector: AgenToolInjector) -> None:
    create_system()
    with injector.override(back={'key': 'k'}):
        for how in (injector.run, injector.call):
            with pytest.raises(OutputError) as caught:
                await how('back', _KEY)
            assert caught.value.details['agentool'] == 'back'


async def test_stubbed_agentools_still_validate_their_input(injector: AgenToolInjector) -> None:
    create_system()
    with injector.override(back=lambda input: Found(key='k', value='v', source='stub')):
        for how in (injector.run, injector.call):
            with pytest.raises(InputValidationError) as caught:
                await how('back', {'operation': 'lookup'})
            assert caught.value.details['agentool'] == 'back'


async def test_a_stubbed_run_keeps_agent_semantics(injector: AgenToolInjector) -> None:
    create_system()
    with injector.override(back=Found(key='k', value='v', source='stub')):
        result = await injector.run('back', _KEY)
    assert isinstance(result, AgentRunResult)
    assert result.output == Found(key='k', value='v', source='stub')
    assert result.usage.tool_calls == 1


async def test_only_an_agent_can_replace_a_plain_agent(injector: AgenToolInjector) -> None:
    injector.register('llm', Agent(TestModel()))
    with pytest.raises(DependencyError), injector.override(llm='a value'):
        pass


async def greet_u1() -> str:
    return await get_injector().call('greeter', {'operation': 'greet', 'user': 'u1'})


async def test_overrides_nest_are_undone_on_error_and_reach_through_handles(injector: AgenToolInjector) -> None:
    make_greeter()
    with injector.override(kv='Outer'):
        assert await greet_u1() == 'hello Outer'
        inner: list[str] = []

        async def fail_inside() -> None:
            with injector.override(kv=lambda input: f'Inner {input.key}'):
                inner.append(await greet_u1())
                raise RuntimeError

        with pytest.raises(RuntimeError):
            await fail_inside()
        assert inner == ['hello Inner u1']
        assert await greet_u1() == 'hello Outer'
    assert await greet_u1() == 'hello Ada'


async def test_overrides_are_task_local(injector: AgenToolInjector) -> None:
    make_greeter()
    entered = asyncio.Event()
    done = asyncio.Event()

    async def overriding() -> str:
        with injector.override(kv='Mock'):
            entered.set()
            await done.wait()
            return await greet_u1()

    task = asyncio.create_task(overriding())
    await entered.wait()
    assert await greet_u1() == 'hello Ada'
    done.set()
    assert await task == 'hello Mock'

    async def worker(i: int) -> str:
        with injector.override(kv=f'n{i}'):
            await asyncio.sleep(0)
            return await greet_u1()

    assert await asyncio.gather(*(worker(i) for i in range(30))) == [f'hello n{i}' for i in range(30)]


async def test_a_stub_is_checked_against_the_output_type_and_its_exception_is_not_swallowed(
    injector: AgenToolInjector,
) -> None:
    make_rich()
    with injector.override(rich='not a Rich'), pytest.raises(OutputError):
        await injector.call('rich', {'operation': 'echo', **RICH})

    def broken(input: Any) -> Rich:
        raise LookupError('stub failed')

    with injector.override(rich=broken):
        with pytest.raises(LookupError, match='stub failed'):
            await injector.call('rich', {'operation': 'echo', **RICH})
        with pytest.raises(LookupError, match='stub failed'):
            await injector.run('rich', {'operation': 'echo', **RICH})
        with pytest.raises(InputValidationError):  # the replaced agentool's validation still applies
            await injector.call('rich', {'operation': 'echo'})


async def test_injector_overrides_are_task_local() -> None:
    make_calc()
    injector = get_injector()
    inside = anyio.Event()
    seen: list[float] = []

    async def overridden() -> None:
        with injector.override(calc=42.0):
            seen.append(await injector.call('calc', {'operation': 'add', 'a': 1, 'b': 2}))
            inside.set()
            await anyio.sleep(0.05)

    async def plain() -> None:
        await inside.wait()
        seen.append(await injector.call('calc', {'operation': 'add', 'a': 1, 'b': 2}))

    async with anyio.create_task_group() as group:
        group.start_soon(overridden)
        group.start_soon(plain)
    assert seen == [42.0, 3.0]


HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: ten times the tasks, more rounds each."""
TASKS = 10_000 if HEAVY else 400
ROUNDS = 4 if HEAVY else 2
# Every task runs on the direct path each round; a fifth of them (all under `make fuzz`) also run the
# full agent graph, which keeps the normal suite fast. All tasks are in flight at once, so a leak of one
# task's override into another shows with a few hundred as with ten thousand.


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


@pytest.fixture
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


@pytest.mark.usefixtures('who_and_outer')
async def test_concurrent_tasks_see_only_their_own_overrides(injector: AgenToolInjector) -> None:
    stand_in = create_agentool('who_v2', WhoInput, RoutingConfig(operation_map={'who': 'who_v2'}), [who_v2])
    rng = random.Random(2024)
    outcomes = await asyncio.gather(*(one_task(injector, i, stand_in, rng) for i in range(TASKS)))
    assert outcomes.count('untouched') == TASKS // 4
    await expect(injector, 'after', 'real:after', full_run=True)  # nothing left behind


@pytest.mark.usefixtures('who_and_outer')
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


@pytest.mark.usefixtures('who_and_outer')
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
