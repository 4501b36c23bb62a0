"""One recording concept: a cassette holds tool results too; `Replay` serves cassettes and old recordings.

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
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import FunctionToolset

from agentool.errors import CassetteError, ConfigurationError, UnrecordedCallError
from agentool.testing import Cassette, CassetteModel, CassetteTools, CassetteToolset, Recorder, Recording, Replay
from tests._cassette_stable import stable


class Place(BaseModel):
    lat: float
    lon: float


class Tools:
    def __init__(self) -> None:
        self.executed: list[str] = []

    def agent(self) -> Agent[None, str]:
        agent = Agent(output_type=str, instructions='Answer with the weather.')

        @agent.tool_plain
        def geocode(city: str) -> Place:
            """Coordinates of a city."""
            self.executed.append('geocode')
            return Place(lat=48.85, lon=2.35)

        return agent


async def _record(path: Path, tools: Tools) -> Any:
    model = CassetteModel(TestModel(), cassette=path, mode='once')
    return await tools.agent().run('Paris', model=model, capabilities=[CassetteTools(model)])


async def test_a_cassette_with_tool_results_replays_without_the_tools(tmp_path: Path) -> None:
    path, live, offline = tmp_path / 'c.json', Tools(), Tools()
    recorded = await _record(path, live)
    assert live.executed == ['geocode']
    assert Cassette.load(path).tool_calls[0].result == {'lat': 48.85, 'lon': 2.35}
    with override_allow_model_requests(False):
        model = CassetteModel(None, cassette=path)
        tools = CassetteTools(model)
        replayed = await offline.agent().run('Paris', model=model, capabilities=[tools])
    assert offline.executed == []
    assert replayed.output == recorded.output
    assert stable(replayed.all_messages()) == stable(recorded.all_messages())
    tools.calls.assert_called('geocode', {'city': 'a'})


async def test_replay_serves_a_cassette_model_and_tools(tmp_path: Path) -> None:
    path, offline = tmp_path / 'c.json', Tools()
    recorded = await _record(path, Tools())
    replay = Replay(path)
    assert isinstance(replay.model, CassetteModel)
    agent = offline.agent()
    with override_allow_model_requests(False), agent.override(model=replay.model):
        replayed = await agent.run('Paris', capabilities=[replay])
    assert (replayed.output, offline.executed) == (recorded.output, [])
    replay.calls.assert_called('geocode')


async def test_an_unrecorded_tool_call_fails_in_replay(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    await _record(path, Tools())
    cassette = Cassette.load(path)
    cassette.tool_calls.clear()
    model = CassetteModel(None, cassette=cassette)
    with pytest.raises(UnrecordedCallError, match="tool 'geocode' was called with"):
        await Tools().agent().run('Paris', model=model, capabilities=[CassetteTools(model)])


async def test_new_episodes_records_new_tool_results(tmp_path: Path) -> None:
    path, tools = tmp_path / 'c.json', Tools()
    await _record(path, tools)
    model = CassetteModel(TestModel(), cassette=path, mode='new_episodes')
    await tools.agent().run('Lyon', model=model, capabilities=[CassetteTools(model)])
    assert tools.executed == ['geocode']  # same tool call as recorded: answered from the cassette
    assert len(Cassette.load(path).exchanges) == 4


def test_replay_refuses_an_empty_cassette(tmp_path: Path) -> None:
    Cassette().save(tmp_path / 'c.json')
    with pytest.raises(ConfigurationError, match='holds nothing to replay'):
        Replay(tmp_path / 'c.json')


def test_recording_files_errors_are_typed(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='NUL') as caught:
        Recording.load(str(tmp_path / 'a\x00.json'))
    assert caught.value.details['reason'] == 'nul'
    with pytest.raises(CassetteError, match='NUL'):
        Recording().save(str(tmp_path / 'a\x00.json'))
    with pytest.raises(CassetteError, match='NUL'):
        Replay(str(tmp_path / 'a\x00.json'))
    bad = Recording.model_validate({'runs': [{'prompt': '\udc80', 'steps': [], 'tool_calls': []}]})
    with pytest.raises(CassetteError, match='UTF-8 cannot encode') as caught:
        bad.save(tmp_path / 'r.json')
    assert caught.value.details['reason'] == 'unencodable'
    assert not (tmp_path / 'r.json').exists()


def test_an_oversized_recording_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / 'big.json'
    with path.open('wb') as stream:
        stream.truncate(65 * 1024 * 1024)
    with pytest.raises(CassetteError, match='over the limit') as caught:
        Recording.load(path)
    assert caught.value.details['reason'] == 'too_large'
    with pytest.raises(CassetteError, match='over the limit'):
        Replay(path)


async def _record_runs(path: Path, tools: Tools) -> Any:
    agent = tools.agent()
    with agent.override(model=TestModel()):
        return await agent.run('Paris', capabilities=[Recorder(path)])


@pytest.mark.parametrize('record', [_record, _record_runs], ids=['exchanges', 'runs'])
async def test_one_capability_answers_the_tools_of_both_recording_levels(tmp_path: Path, record: Any) -> None:
    path, live, offline = tmp_path / 'c.json', Tools(), Tools()
    recorded = await record(path, live)
    assert live.executed == ['geocode']
    replay = Replay(path)
    # Replay and Recorder are the cassette's tool capability, with its one `wrap_tool_execute`.
    assert isinstance(replay, CassetteTools)
    assert Replay.wrap_tool_execute is Recorder.wrap_tool_execute is CassetteTools.wrap_tool_execute
    agent = offline.agent()
    with override_allow_model_requests(False), agent.override(model=replay.model):
        replayed = await agent.run('Paris', capabilities=[replay])
    assert (replayed.output, offline.executed) == (recorded.output, [])
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


def _same(replayed: Any, live: Any) -> bool:
    return type(replayed) is type(live) and replayed == live


def _results(calls: Any) -> dict[str, Any]:
    return {call.tool.removeprefix('get_'): call.result for call in calls}


async def test_cassette_tools_replay_each_result_as_the_type_the_tool_returned(tmp_path: Path) -> None:
    path, names = tmp_path / 'c.json', list(RESULTS)
    model = CassetteModel(FunctionModel(_calls(names)), cassette=path, mode='once')
    recording = CassetteTools(model)
    live = await Agent().run('go', toolsets=[_toolset(names)], model=model, capabilities=[recording])
    with override_allow_model_requests(False):
        model = CassetteModel(None, cassette=path)
        replay = CassetteTools(model)
        replayed = await Agent().run('go', toolsets=[_toolset(names)], model=model, capabilities=[replay])
    offline = _results(replay.calls)
    for name, (_, value) in RESULTS.items():
        assert _same(offline[name], value), name
    # The run that records logs what a replay gives, so one assertion holds on both.
    assert _results(recording.calls) == offline
    assert stable(replayed.all_messages()) == stable(live.all_messages())


async def test_the_cassette_notes_what_json_loses_and_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    model = CassetteModel(FunctionModel(_calls(['bytes', 'binary', 'set', 'model'])), cassette=path, mode='once')
    await Agent().run(
        'go', toolsets=[_toolset(['bytes', 'binary', 'set', 'model'])], model=model, capabilities=[CassetteTools(model)]
    )
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
    model = CassetteModel(FunctionModel(_calls(names)), cassette=path, mode='once')
    await Agent().run(
        'go', toolsets=[_toolset(names, annotated=False)], model=model, capabilities=[CassetteTools(model)]
    )
    model = CassetteModel(None, cassette=path)
    replay = CassetteTools(model)
    await Agent().run('go', toolsets=[_toolset(names, annotated=False)], model=model, capabilities=[replay])
    replayed = _results(replay.calls)
    assert replayed['model'] == {
        'value': decimal.Decimal('2.5'),
        'taken': datetime.datetime(2024, 1, 2),
        'tags': ('a', 'b'),
    }
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
    model = CassetteModel(FunctionModel(_calls(['login'])), cassette=path, mode='once')
    await Agent(tools=[get_login]).run('go', model=model, capabilities=[CassetteTools(model)])
    assert 'a1B2' not in path.read_text()
    model = CassetteModel(None, cassette=path)
    replay = CassetteTools(model)
    await Agent(tools=[get_login]).run('go', model=model, capabilities=[replay])
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
    model = CassetteModel(FunctionModel(_calls(['names'])), cassette=path, mode='once')
    await Agent(tools=[get_names]).run('go', model=model, capabilities=[CassetteTools(model)])
    written = Cassette.load(path).tool_calls[0]
    model = CassetteModel(None, cassette=path)
    replay = CassetteTools(model)
    await Agent(tools=[get_names]).run('go', model=model, capabilities=[replay])
    assert _results(replay.calls)['names'] == written.result
    assert set(written.result) == names


async def test_a_cassette_written_before_the_notes_replays_its_json_as_before() -> None:
    cassette = Cassette.model_validate({'tool_calls': [{'tool': 'get_date', 'args': {}, 'result': '2024-05-01'}]})
    replay = Replay(cassette)
    await Agent().run('go', toolsets=[_toolset(['date'])], model=FunctionModel(_calls(['date'])), capabilities=[replay])
    assert _results(replay.calls) == {'date': '2024-05-01'}
