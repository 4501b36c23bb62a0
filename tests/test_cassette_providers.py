"""Cassettes recorded through real provider model classes (their SDKs over tests/provider_mocks.py),
replayed with no network: the output, messages and stream events are the plain run's, bar timestamps and ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, AgentRunResultEvent, AgentStreamEvent, ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ThinkingPart, ToolCallPart, ToolReturnPart
from pydantic_core import to_jsonable_python

from agentool.errors import CassetteMismatchError
from agentool.testing import Cassette, CassetteModel

pytest.importorskip('openai')
pytest.importorskip('anthropic')

from tests.provider_mocks import KINDS, REFUSED, Kind, MockServer, Turn, refusing_model


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


def expected_output(scenario: str) -> object:
    """The scenario's last scripted answer: its text, or the output tool's arguments as the output type."""
    turns, output_type = SCENARIOS[scenario]
    return turns[-1].text if output_type is str else output_type(**turns[-1].args)


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


@dataclass
class Outcome:
    output: object
    messages: list[ModelMessage]
    events: list[dict[str, Any]]


async def run_agent(agent: Agent[None, Any], how: str) -> Outcome:
    prompt = 'Weather in Paris?'
    if how == 'run':
        result = await agent.run(prompt)
        return Outcome(result.output, result.all_messages(), [])
    if how == 'stream':
        async with agent.run_stream(prompt) as streamed:
            output = await streamed.get_output()
            return Outcome(output, streamed.all_messages(), [])
    async with agent.run_stream_events(prompt) as stream:
        events: list[AgentStreamEvent | AgentRunResultEvent[Any]] = [event async for event in stream]
    final = events[-1]
    assert isinstance(final, AgentRunResultEvent)
    return Outcome(final.result.output, final.result.all_messages(), [_plain(event) for event in events[:-1]])


_VARYING = frozenset({'timestamp', 'run_id', 'conversation_id'})  # what differs between two runs of one conversation


def _plain(value: Any) -> Any:
    """JSON of messages or events, without the keys that differ from run to run."""
    if not isinstance(value, dict | list):
        value = to_jsonable_python(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in _VARYING}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def messages_json(messages: list[ModelMessage]) -> Any:
    return _plain(ModelMessagesTypeAdapter.dump_python(messages, mode='json'))


def check_provider_run(
    kind: Kind, scenario: str, how: str, server: MockServer, outcome: Outcome, called: list[str]
) -> None:
    """The run went through the provider's wire format and back as scripted."""
    turns = SCENARIOS[scenario][0]
    assert outcome.output == expected_output(scenario)
    assert len(server.requests) == len(turns)
    assert all(bool(body.get('stream')) is (how != 'run') for body in server.requests)
    responses = [m for m in outcome.messages if isinstance(m, ModelResponse)]
    assert [r.provider_name for r in responses] == [kind.split('-')[0]] * len(turns)
    # Every scripted part came back as the pydantic-ai part it stands for, in order.
    for response, turn in zip(responses, turns, strict=True):
        scripted = [(ThinkingPart, turn.thinking), (TextPart, turn.text), (ToolCallPart, turn.tool)]
        assert [type(part) for part in response.parts] == [kind for kind, given in scripted if given is not None]
        assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    thinking = [p.content for r in responses for p in r.parts if isinstance(p, ThinkingPart)]
    assert thinking == [t.thinking for t in turns if t.thinking is not None]
    returns = [
        p.content
        for m in outcome.messages
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.tool_name == 'weather'
    ]
    uses_tool = scenario in ('tool', 'thinking')
    assert called == (['Paris'] if uses_tool else [])
    assert returns == (['21.5 C, sunny'] if uses_tool else [])
    if how == 'events':
        assert [e['event_kind'] for e in outcome.events].count('part_delta') >= 1


# Every scenario with `run` and `run_stream`; the event stream itself (every delta, in order) for
# the richest one: thinking, a tool call, thinking again and the answer.
CASES = [(scenario, how) for scenario in SCENARIOS for how in ('run', 'stream')] + [('thinking', 'events')]


@pytest.mark.parametrize(('scenario', 'how'), CASES, ids=[f'{s}-{h}' for s, h in CASES])
@pytest.mark.parametrize('kind', KINDS)
async def test_a_run_recorded_through_the_provider_replays_offline(
    kind: Kind, scenario: str, how: str, tmp_path: Path
) -> None:
    turns, output_type = SCENARIOS[scenario]
    cassette = tmp_path / 'weather.json'
    server = MockServer(kind, turns)
    agent, called = make_agent(CassetteModel(server.model(), cassette=cassette, mode='once'), output_type)
    recorded = await run_agent(agent, how)
    check_provider_run(kind, scenario, how, server, recorded, called)
    assert len(json.loads(cassette.read_text())['exchanges']) == len(turns)

    REFUSED.clear()
    for wrapped in (refusing_model(kind), None):
        agent, called = make_agent(CassetteModel(wrapped, cassette=cassette, mode='none'), output_type)
        replayed = await run_agent(agent, how)
        assert replayed.output == recorded.output == expected_output(scenario)
        assert messages_json(replayed.messages) == messages_json(recorded.messages)
        assert replayed.events == recorded.events
        # The tools still run on replay (only the model is recorded here), with the recorded arguments.
        assert called == (['Paris'] if scenario in ('tool', 'thinking') else [])
    assert REFUSED == []


async def test_recording_is_transparent() -> None:
    """A recorded run is the plain run: same output, messages and stream events."""
    turns, output_type = SCENARIOS['thinking']
    outcomes: list[Outcome] = []
    for record in (False, True):
        model = MockServer('openai-responses', turns).model()
        agent, _ = make_agent(CassetteModel(model, cassette=Cassette(), mode='all') if record else model, output_type)
        outcomes.append(await run_agent(agent, 'events'))
    plain, recorded = outcomes
    assert recorded.output == plain.output
    assert messages_json(recorded.messages) == messages_json(plain.messages)
    assert recorded.events == plain.events


@pytest.mark.parametrize('kind', KINDS)
async def test_a_changed_tool_schema_fails_the_replay_naming_it(kind: Kind, tmp_path: Path) -> None:
    turns, output_type = SCENARIOS['tool']
    cassette = tmp_path / 'weather.json'
    agent, _ = make_agent(CassetteModel(MockServer(kind, turns).model(), cassette=cassette, mode='once'), output_type)
    await agent.run('Weather in Paris?')

    changed: Agent[None, Any] = Agent(output_type=output_type, instructions='Answer about the weather.')

    @changed.tool_plain
    def weather(city: str, unit: str) -> str:
        """The weather in a city."""
        raise AssertionError('not reached: the first request already fails')

    REFUSED.clear()
    with pytest.raises(CassetteMismatchError) as failure:
        await changed.run('Weather in Paris?', model=CassetteModel(refusing_model(kind), cassette=cassette))
    assert failure.value.details['changes'][0].startswith("tool 'weather': schema changed: ")
    assert REFUSED == []
