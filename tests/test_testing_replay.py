"""Record real runs at the tool level with `Recorder` (a cassette of runs), serve them back with `Replay`.

One recording concept: a cassette holds tool results too; `Replay` serves cassettes and old recordings.

Tool results replayed from a cassette are the type the tool returned, equal to the live value.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ToolReturn
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import FunctionToolset

from agentool.errors import CassetteError, ConfigurationError, DriftError, UnexpectedPromptError, UnrecordedCallError
from agentool.testing import (
    AgentDouble,
    Call,
    Cassette,
    CassetteModel,
    CassetteTools,
    CassetteToolset,
    Output,
    OutputFrom,
    Recorder,
    Recording,
    Replay,
    Script,
    canonical_args,
)
from tests._cassette_stable import stable
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


@pytest.mark.parametrize('saved', [False, True], ids=['an empty recording object', 'an empty cassette file'])
def test_replay_refuses_an_empty_source_with_details(tmp_path: Path, saved: bool) -> None:
    source: Path | Recording = Recording()
    if saved:
        source = tmp_path / 'c.json'
        Cassette().save(source)
    with pytest.raises(ConfigurationError, match='holds nothing to replay') as caught:
        Replay(source)
    assert caught.value.details['option'] == 'source'


class Place(BaseModel):
    lat: float
    lon: float


def _weather(executed: list[str]) -> Agent[None, str]:
    """An agent whose one tool, geocode, notes each real execution in `executed`."""
    agent = Agent(output_type=str, instructions='Answer with the weather.')

    @agent.tool_plain
    def geocode(city: str) -> Place:
        """Coordinates of a city."""
        executed.append('geocode')
        return Place(lat=48.85, lon=2.35)

    return agent


async def _record(path: Path, executed: list[str]) -> Any:
    model = CassetteModel(TestModel(), cassette=path, mode='once')
    return await _weather(executed).run('Paris', model=model, capabilities=[CassetteTools(model)])


async def test_a_cassette_with_tool_results_replays_without_the_tools(tmp_path: Path) -> None:
    path, live, offline = tmp_path / 'c.json', list[str](), list[str]()
    recorded = await _record(path, live)
    assert live == ['geocode']
    assert Cassette.load(path).tool_calls[0].result == {'lat': 48.85, 'lon': 2.35}
    with override_allow_model_requests(False):
        model = CassetteModel(None, cassette=path)
        tools = CassetteTools(model)
        replayed = await _weather(offline).run('Paris', model=model, capabilities=[tools])
    assert offline == []
    assert replayed.output == recorded.output
    assert stable(replayed.all_messages()) == stable(recorded.all_messages())
    tools.calls.assert_called('geocode', {'city': 'a'})


async def test_replay_serves_a_cassette_model_and_tools(tmp_path: Path) -> None:
    path, offline = tmp_path / 'c.json', list[str]()
    recorded = await _record(path, [])
    replay = Replay(path)
    assert isinstance(replay.model, CassetteModel)
    agent = _weather(offline)
    with override_allow_model_requests(False), agent.override(model=replay.model):
        replayed = await agent.run('Paris', capabilities=[replay])
    assert (replayed.output, offline) == (recorded.output, [])
    replay.calls.assert_called('geocode')


async def test_an_unrecorded_tool_call_fails_in_replay(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    await _record(path, [])
    cassette = Cassette.load(path)
    cassette.tool_calls.clear()
    model = CassetteModel(None, cassette=cassette)
    with pytest.raises(UnrecordedCallError, match="tool 'geocode' was called with"):
        await _weather([]).run('Paris', model=model, capabilities=[CassetteTools(model)])


async def test_new_episodes_records_new_tool_results(tmp_path: Path) -> None:
    path, executed = tmp_path / 'c.json', list[str]()
    await _record(path, executed)
    model = CassetteModel(TestModel(), cassette=path, mode='new_episodes')
    await _weather(executed).run('Lyon', model=model, capabilities=[CassetteTools(model)])
    assert executed == ['geocode']  # same tool call as recorded: answered from the cassette
    assert len(Cassette.load(path).exchanges) == 4


async def _record_runs(path: Path, executed: list[str]) -> Any:
    agent = _weather(executed)
    with agent.override(model=TestModel()):
        return await agent.run('Paris', capabilities=[Recorder(path)])


@pytest.mark.parametrize('record', [_record, _record_runs], ids=['exchanges', 'runs'])
async def test_one_capability_answers_the_tools_of_both_recording_levels(tmp_path: Path, record: Any) -> None:
    path, live, offline = tmp_path / 'c.json', list[str](), list[str]()
    recorded = await record(path, live)
    assert live == ['geocode']
    replay = Replay(path)
    # Replay and Recorder are the cassette's tool capability, with its one `wrap_tool_execute`.
    assert isinstance(replay, CassetteTools)
    assert Replay.wrap_tool_execute is Recorder.wrap_tool_execute is CassetteTools.wrap_tool_execute
    agent = _weather(offline)
    with override_allow_model_requests(False), agent.override(model=replay.model):
        replayed = await agent.run('Paris', capabilities=[replay])
    assert (replayed.output, offline) == (recorded.output, [])
    replay.calls.assert_called('geocode', {'city': 'a'})
    # A call the cassette does not hold is refused the same way, whichever level recorded it.
    replay.recording.tool_calls.clear()
    again = Replay(replay.recording)
    with agent.override(model=again.model), pytest.raises(UnrecordedCallError, match="tool 'geocode'"):
        await agent.run('Paris', capabilities=[again])


@pytest.mark.parametrize('model', [5, 'cassette.json', None])
def test_cassette_tools_without_a_cassette_model_is_a_typed_error(model: object) -> None:
    with pytest.raises(ConfigurationError, match='CassetteTools needs the CassetteModel') as caught:
        CassetteTools(model)  # type: ignore[arg-type]
    assert caught.value.details['option'] == 'model'


class Color(enum.Enum):
    RED = 'red'
    BLUE = 'blue'


class Reading(BaseModel):
    value: decimal.Decimal
    taken: datetime.datetime
    tags: tuple[str, ...]


@dataclasses.dataclass
class Box:
    size: tuple[int, int]
    label: bytes
    color: Color


class Login(BaseModel):
    user: str
    api_key: str
    since: datetime.date


UTC = datetime.UTC
RESULTS: dict[str, tuple[Any, Any]] = {
    'datetime': (datetime.datetime, datetime.datetime(2024, 5, 1, 12, 30, tzinfo=UTC)),
    'date': (datetime.date, datetime.date(2024, 5, 1)),
    'uuid': (uuid.UUID, uuid.UUID(int=7)),
    'decimal': (decimal.Decimal, decimal.Decimal('1.10')),
    'bytes': (bytes, b'plain text'),
    'binary': (bytes, b'\xff\x00\x80 raw'),
    'model': (Reading, Reading(value=decimal.Decimal('2.5'), taken=datetime.datetime(2024, 1, 2), tags=('a', 'b'))),
    'dataclass': (Box, Box(size=(3, 4), label=b'box', color=Color.BLUE)),
    'tuple': (tuple[int, str], (1, 'one')),
    'set': (set[int], {3, 1, 2}),
    'frozenset': (frozenset[int], frozenset({20, 10})),
    'enum': (Color, Color.RED),
}


def _calls(names: list[str]) -> Any:
    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(f'get_{name}', {}, tool_call_id=name) for name in names])
        return ModelResponse(parts=[TextPart('done')])

    return model


def _function(name: str, annotation: Any, value: Any) -> Any:
    def tool() -> Any:
        return value

    tool.__name__ = f'get_{name}'
    tool.__annotations__['return'] = annotation
    return tool


def _toolset(names: list[str], *, annotated: bool = True) -> FunctionToolset[Any]:
    toolset = FunctionToolset[Any]()
    for name in names:
        annotation, value = RESULTS[name]
        toolset.add_function(_function(name, annotation if annotated else Any, value))
    return toolset


async def _record_tools(path: Path, names: list[str], *toolsets: Any) -> tuple[Any, CassetteTools]:
    """A run that calls `get_NAME` for each name, recorded into `path` with the tools' results."""
    model = CassetteModel(FunctionModel(_calls(names)), cassette=path, mode='once')
    recording = CassetteTools(model)
    return await Agent().run('go', toolsets=list(toolsets), model=model, capabilities=[recording]), recording


async def _replay_tools(path: Path, *toolsets: Any) -> tuple[Any, CassetteTools]:
    """The run of `_record_tools` again, offline, every tool result served from the cassette."""
    model = CassetteModel(None, cassette=path)
    replay = CassetteTools(model)
    with override_allow_model_requests(False):
        return await Agent().run('go', toolsets=list(toolsets), model=model, capabilities=[replay]), replay


def _same(replayed: Any, live: Any) -> bool:
    return type(replayed) is type(live) and replayed == live


def _results(calls: Any) -> dict[str, Any]:
    return {call.tool.removeprefix('get_'): call.result for call in calls}


async def test_cassette_tools_replay_each_result_as_the_type_the_tool_returned(tmp_path: Path) -> None:
    path, names = tmp_path / 'c.json', list(RESULTS)
    live, recording = await _record_tools(path, names, _toolset(names))
    replayed, replay = await _replay_tools(path, _toolset(names))
    offline = _results(replay.calls)
    for name, (_, value) in RESULTS.items():
        assert _same(offline[name], value), name
    # The run that records logs what a replay gives, so one assertion holds on both.
    assert _results(recording.calls) == offline
    assert stable(replayed.all_messages()) == stable(live.all_messages())


async def test_the_cassette_notes_what_json_loses_and_stays_readable(tmp_path: Path) -> None:
    path, names = tmp_path / 'c.json', ['bytes', 'binary', 'set', 'model']
    await _record_tools(path, names, _toolset(names))
    written = {call['tool']: call for call in json.loads(path.read_text())['tool_calls']}
    assert written['get_bytes']['result'] == 'plain text'  # UTF-8 bytes stay text (and are scrubbed as text)
    assert written['get_bytes']['types'] == {'/result': 'bytes'}
    assert written['get_binary']['types'] == {'/result': 'base64'}
    assert written['get_set']['types'] == {'/result': 'set'}
    assert written['get_model']['annotated'] is True
    assert written['get_model']['types'] == {
        '/result/value': 'Decimal',
        '/result/taken': 'datetime',
        '/result/tags': 'tuple',
    }


async def test_recorder_and_replay_restore_the_types_too(tmp_path: Path) -> None:
    path, names = tmp_path / 'runs.json', ['datetime', 'model', 'dataclass', 'enum']
    agent, toolset = Agent(), _toolset(names)
    await agent.run('go', model=FunctionModel(_calls(names)), toolsets=[toolset], capabilities=[Recorder(path)])
    replay = Replay(path)
    with override_allow_model_requests(False):
        await agent.run('go', model=replay.model, toolsets=[toolset], capabilities=[replay])
    offline = _results(replay.calls)
    assert all(_same(offline[name], RESULTS[name][1]) for name in names)


async def test_a_cassette_toolset_over_functions_replays_their_types(tmp_path: Path) -> None:
    path, names = tmp_path / 'c.json', ['uuid', 'model', 'tuple']
    model = CassetteModel(FunctionModel(_calls(names)), cassette=path, mode='once')
    await Agent().run('go', model=model, toolsets=[CassetteToolset(_toolset(names), model, name='fns')])
    with override_allow_model_requests(False):
        model = CassetteModel(None, cassette=path)
        offline = CassetteToolset(_toolset(names), model, name='fns')
        await Agent().run('go', model=model, toolsets=[offline])
    replayed = _results(offline.calls)
    assert all(_same(replayed[name], RESULTS[name][1]) for name in names)


async def test_without_a_return_annotation_a_class_replays_as_its_json(tmp_path: Path) -> None:
    # What only a class can rebuild needs the annotation; values of known kinds do not.
    path, names = tmp_path / 'c.json', ['model', 'datetime', 'tuple']
    await _record_tools(path, names, _toolset(names, annotated=False))
    _, replay = await _replay_tools(path, _toolset(names, annotated=False))
    replayed = _results(replay.calls)
    assert replayed['model'] == RESULTS['model'][1].model_dump()  # its fields, not the class
    assert _same(replayed['datetime'], RESULTS['datetime'][1])
    assert _same(replayed['tuple'], RESULTS['tuple'][1])


async def test_a_result_the_annotation_no_longer_fits_is_a_cassette_error(tmp_path: Path) -> None:
    # A cassette of runs (no request fingerprints, where a changed return schema shows first).
    path = tmp_path / 'runs.json'
    await Agent().run(
        'go', toolsets=[_toolset(['enum'])], model=FunctionModel(_calls(['enum'])), capabilities=[Recorder(path)]
    )
    changed = FunctionToolset[Any]()
    changed.add_function(_function('enum', decimal.Decimal, decimal.Decimal(1)))
    replay = Replay(path)
    with pytest.raises(CassetteError, match=r"tool 'get_enum'.*no longer fits the return annotation") as raised:
        await Agent().run('go', toolsets=[changed], model=replay.model, capabilities=[replay])
    assert raised.value.details['reason'] == 'result'
    assert raised.value.details['path'] == str(path)


async def test_a_scrubbed_secret_keeps_the_model_type(tmp_path: Path) -> None:
    def get_login() -> Login:
        return Login(user='ann', api_key='sk-' + 'a1B2' * 12, since=datetime.date(2020, 1, 1))

    path = tmp_path / 'c.json'
    await _record_tools(path, ['login'], FunctionToolset([get_login]))
    assert 'a1B2' not in path.read_text()
    _, replay = await _replay_tools(path, FunctionToolset([get_login]))
    (call,) = replay.calls
    assert type(call.result) is Login
    assert (call.result.user, call.result.since) == ('ann', datetime.date(2020, 1, 1))
    assert 'a1B2' not in call.result.api_key


async def test_a_set_of_text_replays_as_a_list_in_the_order_the_model_saw(tmp_path: Path) -> None:
    # Text hashes differ between processes: a rebuilt set could reorder what the next request holds.
    names = {f'name-{index}' for index in range(20)}

    def get_names() -> set[str]:
        return names

    path = tmp_path / 'c.json'
    await _record_tools(path, ['names'], FunctionToolset([get_names]))
    written = Cassette.load(path).tool_calls[0]
    _, replay = await _replay_tools(path, FunctionToolset([get_names]))
    assert _results(replay.calls)['names'] == written.result
    assert set(written.result) == names


async def test_a_cassette_written_before_the_notes_replays_its_json_as_before() -> None:
    cassette = Cassette.model_validate({'tool_calls': [{'tool': 'get_date', 'args': {}, 'result': '2024-05-01'}]})
    replay = Replay(cassette)
    await Agent().run('go', toolsets=[_toolset(['date'])], model=FunctionModel(_calls(['date'])), capabilities=[replay])
    assert _results(replay.calls) == {'date': '2024-05-01'}


async def test_a_tool_returning_a_tool_return_replays_its_value_content_and_metadata(tmp_path: Path) -> None:
    def agent(executed: list[str]) -> Agent[None, str]:
        built: Agent[None, str] = Agent(output_type=str)

        @built.tool_plain
        def lookup(city: str) -> ToolReturn:
            """Look a city up."""
            executed.append(city)
            return ToolReturn(return_value={'lat': 48.85}, content='Paris is the capital', metadata={'source': 'atlas'})

        return built

    path, live, offline = tmp_path / 'c.json', list[str](), list[str]()
    model = CassetteModel(TestModel(), cassette=path, mode='once')
    recording = CassetteTools(model)
    recorded = await agent(live).run('Paris', model=model, capabilities=[recording])
    with override_allow_model_requests(False):
        model = CassetteModel(None, cassette=path)
        replay = CassetteTools(model)
        replayed = await agent(offline).run('Paris', model=model, capabilities=[replay])
    assert (live, offline) == (['a'], [])
    assert stable(replayed.all_messages()) == stable(recorded.all_messages())
    assert replay.calls[0].result == recording.calls[0].result
