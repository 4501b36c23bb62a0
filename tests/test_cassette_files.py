"""The cassette file: one format for both recording levels, the older recording format still read, typed errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models import override_allow_model_requests

from agentool.errors import CassetteError
from agentool.testing import (
    AgentDouble,
    Call,
    Cassette,
    CassetteModel,
    CassetteTools,
    Output,
    RecordedRun,
    RecordedToolCall,
    Recorder,
    Recording,
    Replay,
    Script,
    Trajectory,
)
from agentool.testing.commands import show
from agentool.testing.scrub import PLACEHOLDER

OLD_RECORDING = Path(__file__).parent / 'data' / 'agentool_recording_v1.json'
"""A file `Recorder` wrote before it wrote cassettes (format "agentool-recording", version 1)."""


class Forecast(BaseModel):
    city: str
    temp_c: float


def weather_agent(executed: list[str]) -> Agent[None, Forecast]:
    """The agent the old recording was made with; `executed` counts real tool runs."""
    agent: Agent[None, Forecast] = Agent('test', output_type=Forecast)

    @agent.tool_plain
    def geocode(city: str) -> dict[str, float]:
        """Coordinates of a city."""
        executed.append('geocode')
        return {'lat': 48.85, 'lon': 2.35}

    @agent.tool_plain
    def weather(lat: float, lon: float) -> dict[str, float]:
        """Temperature at coordinates."""
        executed.append('weather')
        return {'temp_c': 21.5}

    return agent


def test_an_old_recording_file_loads_as_a_cassette_of_runs() -> None:
    assert json.loads(OLD_RECORDING.read_text())['format'] == 'agentool-recording'
    for loaded in (Cassette.load(OLD_RECORDING), Recording.load(OLD_RECORDING)):
        assert (loaded.format, loaded.version, loaded.exchanges) == ('agentool-cassette', 2, [])
        (run,) = loaded.runs
        assert (run.prompt, run.output) == ('Weather in Paris?', {'city': 'Paris', 'temp_c': 21.5})
        # The run's tool results are gathered into the cassette's one list a replay answers from,
        # and stay the run's own.
        assert run.tool_calls == loaded.tool_calls
        assert [(call.tool, call.result) for call in loaded.tool_calls] == [
            ('geocode', {'lat': 48.85, 'lon': 2.35}),
            ('weather', {'temp_c': 21.5}),
        ]


async def test_replay_plays_an_old_recording_offline_without_its_tools() -> None:
    executed: list[str] = []
    agent = weather_agent(executed)
    replay = Replay(OLD_RECORDING)
    assert isinstance(replay.model, CassetteModel)
    assert isinstance(replay.model.wrapped, AgentDouble)  # the runs are played through the agent's validators
    with override_allow_model_requests(False), agent.override(model=replay.model):
        result = await agent.run('Weather in Paris?', capabilities=[replay])
    assert result.output == Forecast(city='Paris', temp_c=21.5)
    assert executed == []
    replay.calls.assert_order(('geocode', {'city': 'Paris'}), ('weather', {'lat': 48.85, 'lon': 2.35}))


def test_an_old_recording_saved_again_is_written_as_a_cassette(tmp_path: Path) -> None:
    path = tmp_path / 'again.json'
    Recording.load(OLD_RECORDING).save(path)
    data = json.loads(path.read_text())
    assert (data['format'], data['version']) == ('agentool-cassette', 2)
    assert 'tool_calls' not in data['runs'][0]
    assert len(data['tool_calls']) == 2
    assert Cassette.load(path) == Cassette.load(OLD_RECORDING)


def test_a_cassette_without_runs_or_toolsets_is_written_without_their_keys(tmp_path: Path) -> None:
    path = tmp_path / 'plain.json'
    Cassette().save(path)
    assert sorted(json.loads(path.read_text())) == ['exchanges', 'format', 'model', 'tool_calls', 'version']


def test_the_trajectory_of_a_cassette_of_runs_has_its_calls_and_output() -> None:
    found = Trajectory.of(OLD_RECORDING)
    assert found.requests == 3  # two answers with tool calls, then the output
    found.assert_order(('geocode', {'city': 'Paris'}), ('weather', {'lat': 48.85, 'lon': 2.35}))
    assert [call.result for call in found.calls] == [{'lat': 48.85, 'lon': 2.35}, {'temp_c': 21.5}]
    assert found.output == {'city': 'Paris', 'temp_c': 21.5}


_READERS: dict[str, Callable[[Path], object]] = {
    'Cassette.load': Cassette.load,
    'Recording.load': Recording.load,
    'Replay': Replay,
    'CassetteModel': lambda path: CassetteModel(None, cassette=path),
    'Trajectory.of': Trajectory.of,
}

_BAD_FILES: dict[str, tuple[bytes | None, str]] = {
    'oversize': (None, 'too_large'),
    'bad JSON': (b'{"format": "agentool-cassette", ', 'invalid_json'),
    'not UTF-8': (b'\xff\xfe', 'invalid_json'),
    'cassette version 3': (b'{"format": "agentool-cassette", "version": 3}', 'version'),
    'recording version 2': (b'{"format": "agentool-recording", "version": 2, "runs": []}', 'version'),
    'a boolean version': (b'{"format": "agentool-cassette", "version": true}', 'version'),
    'another kind': (b'{"format": "agentool-tape", "version": 1}', 'invalid'),
    'no kind': (b'{"version": 1, "exchanges": []}', 'invalid'),
    'not an object': (b'[]', 'invalid'),
    'a bad run': (b'{"format": "agentool-recording", "version": 1, "runs": [{"prompt": 3}]}', 'invalid'),
}


@pytest.mark.parametrize('reader', list(_READERS))
@pytest.mark.parametrize('case', list(_BAD_FILES))
def test_every_reader_refuses_a_bad_file_with_a_typed_error(tmp_path: Path, reader: str, case: str) -> None:
    content, reason = _BAD_FILES[case]
    path = tmp_path / 'bad.json'
    if content is None:
        with path.open('wb') as stream:
            stream.truncate(65 * 1024 * 1024)  # sparse: its size is checked before a byte is read
    else:
        path.write_bytes(content)
    with pytest.raises(CassetteError) as caught:
        _READERS[reader](path)
    assert caught.value.details['reason'] == reason
    assert caught.value.details['path'] == str(path)
    assert len(str(caught.value)) < 2000


async def test_a_recorder_writes_one_cassette_of_runs_scrubbed_of_secrets(tmp_path: Path) -> None:
    secret = 'sk-' + 'a1B2c3D4e5F6g7H8i9J0k1L2'
    agent: Agent[None, str] = Agent('test')

    @agent.tool_plain
    def account(name: str) -> dict[str, Any]:
        """The account's settings."""
        return {'name': name, 'token': secret}

    path = tmp_path / 'cassettes' / 'account.json'
    with agent.override(model=AgentDouble(Script(Call('account', {'name': 'acme'}), Output('done')))):
        await agent.run('Settings of acme?', capabilities=[Recorder(path)])
    text = path.read_text()
    assert secret not in text
    data = json.loads(text)
    assert (data['format'], [run['prompt'] for run in data['runs']]) == ('agentool-cassette', ['Settings of acme?'])
    assert data['tool_calls'][0]['result']['token'] == PLACEHOLDER
    replay = Replay(path)
    assert isinstance(replay, CassetteTools)
    with agent.override(model=replay.model):
        assert (await agent.run('Settings of acme?', capabilities=[replay])).output == 'done'


def test_cassette_show_counts_the_runs_of_an_old_recording() -> None:
    shown = show(OLD_RECORDING)
    assert '0 exchange(s), 1 run(s) (3 model answer(s)), 2 recorded tool result(s)' in shown
    assert '1. geocode({"city":"Paris"})' in shown


def test_tool_results_given_to_a_run_after_loading_are_written_not_lost(tmp_path: Path) -> None:
    cassette = Cassette.load(OLD_RECORDING)
    extra = RecordedToolCall(tool='geocode', args={'city': 'Rome'}, result={'lat': 41.9, 'lon': 12.5})
    cassette.runs.append(RecordedRun(prompt='Rome?', steps=[], output='x'))
    cassette.runs[-1].tool_calls.append(extra)
    cassette.save(tmp_path / 'c.json')
    assert Cassette.load(tmp_path / 'c.json').tool_calls[-1] == extra
