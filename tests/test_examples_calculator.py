"""The calculator example on every way to run an agent: run, run_sync, streams, iter, history, model string."""

from __future__ import annotations

import json

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ToolCallPart

from agentool import MANAGER_TOOL_NAME, AgenToolModel
from examples.calculator import create_calculator


async def test_add_gives_typed_float() -> None:
    calculator = create_calculator()
    result = await calculator.run('{"operation": "add", "a": 5, "b": 3}')
    assert result.output == 8.0
    assert isinstance(result.output, float)


@pytest.mark.parametrize(
    ('operation', 'expected'), [('add', 8.0), ('subtract', 2.0), ('multiply', 15.0), ('divide', 5 / 3)]
)
async def test_every_operation_including_the_sync_tool(operation: str, expected: float) -> None:
    calculator = create_calculator()
    result = await calculator.run(json.dumps({'operation': operation, 'a': 5, 'b': 3}))
    assert result.output == pytest.approx(expected)


async def test_run_makes_one_manager_call_and_reports_zero_tokens() -> None:
    calculator = create_calculator()
    result = await calculator.run('{"operation": "add", "a": 1, "b": 2}')
    calls = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolCallPart)]
    assert calls[0].tool_name == MANAGER_TOOL_NAME
    assert calls[0].args_as_dict() == {'operation': 'add', 'a': 1, 'b': 2}
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens) == (0, 0)
    assert usage.tool_calls == 1


def test_agent_model_is_an_agentool_model() -> None:
    calculator = create_calculator()
    assert isinstance(calculator.model, AgenToolModel)
    assert calculator.model.model_name == 'calculator'
    assert calculator.model.system == 'agentool'


def test_run_sync() -> None:
    calculator = create_calculator()
    assert calculator.run_sync('{"operation": "multiply", "a": 2, "b": 4}').output == 8.0


@pytest.mark.parametrize('plain', [False, True])
async def test_run_stream_gives_the_same_output(plain: bool) -> None:
    calculator = create_calculator()
    agent = Agent('agentool:calculator', output_type=float) if plain else calculator
    async with agent.run_stream('{"operation": "subtract", "a": 10, "b": 4}') as stream:
        assert await stream.get_output() == 6.0


async def test_run_stream_events_ends_with_the_result() -> None:
    calculator = create_calculator()
    async with calculator.run_stream_events('{"operation": "add", "a": 2, "b": 2}') as stream:
        events = [event async for event in stream]
    assert type(events[-1]).__name__ == 'AgentRunResultEvent'
    assert events[-1].result.output == 4.0  # pyright: ignore[reportAttributeAccessIssue]


async def test_iter_walks_the_graph_to_the_same_output() -> None:
    calculator = create_calculator()
    async with calculator.iter('{"operation": "add", "a": 2, "b": 5}') as run:
        nodes = [node async for node in run]
    assert run.result is not None
    assert run.result.output == 7.0
    assert len(nodes) >= 4


async def test_second_turn_with_message_history_routes_the_new_prompt() -> None:
    calculator = create_calculator()
    first = await calculator.run('{"operation": "add", "a": 1, "b": 1}')
    second = await calculator.run('{"operation": "multiply", "a": 3, "b": 3}', message_history=first.all_messages())
    assert second.output == 9.0
    assert len(second.all_messages()) > len(first.all_messages())


async def test_plain_agent_from_model_string_gives_the_same_result() -> None:
    calculator = create_calculator()
    typed = await calculator.run('{"operation": "divide", "a": 9, "b": 3}')
    plain = Agent('agentool:calculator')
    result = await plain.run('{"operation": "divide", "a": 9, "b": 3}')
    assert json.loads(result.output) == typed.output
    typed_plain = Agent('agentool:calculator', output_type=float)
    assert (await typed_plain.run('{"operation": "divide", "a": 9, "b": 3}')).output == typed.output
