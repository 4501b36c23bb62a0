"""Every run that needs the agent graph gets it: each documented fallback condition, one by one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterable, Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic_ai import Agent, FunctionToolset, RunContext, UsageLimits, capture_run_messages
from pydantic_ai.capabilities import Hooks, ProcessHistory
from pydantic_ai.messages import AgentStreamEvent, ModelMessage
from pydantic_ai.models.test import TestModel

from agentool import (
    AgenToolAgent,
    AgenToolCapability,
    AgenToolModel,
    BaseOperationInput,
    RoutingConfig,
    create_agentool,
)
from examples.calculator import add, create_calculator
from examples.calculator import divide as divide_tool

ROOT = Path(__file__).resolve().parent.parent
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


async def test_instrumentation_on_the_agent_takes_the_graph() -> None:
    agent = await warmed()
    agent.instrument = True
    await agent.run(PROMPT)
    assert agent.lean_runs == 1
    agent.instrument = None
    await agent.run(PROMPT)
    assert agent.lean_runs == 2


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
    agent = create_agentool('calc', AddInput, create_calculator_routes(), [add], **options)
    assert isinstance(agent, AgenToolAgent)
    assert not agent.lean
    assert agent.lean_blocker is not None
    for _ in range(2):
        assert (await agent.run(PROMPT)).output == 3.0
    assert agent.lean_runs == 0


def create_calculator_routes() -> RoutingConfig:
    return RoutingConfig(operation_map={'add': 'add'})


async def test_forcing_the_graph_and_back() -> None:
    agent = await warmed()
    agent.lean = False
    await agent.run(PROMPT)
    assert agent.lean_runs == 1
    agent.lean = True
    await agent.run(PROMPT)
    assert agent.lean_runs == 2


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
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    out = subprocess.run([sys.executable, '-c', script], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.split() == ['1']


async def test_capture_run_messages_needs_the_graph_forced() -> None:
    """`capture_run_messages` is not filled by a lean run (documented): force the graph to use it."""
    agent = await warmed()
    agent.lean = False
    with capture_run_messages() as messages:
        await agent.run(PROMPT)
    assert len(messages) == 5
