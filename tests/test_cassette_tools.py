"""One recording concept: a cassette holds tool results too; `Replay` serves cassettes and old recordings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.test import TestModel

from agentool.errors import CassetteError, ConfigurationError, UnrecordedCallError
from agentool.testing import Cassette, CassetteModel, CassetteTools, Recorder, Recording, Replay
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
