"""Lean runs are indistinguishable from graph runs: the differential contract (see tests/_lean_diff.py),
and every run that needs the agent graph gets it: each documented fallback condition, one by one.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_ai import Agent, FunctionToolset, ModelRetry, RunContext, ToolFailed, UsageLimits, capture_run_messages
from pydantic_ai.capabilities import Hooks, ProcessHistory
from pydantic_ai.messages import AgentStreamEvent, ModelMessage, ModelResponse
from pydantic_ai.models.test import TestModel

from agentool import (
    AgenToolAgent,
    AgenToolCapability,
    AgenToolModel,
    BaseOperationInput,
    RoutingConfig,
    create_agentool,
    get_injector,
)
from agentool.testing.strategies import invalid_inputs, valid_inputs
from examples.calculator import add, create_calculator
from examples.calculator import divide as divide_tool
from examples.storage import MEMORY, SQLiteStore, StorageDeps, create_storage
from tests._lean_diff import differential
from tests.agentools import lean, run_python

pytestmark = pytest.mark.filterwarnings('ignore::DeprecationWarning')


async def warm(agent: AgenToolAgent, prompt: str, **kwargs: Any) -> None:
    """The first plain run goes through the graph and shows the agent's shape."""
    await agent.run(prompt, **kwargs)
    assert agent.lean_blocker is None
    assert agent.lean_runs == 0


class Pair(BaseModel):
    left: int
    right: str


class Other(BaseModel):
    total: float


class ShapeInput(BaseOperationInput):
    operation: Literal['pair', 'other', 'scalar', 'text', 'fail', 'retry', 'failed', 'sync', 'boom', 'ctx']
    n: int = 1


class BoomError(RuntimeError):
    pass


# Annotated `Any`: one agentool answers in several shapes and each test picks an output type only
# some operations fit; precise annotations would be refused at creation (`unproducible_output`).


async def pair(n: int) -> Any:
    return Pair(left=n, right=str(n))


async def other(n: int) -> Any:
    return Other(total=n / 2)


async def scalar(n: int) -> Any:
    return n * 2


async def text(n: int) -> Any:
    return f'n={n}'


async def retry(n: int) -> Any:
    raise ModelRetry(f'try another n than {n}')


async def failed(n: int) -> Any:
    raise ToolFailed(f'cannot do {n}')


def sync(n: int) -> Any:
    return n + 1


async def boom(n: int) -> Any:
    raise BoomError(f'boom {n}')


async def ctx_tool(ctx: RunContext[dict[str, int]], n: int) -> Any:
    return ctx.deps['base'] + n + len(ctx.prompt or '')


TOOLS = [pair, other, scalar, text, retry, failed, sync, boom, ctx_tool]
# Each operation routes to the tool of its name, but for two.
SAME = ['pair', 'other', 'scalar', 'text', 'retry', 'failed', 'sync', 'boom']
ROUTES = RoutingConfig(operation_map={name: name for name in SAME} | {'fail': 'pair', 'ctx': 'ctx_tool'})


CALC = json.dumps({'operation': 'add', 'a': 1, 'b': 1})


def prompt(operation: str, n: int = 1) -> str:
    return json.dumps({'operation': operation, 'n': n})


@pytest.mark.parametrize(
    ('output_type', 'operations'),
    [
        (Pair | Other, ['pair', 'other']),
        (int, ['scalar', 'sync', 'ctx']),
        (str, ['text']),
        (int | str, ['scalar', 'text']),
        (int | list[int] | None, ['scalar', 'sync']),
        (Pair | None, ['pair']),
        (None, ['pair', 'other', 'scalar', 'text', 'sync', 'ctx']),  # untyped: JSON text output
    ],
)
async def test_outputs_messages_usage_and_deps_match_the_graph(output_type: Any, operations: list[str]) -> None:
    agent = lean(create_agentool('shapes', ShapeInput, ROUTES, TOOLS, output_type=output_type, deps_type=dict))
    await warm(agent, prompt(operations[0]), deps={'base': 0})
    for operation in operations:
        for n in (0, 3):
            await differential(agent, prompt(operation, n), deps=lambda: {'base': 10})


async def test_system_prompt_and_instructions_are_reproduced() -> None:
    prompts: dict[str, Any] = {'system_prompt': ['one', 'two'], 'instructions': 'be exact'}
    agent = lean(create_agentool('shapes', ShapeInput, ROUTES, TOOLS, output_type=int, **prompts))
    await warm(agent, prompt('scalar'))
    first = await differential(agent, prompt('scalar', 4))
    assert first.result is not None
    parts = first.result.all_messages()[0].parts
    assert [getattr(part, 'content', None) for part in parts[:2]] == ['one', 'two']


@pytest.mark.parametrize('operation', ['retry', 'failed', 'boom', 'fail'])
async def test_errors_and_tool_exceptions_match_the_graph(operation: str) -> None:
    agent = lean(create_agentool('shapes', ShapeInput, ROUTES, TOOLS, output_type=Other))
    await warm(agent, prompt('other'))
    out = await differential(agent, prompt(operation))
    assert out.error is not None
    if operation == 'boom':
        assert type(out.error) is BoomError  # a tool's own exception propagates unchanged


async def test_history_continuation_matches_the_graph() -> None:
    for output_type in (int, str):
        agent = lean(create_agentool('shapes', ShapeInput, ROUTES, TOOLS, output_type=output_type, replace=True))
        operation = 'scalar' if output_type is int else 'text'
        await warm(agent, prompt(operation))
        graph_first = await agent.run(prompt(operation, 1))  # lean; its messages continue like a graph run's
        history = graph_first.all_messages()
        out = await differential(agent, prompt(operation, 2), message_history=history)
        assert out.result is not None
        assert len(out.result.all_messages()) == 2 * len(history)
        assert out.result.conversation_id == graph_first.conversation_id
        await differential(agent, prompt(operation, 3), message_history=out.result.all_messages())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_calculator_inputs_valid_and_invalid_match_the_graph(data: st.DataObject) -> None:
    agent = lean(create_calculator(replace=True))
    await warm(agent, CALC)
    valid = data.draw(valid_inputs('calculator').map(json.dumps))
    invalid = data.draw(invalid_inputs('calculator'))
    await differential(agent, valid)
    await differential(agent, invalid)


KEYS = st.sampled_from(['a', 'b', 'c/d'])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=5,
)
STORAGE_INPUTS = st.one_of(
    st.builds(lambda key: {'operation': 'read', 'key': key}, KEYS),
    st.builds(lambda key, value: {'operation': 'write', 'key': key, 'data': value}, KEYS, JSON),
    st.builds(lambda prefix: {'operation': 'list', 'prefix': prefix}, st.none() | st.sampled_from(['a', 'c'])),
    st.builds(lambda key: {'operation': 'delete', 'key': key}, KEYS),
    st.builds(lambda key: {'operation': 'exists', 'key': key}, KEYS),
)
STORAGE_INVALID = st.one_of(
    st.sampled_from(['', '{', '[1]', '"read"', '{"operation": "truncate"}', '{"operation": "read"}']),
    st.builds(lambda key: json.dumps({'operation': 'write', 'key': key}), KEYS),  # no data
    st.builds(lambda value: json.dumps({'operation': 'list', 'key': value}), st.text(max_size=3)),  # unused field
)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_storage_inputs_with_deps_match_the_graph(data: st.DataObject) -> None:
    # Two stores receive the same operations: the graph run uses one, the lean run the other.
    stores = [SQLiteStore(MEMORY), SQLiteStore(MEMORY)]
    try:
        agent = lean(create_storage(replace=True))
        await warm(agent, json.dumps({'operation': 'list'}), deps=StorageDeps(store=stores[0]))
        turn = itertools.cycle([StorageDeps(store=store) for store in stores])
        for _ in range(3):
            valid = json.dumps(data.draw(STORAGE_INPUTS))
            await differential(agent, valid, deps=lambda: next(turn))
        await differential(agent, data.draw(STORAGE_INVALID), deps=lambda: next(turn))
    finally:
        for store in stores:
            await store.aclose()


async def test_the_injector_runs_lean_and_the_direct_path_agrees() -> None:
    agent = lean(create_calculator())
    injector = get_injector()
    await injector.run('calculator', {'operation': 'add', 'a': 1, 'b': 2})  # learns
    result = await injector.run('calculator', {'operation': 'multiply', 'a': 2, 'b': 4})
    assert agent.lean_runs == 1
    assert result.output == 8.0 == await injector.call('calculator', {'operation': 'multiply', 'a': 2, 'b': 4})
    handle_result = await injector.handle('calculator').run({'operation': 'divide', 'a': 1, 'b': 4})
    assert handle_result.output == 0.25
    assert agent.lean_runs == 2


def test_run_sync_is_lean() -> None:
    agent = lean(create_calculator())
    assert agent.run_sync(CALC).output == 2.0  # learns
    assert agent.run_sync(json.dumps({'operation': 'add', 'a': 1, 'b': 2})).output == 3.0
    assert agent.lean_runs == 1


class InfoInput(BaseOperationInput):
    operation: Literal['info']


async def test_the_tool_sees_the_same_run_context() -> None:
    seen: list[dict[str, Any]] = []

    async def info(ctx: RunContext[Any]) -> int:
        fields = ('prompt', 'tool_name', 'tool_call_id', 'retry', 'max_retries', 'run_step', 'deps', 'metadata')
        seen.append({name: getattr(ctx, name) for name in fields})
        seen[-1].update(messages=len(ctx.messages), usage=ctx.usage, run_id=ctx.run_id, agent=ctx.agent)
        return 1

    agent = lean(create_agentool('info', InfoInput, RoutingConfig(operation_map={'info': 'info'}), [info]))
    await warm(agent, '{"operation": "info"}')
    out = await differential(agent, '{"operation": "info"}', deps=lambda: 'the deps')
    assert out.result is not None
    graph, lean_seen = seen[-2], seen[-1]
    assert lean_seen['run_id'] == out.result.run_id
    assert lean_seen['usage'] is out.result.usage
    assert graph.pop('run_id') != lean_seen.pop('run_id')
    assert graph.pop('usage') == lean_seen.pop('usage')
    assert lean_seen == graph
    assert lean_seen['agent'] is agent
    assert lean_seen['deps'] == 'the deps'


async def test_lean_results_share_no_mutable_state() -> None:
    # Each result owns its messages, usages and dicts, as a graph run's does: changing one result (or
    # what a tool did to `ctx.usage`) shows in no other result and in no later run.
    agent = lean(create_calculator())
    await warm(agent, CALC)
    first, second = await agent.run(CALC), await agent.run(CALC)
    assert agent.lean_runs == 2
    assert first.usage is not second.usage
    for a, b in zip(first.all_messages(), second.all_messages(), strict=True):
        assert a is not b
        assert a.parts is not b.parts
        if isinstance(a, ModelResponse) and isinstance(b, ModelResponse):
            assert a.usage is not b.usage
    response = first.all_messages()[1]
    assert isinstance(response, ModelResponse)
    response.usage.input_tokens += 5
    first.usage.requests += 7
    third = await agent.run(CALC)
    assert third.usage == second.usage
    assert third.all_messages()[1].usage == second.all_messages()[1].usage  # type: ignore[union-attr]


PROMPT = json.dumps({'operation': 'add', 'a': 1, 'b': 2})


class AddInput(BaseOperationInput):
    operation: Literal['add']
    a: float
    b: float


Run = Callable[[AgenToolAgent], Awaitable[Any]]


async def warmed() -> AgenToolAgent:
    agent = create_calculator()
    assert isinstance(agent, AgenToolAgent)
    await agent.run(PROMPT)  # learns the shape
    assert agent.lean
    assert (await agent.run(PROMPT)).output == 3.0
    assert agent.lean_runs == 1
    return agent


async def _handler(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
    async for _ in events:
        pass


async def _stream(agent: AgenToolAgent) -> float:
    async with agent.run_stream(PROMPT) as result:
        return await result.get_output()


async def _iter(agent: AgenToolAgent) -> float:
    async with agent.iter(PROMPT) as run:
        async for _ in run:
            pass
    assert run.result is not None
    return run.result.output


async def _override(agent: AgenToolAgent) -> float:
    with agent.override(model=AgenToolModel('calculator')):
        return (await agent.run(PROMPT)).output


def _keep(messages: list[ModelMessage]) -> list[ModelMessage]:
    return messages


FALLBACKS: dict[str, Run] = {
    'run_stream': _stream,
    'iter': _iter,
    'event_stream_handler': lambda a: a.run(PROMPT, event_stream_handler=_handler),
    'instructions': lambda a: a.run(PROMPT, instructions='Be brief.'),
    'capabilities': lambda a: a.run(PROMPT, capabilities=[Hooks()]),
    'usage_limits': lambda a: a.run(PROMPT, usage_limits=UsageLimits(request_limit=5)),
    'model': lambda a: a.run(PROMPT, model=AgenToolModel('calculator')),
    'override': _override,
    'output_type': lambda a: a.run(PROMPT, output_type=float),
    'metadata': lambda a: a.run(PROMPT, metadata={'k': 1}),
    'toolsets': lambda a: a.run(PROMPT, toolsets=[FunctionToolset([])]),
    'non-text prompt': lambda a: a.run([PROMPT]),
}


@pytest.mark.parametrize('name', sorted(FALLBACKS))
async def test_a_run_that_needs_the_graph_gets_it(name: str) -> None:
    agent = await warmed()
    result = await FALLBACKS[name](agent)
    output = getattr(result, 'output', result)
    assert output == 3.0
    assert agent.lean_runs == 1, f'{name} must take the graph'
    await agent.run(PROMPT)
    assert agent.lean_runs == 2, 'later plain runs are lean again'


async def test_iterating_streaming_and_event_handlers_see_the_graph() -> None:
    # A capability cannot tell how a run is driven, so only `run`/`run_sync` without an event
    # handler or run-level instructions are answered lean: the others get the graph's nodes and events.
    agent = await warmed()
    async with agent.iter(PROMPT) as run:
        nodes = [type(node).__name__ async for node in run]
    assert nodes[0] == 'UserPromptNode'
    assert nodes[-1] == 'End'
    events: list[AgentStreamEvent] = []

    async def collect(ctx: RunContext[Any], stream: AsyncIterable[AgentStreamEvent]) -> None:
        events.extend([event async for event in stream])

    await agent.run(PROMPT, event_stream_handler=collect)
    assert any(type(event).__name__ == 'FunctionToolCallEvent' for event in events)
    result = await agent.run(PROMPT, instructions='Be brief.')
    assert any(getattr(m, 'instructions', None) == 'Be brief.' for m in result.new_messages())
    assert agent.lean_runs == 1  # the warm-up's second run only
    await agent.run(PROMPT)
    assert agent.lean_runs == 2


async def test_a_given_run_id_is_the_lean_runs_own() -> None:
    agent = await warmed()
    result = await agent.run(PROMPT, run_id='mine')
    assert agent.lean_runs == 2
    assert result.run_id == 'mine'
    assert {message.run_id for message in result.new_messages()} == {'mine'}


@pytest.mark.parametrize(
    ('attribute', 'graph', 'back'),
    [('instrument', True, None), ('lean', False, True)],
    ids=['instrumentation_on_the_agent_takes_the_graph', 'forcing_the_graph_and_back'],
)
async def test_a_setting_on_the_agent_takes_the_graph_and_back(attribute: str, graph: Any, back: Any) -> None:
    agent = await warmed()
    for value, lean_runs in ((graph, 1), (back, 2)):
        setattr(agent, attribute, value)
        await agent.run(PROMPT)
        assert agent.lean_runs == lean_runs


async def test_instrument_all_takes_the_graph_unless_the_agent_opts_out() -> None:
    # pydantic-ai's rule: the agent's own `instrument`, when set, wins over `Agent.instrument_all`.
    agent = await warmed()
    Agent.instrument_all(True)
    try:
        await agent.run(PROMPT)
        assert agent.lean_runs == 1, 'Agent.instrument_all traces every agent: the run takes the graph'
        agent.instrument = False
        await agent.run(PROMPT)
        assert agent.lean_runs == 2, 'an agent that opts out of instrumentation is not traced: lean'
        agent.instrument = None
    finally:
        Agent.instrument_all(False)
    await agent.run(PROMPT)
    assert agent.lean_runs == 3


@pytest.mark.parametrize(
    ('register', 'blocker'),
    [
        (lambda a: a.output_validator(lambda output: output), 'an output validator'),
        (lambda a: a.system_prompt(lambda: 'more'), 'a system prompt function'),
        (lambda a: a.instructions(lambda: 'more'), 'an instructions function'),
        (lambda a: a.tool(divide_tool), 'a tool registered on the agent'),
    ],
)
async def test_registering_on_the_agent_makes_its_runs_take_the_graph(
    register: Callable[[AgenToolAgent], Any], blocker: str
) -> None:
    agent = await warmed()
    register(agent)
    assert agent.lean_blocker == blocker
    await agent.run(PROMPT)
    assert agent.lean_runs == 1


@pytest.mark.parametrize(
    'options',
    [
        {'capabilities': [ProcessHistory(_keep)]},
        {'capabilities': [Hooks()]},
        {'metadata': {'k': 1}},
        {'toolsets': [FunctionToolset([])]},
        {'tool_timeout': 5.0},
        {'max_concurrency': 2},
        {'instructions': lambda: 'dynamic'},
        {'lean': False},
    ],
)
async def test_constructor_options_that_need_the_graph_are_decided_once(options: dict[str, Any]) -> None:
    agent = create_agentool('calc', AddInput, RoutingConfig(operation_map={'add': 'add'}), [add], **options)
    assert isinstance(agent, AgenToolAgent)
    assert not agent.lean
    assert agent.lean_blocker is not None
    for _ in range(2):
        assert (await agent.run(PROMPT)).output == 3.0
    assert agent.lean_runs == 0


async def test_a_plain_agent_with_the_capability_is_not_affected() -> None:
    create_calculator()
    agent = Agent('agentool:calculator', capabilities=[AgenToolCapability('calculator')], output_type=float)
    assert (await agent.run(PROMPT)).output == 3.0
    bare = Agent(TestModel())
    assert (await bare.run('hi')).output


def test_an_installed_tracer_provider_takes_the_graph() -> None:
    script = (
        'import json\n'
        'from opentelemetry import trace\n'
        'from opentelemetry.sdk.trace import TracerProvider\n'
        'from examples.calculator import create_calculator\n'
        'agent = create_calculator(replace=True)\n'
        "prompt = json.dumps({'operation': 'add', 'a': 1, 'b': 2})\n"
        'agent.run_sync(prompt); agent.run_sync(prompt)\n'
        'trace.set_tracer_provider(TracerProvider())\n'
        'agent.run_sync(prompt)\n'
        'print(agent.lean_runs)\n'
    )
    assert run_python(script).split() == ['1']


async def test_capture_run_messages_needs_the_graph_forced() -> None:
    """`capture_run_messages` is not filled by a lean run (documented): force the graph to use it."""
    agent = await warmed()
    agent.lean = False
    with capture_run_messages() as messages:
        await agent.run(PROMPT)
    assert len(messages) == 5
