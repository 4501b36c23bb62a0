"""Record real runs at the tool level with `Recorder` (a cassette of runs), serve them back with `Replay`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool.errors import CassetteError, ConfigurationError, DriftError, UnexpectedPromptError, UnrecordedCallError
from agentool.testing import AgentDouble, Call, Output, OutputFrom, Recorder, Recording, Replay, Script, canonical_args
from tests.agentools import PARIS, advisor, run_with


class Forecast(BaseModel):
    city: str
    temp_c: float


class Tools:
    """The agent's tools, counting real executions."""

    def __init__(self) -> None:
        self.executed: list[str] = []

    def attach(self, agent: Agent[None, Any]) -> None:
        @agent.tool_plain
        def geocode(city: str) -> dict[str, float]:
            """Coordinates of a city."""
            self.executed.append('geocode')
            return {'lat': 48.85, 'lon': 2.35}

        @agent.tool_plain
        def weather(lat: float, lon: float) -> dict[str, float]:
            """Temperature at coordinates."""
            self.executed.append('weather')
            return {'temp_c': 21.5}


def make_agent(output_type: Any = Forecast) -> tuple[Agent[None, Any], Tools]:
    agent: Agent[None, Any] = Agent('anthropic:claude-sonnet-4-5', defer_model_check=True, output_type=output_type)
    tools = Tools()
    tools.attach(agent)
    return agent, tools


def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A stand-in for a real LLM: a bad call it has to redo, then a good path."""
    answered = sum(isinstance(m, ModelResponse) for m in messages)
    if answered == 0:
        return ModelResponse(
            parts=[ToolCallPart('geocode', {'town': 'Paris'}), ToolCallPart('geocode', {'city': 'Paris'})]
        )
    if answered == 1:
        return ModelResponse(parts=[TextPart('Now the weather.'), ToolCallPart('weather', {'lon': 2.35, 'lat': 48.85})])
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {'city': 'Paris', 'temp_c': 21.5})])


async def record(path: Path, *prompts: str) -> None:
    agent, _ = make_agent()
    recorder = Recorder(path)
    with agent.override(model=FunctionModel(llm)):
        for prompt in prompts:
            await agent.run(prompt, capabilities=[recorder])


@pytest.fixture
async def recorded(tmp_path: Path) -> Path:
    """A cassette of one run, 'Weather in Paris?'."""
    path = tmp_path / 'weather.json'
    await record(path, 'Weather in Paris?')
    return path


async def test_recorder_writes_the_path_that_worked(tmp_path: Path) -> None:
    path = tmp_path / 'recordings' / 'weather.json'
    await record(path, 'Weather in Paris?')
    data = json.loads(path.read_text())
    assert (data['format'], data['version'], 'exchanges' in data) == ('agentool-cassette', 2, True)
    assert data['exchanges'] == []
    (run,) = data['runs']
    assert run['prompt'] == 'Weather in Paris?'
    # The call the model had to redo (a wrong field) is left out.
    assert run['steps'] == [
        [{'tool': 'geocode', 'args': {'city': 'Paris'}}],
        [{'tool': 'weather', 'args': {'lon': 2.35, 'lat': 48.85}}],
    ]
    assert 'tool_calls' not in run  # the cassette keeps every tool result in one list
    assert [(c['tool'], c['result']) for c in data['tool_calls']] == [
        ('geocode', {'lat': 48.85, 'lon': 2.35}),
        ('weather', {'temp_c': 21.5}),
    ]
    assert run['output'] == {'city': 'Paris', 'temp_c': 21.5}
    assert not list(path.parent.glob('.*.tmp'))


async def test_replay_runs_offline_without_real_tools(recorded: Path) -> None:
    agent, tools = make_agent()
    replay = Replay(recorded)
    with override_allow_model_requests(False), agent.override(model=replay.model):
        result = await agent.run('Weather in Paris?', capabilities=[replay])
    assert result.output == Forecast(city='Paris', temp_c=21.5)
    assert tools.executed == []
    replay.calls.assert_order(('geocode', {'city': 'Paris'}), ('weather', {'lat': 48.85, 'lon': 2.35}))


async def test_replay_streams(recorded: Path) -> None:
    agent, _ = make_agent()
    replay = Replay(recorded)
    with agent.override(model=replay.model):
        async with agent.run_stream('Weather in Paris?', capabilities=[replay]) as stream:
            assert await stream.get_output() == Forecast(city='Paris', temp_c=21.5)


async def test_a_call_that_was_not_recorded_fails_clearly(recorded: Path) -> None:
    agent, tools = make_agent()
    replay = Replay(recorded)
    double = AgentDouble(Script(Call('weather', {'lat': 1, 'lon': 2}), Output(None)))
    with agent.override(model=double), pytest.raises(UnrecordedCallError) as caught:
        await agent.run('x', capabilities=[replay])
    assert str(caught.value) == (
        f'replay: tool \'weather\' was called with {{"lat":1,"lon":2}}, which cassette {str(recorded)!r} '
        'does not hold; recorded calls of \'weather\': {"lat":48.85,"lon":2.35}'
    )
    assert tools.executed == []


async def test_tool_outputs_are_keyed_by_canonical_arguments(recorded: Path) -> None:
    agent, _ = make_agent()
    replay = Replay(recorded)
    # Other key order, and 48.85 sent as is: the recorded output is served.
    double = AgentDouble(Script(Call('weather', {'lat': 48.85, 'lon': 2.35}), Output({'city': 'x', 'temp_c': 0})))
    with agent.override(model=double):
        await agent.run('x', capabilities=[replay])
    assert double.calls[0].result == {'temp_c': 21.5}
    assert canonical_args({'b': 2.0, 'a': [1.0, {'y': 1, 'x': 'é'}]}) == '{"a":[1,{"x":"é","y":1}],"b":2}'


async def test_a_prompt_that_was_not_recorded_fails_clearly(recorded: Path) -> None:
    agent, _ = make_agent()
    replay = Replay(recorded)
    with (
        agent.override(model=replay.model),
        pytest.raises(UnexpectedPromptError, match="no script matches prompt 'Rome'"),
    ):
        await agent.run('Rome', capabilities=[replay])


async def test_a_recording_that_no_longer_fits_the_agent_is_drift(recorded: Path) -> None:
    changed: Agent[None, Forecast] = Agent('anthropic:claude-sonnet-4-5', defer_model_check=True, output_type=Forecast)

    @changed.tool_plain
    def geocode(place: str) -> dict[str, float]:  # the parameter was renamed since the recording
        """Coordinates of a place."""
        return {'lat': 0.0, 'lon': 0.0}

    replay = Replay(recorded)
    with changed.override(model=replay.model), pytest.raises(DriftError, match="without its required field 'place'"):
        await changed.run('Weather in Paris?', capabilities=[replay])


async def test_a_prompt_recorded_twice_is_replayed_in_turn(tmp_path: Path) -> None:
    path = tmp_path / 'twice.json'
    agent, _ = make_agent(str)
    recorder = Recorder(path)
    for text in ('first', 'second'):
        with agent.override(model=AgentDouble(Script(Call('geocode', {'city': text}), Output(text)))):
            await agent.run('same prompt', capabilities=[recorder])
    assert len(Recording.load(path).runs) == 2
    replay = Replay(path)
    with agent.override(model=replay.model):
        outputs = [(await agent.run('same prompt', capabilities=[replay])).output for _ in range(2)]
    assert outputs == ['first', 'second']


def test_missing_and_broken_recordings_are_cassette_errors(tmp_path: Path) -> None:
    missing = tmp_path / 'missing.json'
    with pytest.raises(CassetteError, match=r'does not exist; record it first .*or Recorder'):
        Replay(missing)
    broken = tmp_path / 'broken.json'
    broken.write_text('{"format": "agentool-recording", "version": 1, "runs": 3}')
    with pytest.raises(CassetteError, match='is not an agentool cassette'):
        Recording.load(broken)
    with pytest.raises(ConfigurationError, match='holds nothing to replay'):
        Replay(Recording())


@pytest.mark.parametrize(('build', 'option'), [(Recorder, 'path'), (Replay, 'source')])
def test_a_path_that_is_not_a_path_is_refused(build: Any, option: str) -> None:
    with pytest.raises(ConfigurationError, match='path') as caught:
        build(123)
    assert caught.value.details == {'option': option, 'value': '123'}


async def test_a_failed_run_is_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / 'failed.json'
    agent, _ = make_agent(str)
    recorder = Recorder(path)
    with agent.override(model=AgentDouble(Script(Call('geocode', {'city': 'Paris'}), Output('ok')))):
        await agent.run('good', capabilities=[recorder])
    with agent.override(model=AgentDouble(Script(Call('nowhere'), Output('never')))), pytest.raises(DriftError):
        await agent.run('bad', capabilities=[recorder])
    assert [run.prompt for run in Recording.load(path).runs] == ['good']
    assert [run.prompt for run in recorder.recording.runs] == ['good']


def paris_double() -> AgentDouble:
    return AgentDouble(Script(Call('get_weather', {'lat': 48.86, 'lon': 2.35}), Output(PARIS)))


async def record_paris(path: Path) -> dict[str, Any]:
    await run_with(advisor(), paris_double(), capabilities=[Recorder(path)])
    return Recording.load(path).model_dump(mode='json')


async def test_a_streamed_run_is_recorded_and_replayed(tmp_path: Path) -> None:
    agent = advisor()
    path = tmp_path / 'stream.json'
    with agent.override(model=paris_double()):
        async with agent.run_stream('Paris?', capabilities=[Recorder(path)]) as stream:
            assert await stream.get_output() == PARIS
    replay = Replay(path)
    assert await run_with(agent, replay.model, capabilities=[replay]) == PARIS
    replay.calls.assert_called('get_weather', {'lat': 48.86, 'lon': 2.35})


async def test_a_nested_run_is_recorded_by_the_run_it_was_given_to(tmp_path: Path) -> None:
    inner = advisor()
    outer: Agent[None, str] = Agent('test')

    @outer.tool_plain
    async def ask_inner(question: str) -> str:
        return (await inner.run(question)).output.city

    path = tmp_path / 'nested.json'
    outer_double = AgentDouble(
        Script(Call('ask_inner', {'question': 'where?'}), OutputFrom(lambda run: run.result('ask_inner')))
    )
    with outer.override(model=outer_double), inner.override(model=paris_double()):
        assert (await outer.run('go', capabilities=[Recorder(path)])).output == 'Paris'
    runs = json.loads(path.read_text())['runs']
    assert [r['prompt'] for r in runs] == ['go']
    replay = Replay(path)
    assert await run_with(outer, replay.model, 'go', capabilities=[replay]) == 'Paris'  # the inner agent is not run


async def test_a_drifted_recording_is_drift(tmp_path: Path) -> None:
    data = await record_paris(tmp_path / 'paris.json')
    data['runs'][0]['steps'][0][0]['args'] = {'latitude': 48.86, 'lon': 2.35}
    (tmp_path / 'drift.json').write_text(json.dumps(data))
    replay = Replay(tmp_path / 'drift.json')
    with pytest.raises(DriftError) as caught:
        await run_with(advisor(), replay.model, capabilities=[replay])
    assert caught.value.details['fields'] == ['lat', 'latitude']


async def test_a_recording_whose_results_are_gone_is_an_unrecorded_call(tmp_path: Path) -> None:
    data = await record_paris(tmp_path / 'paris.json')
    data['tool_calls'] = []  # a cassette keeps every tool result in one list
    replay = Replay(Recording.model_validate(data))
    with pytest.raises(UnrecordedCallError) as caught:
        await run_with(advisor(), replay.model, capabilities=[replay])
    assert caught.value.details['tool'] == 'get_weather'


@pytest.mark.parametrize(
    'content',
    [b'not json', b'\xff\xfe', b'{"format": "agentool-recording", "version": 2, "runs": []}', b'[]'],
)
def test_a_malformed_recording_is_a_cassette_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / 'bad.json'
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=r'not an agentool cassette|recording version 2') as caught:
        Replay(path)
    assert caught.value.details['path'] == str(path)


def test_a_directory_given_as_a_recording_is_a_cassette_error(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='cannot read') as caught:
        Replay(tmp_path)
    assert caught.value.details['path'] == str(tmp_path)


def test_a_recorder_that_cannot_write_its_file_is_a_cassette_error(tmp_path: Path) -> None:
    agent = advisor()
    with agent.override(model=paris_double()), pytest.raises(CassetteError, match='cannot write') as caught:
        agent.run_sync('Paris?', capabilities=[Recorder(tmp_path)])
    assert caught.value.details['path'] == str(tmp_path)
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_a_recorder_refuses_an_empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as caught:
        Recorder('')
    assert caught.value.details['option'] == 'path'
    assert list(tmp_path.iterdir()) == []


def test_an_empty_recording_object_is_refused_with_details() -> None:
    with pytest.raises(ConfigurationError, match='holds nothing to replay') as caught:
        Replay(Recording())
    assert caught.value.details['option'] == 'source'
