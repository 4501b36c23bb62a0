"""Injector overrides: task-local, nestable, undone on error, reaching through delegation, stubs."""

from __future__ import annotations

import asyncio
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
    create_agentool('back', LookupInput, RoutingConfig(operation_map={'lookup': 'back_lookup'}), [back_lookup])
    create_agentool('mock_back', LookupInput, RoutingConfig(operation_map={'lookup': 'mock_lookup'}), [mock_lookup])
    create_agentool(
        'front',
        LookupInput,
        RoutingConfig(operation_map={'lookup': 'front_lookup'}),
        [front_lookup],
        dependencies=['back'],
    )
    create_agentool(
        'front_run',
        LookupInput,
        RoutingConfig(operation_map={'lookup': 'front_run_lookup'}),
        [front_run_lookup],
        dependencies=['back'],
    )
    create_agentool(
        'front_handle',
        LookupInput,
        RoutingConfig(operation_map={'lookup': 'handle_lookup'}),
        [handle_lookup],
        deps_type=HandleDeps,
    )


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


# --- task-local, nestable, undone on error -----------------------------------------------------


async def test_overrides_are_task_local_under_gather(injector: AgenToolInjector) -> None:
    create_system()
    started = asyncio.Event()

    async def with_stub(value: str) -> str:
        with injector.override(back=Found(key='k', value=value, source='stub')):
            await started.wait()  # both overrides are in effect at the same time
            await asyncio.sleep(0)
            return await injector.call('front', _KEY)

    async def without() -> str:
        await started.wait()
        return await injector.call('front', _KEY)

    tasks = [asyncio.ensure_future(c) for c in (with_stub('one'), with_stub('two'), without())]
    await asyncio.sleep(0)
    started.set()
    assert await asyncio.gather(*tasks) == ['stub:one', 'stub:two', 'back:K']
    assert await injector.call('front', _KEY) == 'back:K'


async def test_overrides_nest_and_are_undone_on_error(injector: AgenToolInjector) -> None:
    create_system()

    def stub(value: str) -> Found:
        return Found(key='k', value=value, source='stub')

    async def inner_then_fail() -> None:
        with injector.override(back=stub('inner')):
            assert await injector.call('front', _KEY) == 'stub:inner'
            raise RuntimeError('boom')

    with injector.override(back=stub('outer')):
        assert await injector.call('front', _KEY) == 'stub:outer'
        with pytest.raises(RuntimeError, match='boom'):
            await inner_then_fail()
        assert await injector.call('front', _KEY) == 'stub:outer'
    assert await injector.call('front', _KEY) == 'back:K'


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


async def test_overrides_nest_are_undone_on_error_and_reach_through_handles(injector: AgenToolInjector) -> None:
    make_greeter()

    async def greet_u1() -> str:
        return await injector.call('greeter', {'operation': 'greet', 'user': 'u1'})

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
            return await injector.call('greeter', {'operation': 'greet', 'user': 'u1'})

    task = asyncio.create_task(overriding())
    await entered.wait()
    assert await injector.call('greeter', {'operation': 'greet', 'user': 'u1'}) == 'hello Ada'
    done.set()
    assert await task == 'hello Mock'

    async def worker(i: int) -> str:
        with injector.override(kv=f'n{i}'):
            await asyncio.sleep(0)
            return await injector.call('greeter', {'operation': 'greet', 'user': 'u1'})

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
