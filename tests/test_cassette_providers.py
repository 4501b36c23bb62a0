"""Real provider model classes against provider-shaped mock servers (tests/provider_mocks.py).

`OpenAIChatModel`, `OpenAIResponsesModel` and `AnthropicModel` run with their official SDK clients
over an `httpx2.MockTransport`: text, tool calls, thinking and structured output, each with
`agent.run` and `agent.run_stream`.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ThinkingPart, ToolCallPart, ToolReturnPart

pytest.importorskip('openai')
pytest.importorskip('anthropic')

from tests.provider_mocks import KINDS, Kind, MockServer, Turn


class Forecast(BaseModel):
    city: str
    temp_c: float


SCENARIOS: dict[str, tuple[list[Turn], Any]] = {
    'text': ([Turn(text='Hello from the model.')], str),
    # No text beside the tool call: `run_stream` would take that text as the final output.
    'tool': ([Turn(tool='weather', args={'city': 'Paris'}), Turn(text='It is 21.5 C in Paris.')], str),
    'thinking': (
        [
            Turn(thinking='The user wants Paris.', tool='weather', args={'city': 'Paris'}),
            Turn(thinking='Now I can answer.', text='Sunny, 21.5 C.'),
        ],
        str,
    ),
    'output-tool': ([Turn(tool='final_result', args={'city': 'Paris', 'temp_c': 21.5})], Forecast),
}
EXPECTED_OUTPUT: dict[str, object] = {
    'text': 'Hello from the model.',
    'tool': 'It is 21.5 C in Paris.',
    'thinking': 'Sunny, 21.5 C.',
    'output-tool': Forecast(city='Paris', temp_c=21.5),
}


def make_agent(model: Any, output_type: Any) -> tuple[Agent[None, Any], list[str]]:
    """An agent with one tool, and the list of cities that tool was really called with."""
    agent: Agent[None, Any] = Agent(model, output_type=output_type, instructions='Answer about the weather.')
    called: list[str] = []

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        called.append(city)
        return '21.5 C, sunny'

    return agent, called


async def run_agent(agent: Agent[None, Any], *, stream: bool) -> tuple[object, list[ModelMessage]]:
    if stream:
        async with agent.run_stream('Weather in Paris?') as result:
            output = await result.get_output()
            return output, result.all_messages()
    result = await agent.run('Weather in Paris?')
    return result.output, result.all_messages()


def part_kinds(messages: list[ModelMessage]) -> list[list[str]]:
    return [[part.part_kind for part in message.parts] for message in messages]


@pytest.mark.parametrize('stream', [False, True], ids=['run', 'stream'])
@pytest.mark.parametrize('scenario', list(SCENARIOS))
@pytest.mark.parametrize('kind', KINDS)
async def test_plain_agent_runs_against_the_mock_provider(kind: Kind, scenario: str, stream: bool) -> None:
    turns, output_type = SCENARIOS[scenario]
    server = MockServer(kind, turns)
    agent, called = make_agent(server.model(), output_type)

    output, messages = await run_agent(agent, stream=stream)

    assert output == EXPECTED_OUTPUT[scenario]
    assert len(server.requests) == len(turns)
    assert all(bool(body.get('stream')) is stream for body in server.requests)
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    assert [r.provider_name for r in responses] == [kind.split('-')[0]] * len(turns)
    assert [r.model_name for r in responses] == [server.model().model_name] * len(turns)
    # Every scripted part came back as the pydantic-ai part it stands for, in order.
    for response, turn in zip(responses, turns, strict=True):
        expected: list[type] = []
        expected += [ThinkingPart] * (turn.thinking is not None)
        expected += [TextPart] * (turn.text is not None)
        expected += [ToolCallPart] * (turn.tool is not None)
        assert [type(part) for part in response.parts] == expected
        assert response.usage.input_tokens == 11
        assert response.usage.output_tokens == 7
    if scenario in ('tool', 'thinking'):
        assert called == ['Paris']
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        assert [r.content for r in returns] == ['21.5 C, sunny']
    else:
        assert called == []
    thinking = [p.content for r in responses for p in r.parts if isinstance(p, ThinkingPart)]
    assert thinking == [t.thinking for t in turns if t.thinking is not None]
    assert part_kinds(messages)[0] == ['user-prompt']
