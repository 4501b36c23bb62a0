"""Cassette modes, drift diffs, concurrency, redaction and the cassette file's boundary."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool.errors import CassetteError, CassetteMismatchError
from agentool.testing import Cassette, CassetteModel


class Counting:
    """A `FunctionModel` that echoes the last user prompt and counts its calls."""

    def __init__(self, prefix: str = 'echo') -> None:
        self.calls = 0
        self.prefix = prefix
        self.model = FunctionModel(self.answer)

    def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        prompt = messages[-1].parts[-1].content  # pyright: ignore
        return ModelResponse(parts=[TextPart(f'{self.prefix}: {prompt} #{self.calls}')])


def _agent(**kwargs: Any) -> Agent[None, str]:
    agent = Agent(output_type=str, **kwargs)

    @agent.tool_plain
    def lookup(city: str) -> str:
        """Find a city."""
        return city

    return agent


async def test_once_records_when_missing_then_replays(tmp_path: Path) -> None:
    path, real = tmp_path / 'c.json', Counting()
    first = await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    second = await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    assert first.output == second.output == 'echo: a #1'
    assert real.calls == 1  # the second run replayed although it could have called the model
    data = json.loads(path.read_text())
    assert (data['format'], data['version'], len(data['exchanges'])) == ('agentool-cassette', 2, 1)


async def test_none_refuses_a_missing_cassette(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='does not exist; record it first') as caught:
        CassetteModel(None, cassette=tmp_path / 'missing.json')
    assert caught.value.details['reason'] == 'missing'
    assert isinstance(caught.value, AssertionError)  # a test failure, for pytest


async def test_new_episodes_replays_matches_and_records_the_rest(tmp_path: Path) -> None:
    path, real = tmp_path / 'c.json', Counting()
    await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    model = CassetteModel(real.model, cassette=path, mode='new_episodes')
    assert (await _agent().run('a', model=model)).output == 'echo: a #1'
    assert (await _agent().run('b', model=model)).output == 'echo: b #2'
    assert real.calls == 2
    assert len(Cassette.load(path).exchanges) == 2
    with override_allow_model_requests(False):
        replay = CassetteModel(None, cassette=path)
        assert (await _agent().run('b', model=replay)).output == 'echo: b #2'


async def test_all_rerecords_and_replaces(tmp_path: Path) -> None:
    path, real = tmp_path / 'c.json', Counting()
    await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    await _agent().run('b', model=CassetteModel(real.model, cassette=path, mode='all'))
    assert real.calls == 2
    exchanges = Cassette.load(path).exchanges
    assert [e.request['messages'][0]['parts'][-1]['content'] for e in exchanges] == ['b']


async def test_recording_needs_a_model(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='wraps no model') as caught:
        await _agent().run('a', model=CassetteModel(None, cassette=tmp_path / 'c.json', mode='once'))
    assert caught.value.details['reason'] == 'no_model'


def test_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="unknown cassette mode 'sometimes'"):
        CassetteModel(None, cassette=tmp_path / 'c.json', mode='sometimes')  # type: ignore[arg-type]


async def _mismatch(tmp_path: Path, agent: Agent[None, str], prompt: str = 'a', **run: Any) -> CassetteMismatchError:
    path = tmp_path / 'c.json'
    if not path.exists():
        await _agent(system_prompt='You are terse.').run(
            'a', model=CassetteModel(Counting().model, cassette=path, mode='once')
        )
    with pytest.raises(CassetteMismatchError) as caught:
        await agent.run(prompt, model=CassetteModel(None, cassette=path), **run)
    return caught.value


async def test_drift_names_a_changed_tool_schema(tmp_path: Path) -> None:
    agent = Agent(output_type=str, system_prompt='You are terse.')

    @agent.tool_plain
    def lookup(city: str, country: str) -> str:
        """Find a city."""
        return city

    error = await _mismatch(tmp_path, agent)
    assert "tool 'lookup': schema changed" in str(error)
    assert 'country' in str(error)
    assert error.details['changes']
    assert len(str(error)) < 2000


async def test_drift_names_the_system_prompt_and_instructions(tmp_path: Path) -> None:
    error = await _mismatch(tmp_path, _agent(system_prompt='You are verbose.', instructions='Say hi.'))
    assert 'system prompt changed: ["You are terse."] recorded, ["You are verbose."] sent' in str(error)
    assert 'instructions changed' in str(error)


async def test_drift_names_the_user_prompt(tmp_path: Path) -> None:
    error = await _mismatch(tmp_path, _agent(system_prompt='You are terse.'), prompt='b')
    assert 'user prompt changed: ["a"] recorded, ["b"] sent' in str(error)


async def test_drift_names_the_number_of_messages_and_a_removed_tool(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    await _mismatch(tmp_path, _agent(system_prompt='You are terse.'), prompt='b')  # records 'a'
    history = (
        await _agent(system_prompt='You are terse.').run('a', model=CassetteModel(None, cassette=path))
    ).all_messages()
    agent = Agent(output_type=str, system_prompt='You are terse.')
    error = await _mismatch(tmp_path, agent, message_history=history)
    assert 'number of messages: 1 recorded, 3 sent' in str(error)
    assert "tool 'lookup' removed" in str(error)


async def test_several_agents_and_concurrent_runs_replay_deterministically(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    researcher, writer = _agent(system_prompt='research'), _agent(system_prompt='write')

    async def scene(model: CassetteModel) -> list[str]:
        runs = [researcher.run(p, model=model) for p in ('x', 'y')] + [writer.run(p, model=model) for p in ('x', 'y')]
        # The same request twice, concurrently: answered by occurrence, not by global order.
        runs += [writer.run('x', model=model)]
        return [r.output for r in await asyncio.gather(*runs)]

    def distinct_and_twins(outputs: list[str]) -> tuple[list[str], list[str]]:
        # Which of two identical concurrent requests the scheduler sends first is not fixed,
        # so the twins (runs 2 and 4) get the two recorded answers in either order.
        return [outputs[0], outputs[1], outputs[3]], sorted([outputs[2], outputs[4]])

    recorded = await scene(CassetteModel(Counting().model, cassette=path, mode='once'))
    assert len(set(recorded)) == 5  # every request recorded once, the twins included
    with override_allow_model_requests(False):
        replayed = await scene(CassetteModel(None, cassette=path))
        again = await scene(CassetteModel(None, cassette=path))
    assert distinct_and_twins(replayed) == distinct_and_twins(recorded)
    assert distinct_and_twins(again) == distinct_and_twins(recorded)


async def test_redaction_runs_before_writing_and_replay_still_matches(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'

    def redact(exchange: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(exchange).replace('sk-secret', '<redacted>')
        return json.loads(text)

    real = Counting()
    await _agent().run('key sk-secret', model=CassetteModel(real.model, cassette=path, mode='once', redact=redact))
    assert 'sk-secret' not in path.read_text()
    with override_allow_model_requests(False):
        result = await _agent().run('key sk-secret', model=CassetteModel(None, cassette=path))
    assert result.output == 'echo: key <redacted> #1'


async def test_in_memory_cassette(tmp_path: Path) -> None:
    cassette, real = Cassette(), Counting()
    await _agent().run('a', model=CassetteModel(real.model, cassette=cassette, mode='new_episodes'))
    assert (await _agent().run('a', model=CassetteModel(None, cassette=cassette))).output == 'echo: a #1'
    assert real.calls == 1


def test_cassette_file_is_diff_friendly(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    asyncio.run(_agent().run('a', model=CassetteModel(Counting().model, cassette=path, mode='once')))
    text = path.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + '\n'
    assert 'timestamp' not in json.dumps(data['exchanges'][0]['request'])


@pytest.mark.parametrize(
    ('content', 'reason', 'message'),
    [
        (b'{not json', 'invalid_json', 'not UTF-8 JSON'),
        (b'\xff\xfe', 'invalid_json', 'not UTF-8 JSON'),
        (b'{"format": "agentool-cassette", "version": 3}', 'version', 'cassette version 3'),
        (b'{"format": "agentool-recording", "version": 2}', 'version', 'recording version 2'),
        (b'{"format": "agentool-tape", "version": 1}', 'invalid', 'is not an agentool cassette'),
        (b'{"format": "agentool-cassette", "version": 1, "exchanges": 3}', 'invalid', 'is not an agentool cassette'),
        (b'[1]', 'invalid', 'is not an agentool cassette'),
    ],
)
def test_a_bad_cassette_file_is_a_typed_error(tmp_path: Path, content: bytes, reason: str, message: str) -> None:
    path = tmp_path / 'c.json'
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=message) as caught:
        Cassette.load(path)
    assert caught.value.details['reason'] == reason


def test_an_oversized_cassette_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / 'big.json'
    with path.open('wb') as stream:
        stream.truncate(65 * 1024 * 1024)  # sparse: its size is all that is read
    with pytest.raises(CassetteError, match='over the limit') as caught:
        Cassette.load(path)
    assert caught.value.details['reason'] == 'too_large'


def test_nul_in_the_path_and_lone_surrogates_are_typed(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='NUL') as caught:
        Cassette.load(str(tmp_path / 'a\x00b.json'))
    assert caught.value.details['reason'] == 'nul'
    with pytest.raises(CassetteError, match='NUL'):
        CassetteModel(None, cassette=str(tmp_path / 'a\x00b.json'))
    cassette = Cassette.model_validate({'tool_calls': [{'tool': 't', 'args': {'x': '\ud800'}}]})
    with pytest.raises(CassetteError, match='UTF-8 cannot encode') as caught:
        cassette.save(tmp_path / 'c.json')
    assert caught.value.details['reason'] == 'unencodable'
    assert not (tmp_path / 'c.json').exists()


def test_an_unwritable_place_is_typed(tmp_path: Path) -> None:
    (tmp_path / 'file').write_text('')
    with pytest.raises(CassetteError, match='cannot write cassette') as caught:
        Cassette().save(tmp_path / 'file' / 'c.json')
    assert caught.value.details['reason'] == 'unwritable'
    assert os.listdir(tmp_path) == ['file']


async def test_entering_the_cassette_model_enters_the_wrapped_one() -> None:
    seen: list[str] = []

    class Tracked(FunctionModel):
        async def __aenter__(self) -> Tracked:
            seen.append('enter')
            return self

        async def __aexit__(self, *exc: object) -> None:
            seen.append('exit')

    real = Counting()
    async with CassetteModel(Tracked(real.answer), cassette=Cassette(), mode='all') as model:
        assert (await _agent().run('a', model=model)).output == 'echo: a #1'
    assert seen[0] == 'enter'
    assert seen[-1] == 'exit'


async def test_bad_arguments_are_typed(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='wraps a pydantic-ai Model') as caught:
        CassetteModel(42, cassette=Cassette())  # type: ignore[arg-type]
    assert caught.value.details['reason'] == 'model'
    with pytest.raises(CassetteError, match='cannot make model'):
        CassetteModel('nosuchprovider:model', cassette=Cassette(), mode='all')
    with pytest.raises(CassetteError, match='redact must be a function'):
        CassetteModel(None, cassette=Cassette(), redact='yes')  # type: ignore[arg-type]
    with pytest.raises(CassetteError, match='path must be a non-empty str or Path'):
        CassetteModel(None, cassette=3)  # type: ignore[arg-type]
    model = CassetteModel(Counting().model, cassette=Cassette(), mode='all', redact=lambda e: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(CassetteError, match='redaction hook returned NoneType'):
        await _agent().run('a', model=model)


async def test_a_model_named_by_string_is_made_only_to_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Replay in CI: no provider key, so making 'openai:...' would fail; it is never made.
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    path, real = tmp_path / 'c.json', Counting()
    await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    with override_allow_model_requests(False):
        for mode in ('none', 'once'):
            replay = CassetteModel('openai:gpt-5', cassette=path, mode=mode)
            # The wrapped model is a stand-in named as the recorded one, not the model named.
            assert (replay.model_name, replay.system) == ('function:answer:', 'function')
            assert not isinstance(replay.wrapped, FunctionModel)
            assert (await _agent().run('a', model=replay)).output == 'echo: a #1'
    with pytest.raises(CassetteError) as caught:  # recording does make it, and says why it cannot
        CassetteModel('openai:gpt-5', cassette=path, mode='all')
    assert caught.value.details['reason'] == 'model'


async def test_every_cassette_error_gives_the_path_as_text_in_details(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    missing = tmp_path / 'missing.json'
    with pytest.raises(CassetteError) as caught:
        await _agent().run('a', model=CassetteModel(None, cassette=missing))
    assert caught.value.details['path'] == str(missing)
    with pytest.raises(CassetteError) as caught:
        await _agent().run('a', model=CassetteModel(None, cassette=path, mode='all'))
    assert caught.value.details['path'] == str(path)  # no model to record with
    mismatch = await _mismatch(tmp_path, _agent(), prompt='b')
    assert mismatch.details['path'] == str(path)
    with pytest.raises(CassetteMismatchError) as caught:
        await _agent().run('a', model=CassetteModel(None, cassette=Cassette()))
    assert caught.value.details['path'] is None  # in memory: no path
