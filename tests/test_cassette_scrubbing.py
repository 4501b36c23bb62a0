"""Secrets never reach a cassette: default scrubbing of all that is written, `redact=` on top; replay still works."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool.cli import main
from agentool.testing import Cassette, CassetteModel, CassetteTools, Replay
from agentool.testing.scrub import scrub, scrub_text

OPENAI_KEY = 'sk-proj-' + 'A1b2C3d4E5f6G7h8I9j0K1l2'
ANTHROPIC_KEY = 'sk-ant-api03-' + 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3'
AWS_KEY = 'AKIA' + 'IOSFODNN7EXAMPLE'
BEARER = 'Bearer ' + 'abcdefghijklmnopqrstuvwxyz012345'
TOKEN = 'tok-' + '7f3a9c'  # no known shape: only its field name gives it away


@pytest.mark.parametrize(
    ('secret', 'kept'),
    [
        (OPENAI_KEY, 'sk-<redacted>'),
        (ANTHROPIC_KEY, 'sk-ant-<redacted>'),
        (AWS_KEY, '<redacted>'),
        (BEARER, 'Bearer <redacted>'),
        ('AIza' + 'SyA1234567890abcdefghijklmnopqrstuv', '<redacted>'),
        ('gsk_' + 'abcdefghijklmnopqrstuvwx', 'gsk_<redacted>'),
        ('ghp_' + 'abcdefghijklmnopqrstuvwxyz0123456789', '<redacted>'),
        ('https://user:' + 'hunter2@gw.example/v1', 'https://<redacted>@gw.example/v1'),
        ('authorization: bearer ' + 'abcdefghijklmnopqrstuvwxyz012345', 'authorization: bearer <redacted>'),
        ('https://:' + 'hunter2@gw.example/v1', 'https://<redacted>@gw.example/v1'),
        ('https://gw.example/v1?api_key=' + 'abc123&x=1', 'https://gw.example/v1?api_key=<redacted>&x=1'),
    ],
)
def test_each_common_secret_shape_is_replaced(secret: str, kept: str) -> None:
    assert scrub_text(f'use {secret} now') == f'use {kept} now'


def test_scrubbing_is_idempotent_and_leaves_ordinary_text_alone() -> None:
    data = {'prompt': f'key {OPENAI_KEY}', 'api_token': TOKEN, 'max_tokens': 100, 'text': 'Token counting is fun'}
    once = scrub(data)
    assert once == {
        'prompt': 'key sk-<redacted>',
        'api_token': '<redacted>',
        'max_tokens': 100,
        'text': 'Token counting is fun',
    }
    assert scrub(once) == once
    assert data['api_token'] == TOKEN  # a new value: the caller's data is left alone


def test_a_secret_field_inside_json_text_is_replaced() -> None:
    text = json.dumps({'args': json.dumps({'api_token': TOKEN, 'city': 'Paris'})})
    assert TOKEN not in scrub_text(text)
    assert 'Paris' in scrub_text(text)


def _answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if sum(isinstance(m, ModelResponse) for m in messages) == 0:
        return ModelResponse(parts=[ToolCallPart('login', {'user': 'ada', 'password': 'pw-' + '98765'})])
    return ModelResponse(parts=[TextPart('logged in')])


def _agent(executed: list[str]) -> Agent[None, str]:
    agent = Agent(output_type=str)

    @agent.tool_plain
    def login(user: str, password: str) -> dict[str, str]:
        """Log in."""
        executed.append(user)
        return {'user': user, 'api_token': TOKEN, 'note': f'header {BEARER}'}

    return agent


async def test_a_key_in_a_prompt_never_reaches_the_file_and_the_cassette_replays(tmp_path: Path) -> None:
    path, live, offline = tmp_path / 'c.json', [], []
    prompt = f'My key is {OPENAI_KEY}, log in as ada'
    model = CassetteModel(FunctionModel(_answer), cassette=path, mode='once')
    recorded = await _agent(live).run(prompt, model=model, capabilities=[CassetteTools(model)])
    text = path.read_text()
    for secret in (OPENAI_KEY, TOKEN, BEARER, 'pw-98765'):
        assert secret not in text
    assert 'sk-<redacted>' in text
    with override_allow_model_requests(False):
        replay = CassetteModel(None, cassette=path)
        tools = CassetteTools(replay)
        replayed = await _agent(offline).run(prompt, model=replay, capabilities=[tools])
    assert (replayed.output, offline, live) == (recorded.output, [], ['ada'])
    tools.calls.assert_called('login', {'user': 'ada', 'password': '<redacted>'})
    assert replay.unused_exchanges() == []


async def test_redact_applies_to_tool_calls_and_the_cassette_still_replays(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'

    def redact(entry: dict[str, Any]) -> dict[str, Any]:
        return json.loads(json.dumps(entry).replace('ada', '<user>'))

    model = CassetteModel(FunctionModel(_answer), cassette=path, mode='once', redact=redact)
    await _agent([]).run('log in', model=model, capabilities=[CassetteTools(model)])
    assert 'ada' not in path.read_text()
    assert Cassette.load(path).tool_calls[0].args == {'user': '<user>', 'password': '<redacted>'}
    with override_allow_model_requests(False):
        replay = CassetteModel(None, cassette=path, redact=redact)
        replayed = await _agent([]).run('log in', model=replay, capabilities=[CassetteTools(replay)])
    assert replayed.output == 'logged in'


async def test_scrub_false_writes_what_was_sent(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    model = CassetteModel(FunctionModel(_answer), cassette=path, mode='once', scrub=False)
    await _agent([]).run(f'key {OPENAI_KEY}', model=model)
    assert OPENAI_KEY in path.read_text()


async def test_a_provider_url_with_credentials_is_written_without_them(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('hi')], provider_url='https://user:' + 'PASS@gw.example/v1?token=T0K3N')

    await Agent(output_type=str).run('hi', model=CassetteModel(FunctionModel(answer), cassette=path, mode='once'))
    written = Cassette.load(path).exchanges[0].response['provider_url']
    assert written == 'https://<redacted>@gw.example/v1?token=<redacted>'


async def test_the_scrub_command_cleans_an_existing_cassette_which_still_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / 'c.json'
    prompt = f'My key is {OPENAI_KEY}, log in as ada'
    model = CassetteModel(FunctionModel(_answer), cassette=path, mode='once', scrub=False)
    await _agent([]).run(prompt, model=model, capabilities=[CassetteTools(model)])
    assert OPENAI_KEY in path.read_text()
    assert main(['cassette', 'scrub', str(path)]) == 0
    assert capsys.readouterr().out == f'{path}: scrubbed\n'
    assert OPENAI_KEY not in path.read_text()
    assert TOKEN not in path.read_text()
    assert main(['cassette', 'scrub', str(path)]) == 0
    assert capsys.readouterr().out == f'{path}: clean\n'
    with override_allow_model_requests(False):
        replay = Replay(path)
        agent = _agent([])
        with agent.override(model=replay.model):
            assert (await agent.run(prompt, capabilities=[replay])).output == 'logged in'
    replay.calls.assert_called('login', {'user': 'ada', 'password': '<redacted>'})


async def test_a_secret_split_across_stream_deltas_never_reaches_the_file(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        for piece in ('Your key is sk-proj-A1b2', 'C3d4E5f6G7h8', 'I9j0K1l2, keep it safe.'):
            yield piece

    async def run(model: CassetteModel) -> str:
        async with Agent(output_type=str).run_stream('key?', model=model) as result:
            return await result.get_output()

    recorded = await run(CassetteModel(FunctionModel(stream_function=stream), cassette=path, mode='once'))
    assert recorded == f'Your key is {OPENAI_KEY}, keep it safe.'
    text = path.read_text()
    assert 'C3d4E5f6G7h8' not in text
    assert 'I9j0K1l2' not in text
    assert await run(CassetteModel(None, cassette=path)) == 'Your key is sk-<redacted>, keep it safe.'
