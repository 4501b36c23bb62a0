"""The cassette file's format (version 2): it grows linearly with a run, a re-recording's change
shows once, files of version 1 still load and replay, and replayed values keep their types; one
format for both recording levels, the older recording format still read, typed errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

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

VERSION_1 = Path(__file__).parent / 'data' / 'agentool_cassette_v1.json'
"""Written by the version-1 writer: a run with two tool calls (tool results and a `datetime` in
`provider_details` included), then a streamed run; every request whole, two-space indent."""

STAMP = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def lookup_agent(model: Any, prices: dict[int, int] | None = None) -> Agent[None, str]:
    """An agent whose tool returns one record per item (`prices` overrides some prices)."""
    agent = Agent(model, output_type=str, instructions='Check every item.')

    @agent.tool_plain
    def lookup(item: int) -> dict[str, Any]:
        """The record of an item."""
        return {'item': item, 'price': (prices or {}).get(item, 10 + item)}

    return agent


def lookups(count: int) -> FunctionModel:
    """A model calling `lookup` once per request, `count` requests in all, the last one answering."""

    async def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answered = sum(isinstance(message, ModelResponse) for message in messages)
        if answered < count - 1:
            return ModelResponse(parts=[ToolCallPart('lookup', {'item': answered}, tool_call_id=f'c{answered}')])
        return ModelResponse(parts=[TextPart(f'checked {answered}')])

    return FunctionModel(script)


async def record(path: Path, count: int, prices: dict[int, int] | None = None) -> str:
    model = CassetteModel(lookups(count), cassette=path, mode='all')
    return (await lookup_agent(model, prices).run('Check them.')).output


async def test_a_cassette_grows_linearly_with_the_run(tmp_path: Path) -> None:
    sizes = {}
    for count in (10, 20, 40):
        await record(tmp_path / f'{count}.json', count)
        sizes[count] = (tmp_path / f'{count}.json').stat().st_size
    # Each request adds the same: twice the requests, about twice the file (the history of each
    # request whole made it four times).
    assert sizes[40] - sizes[20] < 2.2 * (sizes[20] - sizes[10])
    exchanges = json.loads((tmp_path / '40.json').read_text())['exchanges']
    assert 'history' not in exchanges[0]
    for position, exchange in enumerate(exchanges[1:], 1):
        # The earlier exchange it continues, and only the two messages new since then: the
        # model's answer and the tool's return; the tools and settings are that exchange's.
        assert exchange['history'] == {'exchange': position - 1, 'messages': 2 * position - 1}
        assert (len(exchange['request']['messages']), sorted(exchange['request'])) == (2, ['messages'])


async def test_a_loaded_cassette_holds_every_request_whole_and_replays_offline(tmp_path: Path) -> None:
    path = tmp_path / 'run.json'
    assert await record(path, 6) == 'checked 5'
    loaded = Cassette.load(path)
    assert [len(e.request['messages']) for e in loaded.exchanges] == [1, 3, 5, 7, 9, 11]
    assert all(sorted(e.request) == ['messages', 'parameters', 'settings'] for e in loaded.exchanges)
    with override_allow_model_requests(False):
        assert (await lookup_agent(CassetteModel(None, cassette=path)).run('Check them.')).output == 'checked 5'


async def test_runs_are_found_by_their_content_in_any_order(tmp_path: Path) -> None:
    path = tmp_path / 'two.json'
    recorder = CassetteModel(lookups(3), cassette=path, mode='all')
    for prompt in ('First.', 'Second.'):
        await lookup_agent(recorder).run(prompt)
    # The second run's requests share no message with the first: each is whole in the file.
    assert ['history' in e for e in json.loads(path.read_text())['exchanges']] == [False, True, True] * 2
    replay = CassetteModel(None, cassette=path)
    with override_allow_model_requests(False):
        for prompt in ('Second.', 'First.'):
            assert (await lookup_agent(replay).run(prompt)).output == 'checked 2'
    assert replay.unused_exchanges() == []


async def test_a_rerecording_shows_a_changed_tool_result_in_one_exchange(tmp_path: Path) -> None:
    before, after = tmp_path / 'before.json', tmp_path / 'after.json'
    await record(before, 8)
    await record(after, 8, prices={3: 99})
    old, new = (json.loads(path.read_text())['exchanges'] for path in (before, after))
    changed = [index for index, (a, b) in enumerate(zip(old, new, strict=True)) if a['request'] != b['request']]
    assert changed == [4]  # the request carrying lookup(3)'s result; later ones only refer to it
    assert '"price": 99' in json.dumps(new[4]['request'])


async def test_exchanges_removed_from_a_cassette_leave_the_rest_whole(tmp_path: Path) -> None:
    path, kept = tmp_path / 'run.json', tmp_path / 'kept.json'
    await record(path, 5)
    cassette = Cassette.load(path)
    whole = [exchange.request for exchange in cassette.exchanges]
    cassette.exchanges = [cassette.exchanges[0], cassette.exchanges[3]]
    cassette.save(kept)
    assert [exchange.request for exchange in Cassette.load(kept).exchanges] == [whole[0], whole[3]]


def test_a_version_1_file_loads_with_every_request_whole() -> None:
    data = json.loads(VERSION_1.read_text())
    assert (data['version'], len(data['exchanges'])) == (1, 5)
    assert not any('history' in exchange for exchange in data['exchanges'])
    loaded = Cassette.load(VERSION_1)
    assert [exchange.request for exchange in loaded.exchanges] == [e['request'] for e in data['exchanges']]
    assert len(loaded.tool_calls) == 2


def weather_agent(model: Any, executed: list[str], output_type: Any = str) -> Agent[None, Any]:
    """The agent the version-1 file and the old recording were made with; `executed` lists real tool runs."""
    agent = Agent(model, output_type=output_type, instructions='Answer about the weather.')

    @agent.tool_plain
    def geocode(city: str) -> dict[str, float]:
        """Coordinates of a city."""
        executed.append(f'geocode {city}')
        return {'lat': 48.85, 'lon': 2.35}

    @agent.tool_plain
    def weather(lat: float, lon: float) -> dict[str, object]:
        """The weather at coordinates."""
        executed.append('weather')
        return {'temp_c': 21.5, 'sky': 'sunny'}

    return agent


async def test_a_version_1_file_replays_its_runs_and_is_rewritten_as_version_2(tmp_path: Path) -> None:
    model, executed = CassetteModel(None, cassette=VERSION_1), []
    agent = weather_agent(model, executed)
    with override_allow_model_requests(False):
        # The first run was recorded with its tool results, the streamed one without.
        result = await agent.run('What is the weather in Paris?', capabilities=[CassetteTools(model)])
        async with agent.run_stream('And in Oslo?') as streamed:
            assert await streamed.get_output() == 'Cold, 3 C in Oslo.'
    assert (result.output, executed) == ('Sunny, 21.5 C in Paris.', ['geocode Oslo'])
    assert model.unused_exchanges() == []
    # Version 1 wrote the timestamp as text and did not say it was a datetime: it stays text.
    first = next(m for m in result.all_messages() if isinstance(m, ModelResponse))
    assert first.provider_details == {'timestamp': '2026-01-02T03:04:05Z'}
    again = tmp_path / 'again.json'
    Cassette.load(VERSION_1).save(again)
    assert json.loads(again.read_text())['version'] == 2
    assert again.stat().st_size < VERSION_1.stat().st_size * 0.6
    assert Cassette.load(again) == Cassette.load(VERSION_1)


def _details_model(details: dict[str, Any]) -> FunctionModel:
    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('done')], provider_details=details)

    return FunctionModel(answer)


async def test_replayed_provider_details_keep_their_types(tmp_path: Path) -> None:
    path = tmp_path / 'typed.json'
    details = {'timestamp': STAMP, 'took': timedelta(seconds=2), 'nested': [{'at': STAMP}], 'note': '2026-01-02'}
    live = await Agent(CassetteModel(_details_model(details), cassette=path, mode='all')).run('Go.')
    data = json.loads(path.read_text())['exchanges'][0]
    assert data['types'] == {
        '/response/provider_details/timestamp': 'datetime',
        '/response/provider_details/took': 'timedelta',
        '/response/provider_details/nested/0/at': 'datetime',
    }
    replayed = await Agent(CassetteModel(None, cassette=path)).run('Go.')
    for run in (live, replayed):
        response = run.all_messages()[-1]
        assert isinstance(response, ModelResponse)
        assert response.provider_details == details  # a string that only looks like a date stays one


async def test_an_exchange_without_lost_types_has_no_types_key(tmp_path: Path) -> None:
    path = tmp_path / 'plain.json'
    await Agent(CassetteModel(_details_model({'region': 'eu'}), cassette=path, mode='all')).run('Go.')
    assert 'types' not in json.loads(path.read_text())['exchanges'][0]


async def test_types_a_redaction_hook_rewrote_replay_as_written(tmp_path: Path) -> None:
    path = tmp_path / 'redacted.json'

    def hide_time(exchange: dict[str, Any]) -> dict[str, Any]:
        exchange['response']['provider_details']['timestamp'] = 'REDACTED'
        return exchange

    model = CassetteModel(_details_model({'timestamp': STAMP}), cassette=path, mode='all', redact=hide_time)
    await Agent(model).run('Go.')
    replayed = (await Agent(CassetteModel(None, cassette=path)).run('Go.')).all_messages()[-1]
    assert isinstance(replayed, ModelResponse)
    assert replayed.provider_details == {'timestamp': 'REDACTED'}


_BAD_HISTORY: dict[str, object] = {
    'a later exchange': {'exchange': 1, 'messages': 1},
    'itself': {'exchange': 0, 'messages': 0},
    'too many messages': {'exchange': 0, 'messages': 5},
    'a boolean position': {'exchange': True, 'messages': 1},
    'a negative count': {'exchange': 0, 'messages': -1},
    'not an object': [0, 1],
}


@pytest.mark.parametrize('case', list(_BAD_HISTORY))
async def test_a_bad_history_is_a_typed_error_naming_the_file(tmp_path: Path, case: str) -> None:
    path = tmp_path / 'run.json'
    await record(path, 2)
    data = json.loads(path.read_text())
    target = 0 if case in ('a later exchange', 'itself') else 1
    data['exchanges'][target]['history'] = _BAD_HISTORY[case]
    path.write_text(json.dumps(data))
    with pytest.raises(CassetteError, match='history') as caught:
        Cassette.load(path)
    assert (caught.value.details['reason'], caught.value.details['path']) == ('invalid', str(path))


@pytest.mark.parametrize('streamed', [False, True], ids=['run', 'stream'])
async def test_an_openai_timestamp_replays_as_the_datetime_of_the_live_run(tmp_path: Path, streamed: bool) -> None:
    pytest.importorskip('openai')
    from tests.provider_mocks import MockServer, Turn

    path = tmp_path / 'openai.json'

    async def last_response(model: CassetteModel) -> ModelResponse:
        agent = Agent(model)
        if streamed:
            async with agent.run_stream('Hi?') as stream:
                await stream.get_output()
                messages = stream.all_messages()
        else:
            messages = (await agent.run('Hi?')).all_messages()
        response = messages[-1]
        assert isinstance(response, ModelResponse)
        return response

    server = MockServer('openai-chat', [Turn(text='Hello.')])
    live = await last_response(CassetteModel(server.model(), cassette=path, mode='once'))
    with override_allow_model_requests(False):
        replayed = await last_response(CassetteModel(None, cassette=path))
    assert live.provider_details is not None
    assert isinstance(live.provider_details['timestamp'], datetime)
    assert replayed.provider_details == live.provider_details


OLD_RECORDING = Path(__file__).parent / 'data' / 'agentool_recording_v1.json'
"""A file `Recorder` wrote before it wrote cassettes (format "agentool-recording", version 1)."""


class Forecast(BaseModel):
    city: str
    temp_c: float


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
    agent = weather_agent(None, executed, Forecast)
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
