"""Secrets never reach a cassette: default scrubbing of all that is written, `redact=` on top; replay still works.

The corpus at the end: realistic secrets built at test time from a seeded generator (never a real
key) in the shapes an agent's tools and models pass around (provider tokens, JWTs, PEM keys, OAuth
parameters in URLs, header, env, YAML and INI lines, reprs, JSON in strings, `Cookie` fields, URL
passwords with a raw `@`) go through the public API into every place a cassette writes text; then
Yelp's detect-secrets scans the files with all its plugins and no value may appear in the bytes.
"""

from __future__ import annotations

import base64
import json
import random
import string
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from agentool.cli import main
from agentool.testing import Cassette, CassetteModel, CassetteTools, CassetteToolset, Replay
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
    assert once == data | {'prompt': 'key sk-<redacted>', 'api_token': '<redacted>'}
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


def _agent(executed: list[str], result: dict[str, Any] | None = None) -> Agent[None, str]:
    agent = Agent(output_type=str)

    @agent.tool_plain
    def login(user: str, password: str) -> dict[str, Any]:
        """Log in."""
        executed.append(user)
        return result or {'user': user, 'api_token': TOKEN, 'note': f'header {BEARER}'}

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


SHORT = 'k-' + '7f3a9c'  # no known shape: only the name before it gives it away


@pytest.mark.parametrize(
    ('shown', 'kept'),
    [
        (f"Client(api_key='{SHORT}', timeout=3)", "Client(api_key='<redacted>', timeout=3)"),
        (f"{{'api_key': '{SHORT}', 'city': 'Paris'}}", "{'api_key': '<redacted>', 'city': 'Paris'}"),
        ("Request(Authorization='Bearer x')", "Request(Authorization='<redacted>')"),
        ("{'headers': {'authorization': 'Bearer x'}}", "{'headers': {'authorization': '<redacted>'}}"),
        (f'Login(password="it\'s {SHORT}")', 'Login(password="<redacted>")'),  # repr's own quotes kept
        (f"Login(password='it\\'s {SHORT}', user='ada')", "Login(password='<redacted>', user='ada')"),
        ('Creds(pin=1234, password=12345678, ok=True)', "Creds(pin='<redacted>', password='<redacted>', ok=True)"),
        (
            "{'user_pin': -3.5, 'spin': 5, 'token': True}",
            "{'user_pin': '<redacted>', 'spin': 5, 'token': '<redacted>'}",
        ),
    ],
)
def test_a_secret_in_python_repr_text_is_replaced(shown: str, kept: str) -> None:
    # As a tool's result or an error's text holds it.
    cleaned = scrub({'content': shown, 'list': [shown]})
    assert cleaned == {'content': kept, 'list': [kept]}
    assert scrub(cleaned) == cleaned


def test_a_repr_secret_inside_json_text_is_replaced() -> None:
    shown = json.dumps({'note': f"Client(api_key='{SHORT}', pin=1234)"})
    assert scrub({'args': shown}) == {'args': json.dumps({'note': "Client(api_key='<redacted>', pin='<redacted>')"})}


def test_a_number_or_boolean_under_a_secret_name_becomes_the_placeholder() -> None:
    secrets = {'pin': 1234, 'password': 12345678, 'card-pin': 0, 'api_token': True, 'client_secret': -1.5e3}
    kept = {'max_tokens': 100, 'spin': 3, 'pin_count': 2, 'secret': None}  # no secret's name, or nothing to hide
    cleaned = scrub(secrets | kept | {'args': json.dumps({'pin': 99, 'x': 1})})
    assert cleaned == dict.fromkeys(secrets, '<redacted>') | kept | {'args': json.dumps({'pin': '<redacted>', 'x': 1})}
    assert scrub(cleaned) == cleaned


def test_repr_scrubbing_stays_linear_and_keeps_the_json_whole() -> None:
    # A repr value that never closes, a JSON string ending in `password=`, a long run of backslashes.
    for text in ("password='" + '\\' * 50_000, 'password=', "api_key='x" + '"' * 1000, 'token=' * 20_000):
        data = {'a': text, 'b': "x'y"}
        assert scrub(scrub(data)) == scrub(data)


async def test_a_repr_secret_and_a_numeric_secret_in_a_tool_result_never_reach_the_file_and_replay(
    tmp_path: Path,
) -> None:
    path = tmp_path / 'c.json'
    session = {'shown': f"Session(user='ada', api_key='{SHORT}')", 'pin': 4321, 'password': 12345678}
    model = CassetteModel(FunctionModel(_answer), cassette=path, mode='once')
    await _agent([], session).run('open', model=model, capabilities=[CassetteTools(model)])
    text = path.read_text()
    for secret in (SHORT, '4321', '12345678'):
        assert secret not in text
    assert "api_key='<redacted>'" in text
    for tools in (True, False):  # answered from the cassette, then run again by the replay
        executed: list[str] = []
        with override_allow_model_requests(False):
            replay = CassetteModel(None, cassette=path)
            capabilities = [CassetteTools(replay)] if tools else []
            result = await _agent(executed, session).run('open', model=replay, capabilities=capabilities)
            assert result.output == 'logged in'
        assert executed == ([] if tools else ['ada'])
        assert replay.unused_exchanges() == []


UNLOCK = {'user': 'ada', 'pin': 4321, 'admin': True, 'use_token': True}


def _unlock(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if sum(isinstance(m, ModelResponse) for m in messages) == 0:
        return ModelResponse(parts=[ToolCallPart('unlock', UNLOCK)])
    return ModelResponse(parts=[TextPart('open')])


async def _stream_unlock(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    if sum(isinstance(m, ModelResponse) for m in messages) == 0:
        yield {0: DeltaToolCall('unlock', json.dumps(UNLOCK))}
    else:
        yield 'open'


def _locked(seen: list[tuple[int, bool, bool]]) -> Agent[None, str]:
    agent = Agent(output_type=str)

    @agent.tool_plain
    def unlock(user: str, pin: int, admin: bool, use_token: bool) -> str:
        """Unlock."""
        seen.append((pin, admin, use_token))
        return 'unlocked'

    return agent


@pytest.mark.parametrize('stream', [False, True])
async def test_a_scrubbed_number_in_a_tool_call_replays_as_a_value_of_its_type(tmp_path: Path, stream: bool) -> None:
    # `"pin": "<redacted>"` would fail the tool's validation (a retry the cassette never saw): on
    # replay the tool gets 0 and false where its schema wants a number and a boolean.
    path = tmp_path / 'c.json'

    async def run(model: CassetteModel, seen: list[tuple[int, bool, bool]]) -> str:
        if not stream:
            return (await _locked(seen).run('open', model=model)).output
        async with _locked(seen).run_stream('open', model=model) as result:
            return await result.get_output()

    live = FunctionModel(_unlock) if not stream else FunctionModel(stream_function=_stream_unlock)
    recorded: list[tuple[int, bool, bool]] = []
    assert await run(CassetteModel(live, cassette=path, mode='once'), recorded) == 'open'
    assert recorded == [(4321, True, True)]
    assert '4321' not in path.read_text()
    replayed: list[tuple[int, bool, bool]] = []
    with override_allow_model_requests(False):
        replay = CassetteModel(None, cassette=path)
        assert await run(replay, replayed) == 'open'
    assert replayed == [(0, True, False)]  # `admin` is no secret's name: kept
    assert replay.unused_exchanges() == []


def test_a_repr_secret_in_plain_text_is_replaced_and_json_text_stays_json() -> None:
    assert scrub_text(f'Client(api_key="{SHORT}", x=1)') == 'Client(api_key="<redacted>", x=1)'
    assert scrub_text(f"Client(api_key='{SHORT}', pin=1234)") == "Client(api_key='<redacted>', pin='<redacted>')"
    # In JSON text the `"` after `password=` ends a string: nothing between two strings is taken.
    for data in ({'a': 'password=', 'b': 'c'}, ['token=', 'x'], {'token=': 1}):
        for text in (json.dumps(data), json.dumps(data, indent=2), json.dumps(data, separators=(',', ':'))):
            assert scrub_text(text) == text


def test_every_value_inside_a_list_or_object_under_a_secret_name_becomes_the_placeholder() -> None:
    jwk = {'kty': 'EC', 'd': 'private-part', 'size': 256, 'nested': [{'x': 'y'}, True, None]}
    data = {
        'private_key': jwk,
        'api_keys': ['kept: not a secret name'],
        'client_secret': ['first', 'second'],
        'outer': {'password': {'current': 'hunter2', 'previous': ['older']}},
        'max_tokens': [1, 2],
    }
    cleaned = scrub(data)
    assert cleaned == data | {
        'private_key': dict.fromkeys(['kty', 'd', 'size'], '<redacted>')
        | {'nested': [{'x': '<redacted>'}, '<redacted>', None]},
        'client_secret': ['<redacted>', '<redacted>'],
        'outer': {'password': {'current': '<redacted>', 'previous': ['<redacted>']}},
    }
    assert data['private_key'] is jwk  # the input is left alone
    assert jwk['d'] == 'private-part'
    assert scrub(cleaned) == cleaned


S = 'Zq8' + 'vN2xLp5Rt7'  # no known shape: only where it stands gives it away


@pytest.mark.parametrize(
    ('text', 'kept'),
    [
        (f'https://x.example/cb?refresh_token={S}&a=1', 'https://x.example/cb?refresh_token=<redacted>&a=1'),
        (f'https://x.example/cb?client_secret={S}', 'https://x.example/cb?client_secret=<redacted>'),
        (f'https://x.example/cb?private_token={S}', 'https://x.example/cb?private_token=<redacted>'),
        (f'https://x.example/cb?access-token={S}', 'https://x.example/cb?access-token=<redacted>'),
        (f'https://x.example/cb#access_token={S}&state=1', 'https://x.example/cb#access_token=<redacted>&state=1'),
        (f'https://x.example/cb?code={S}', 'https://x.example/cb?code=<redacted>'),
        (f'Authorization: Basic {S}==', 'Authorization: Basic <redacted>'),
        (
            f'GET / HTTP/1.1\nHost: x\nX-Api-Key: {S}\nAccept: */*',
            'GET / HTTP/1.1\nHost: x\nX-Api-Key: <redacted>\nAccept: */*',
        ),
        (f'DB_HOST=db\nDB_PASSWORD={S} x\nDB_PORT=1', 'DB_HOST=db\nDB_PASSWORD=<redacted>\nDB_PORT=1'),
        (f'export DEPLOY_TOKEN={S}', 'export DEPLOY_TOKEN=<redacted>'),
        (f'svc:\n  api_key: {S}\n  region: eu', 'svc:\n  api_key: <redacted>\n  region: eu'),
        (f'client_secret: "{S}"', 'client_secret: "<redacted>"'),
        (f'[db]\npassword = {S}\nuser = app', '[db]\npassword = <redacted>\nuser = app'),
        (f'Cookie: sid={S}; theme=dark', 'Cookie: <redacted>'),
        (f'Set-Cookie: sid={S}; Path=/', 'Set-Cookie: <redacted>'),
        (f'use Authorization: Basic {S} here', 'use Authorization: Basic <redacted> here'),
        (f'postgresql://app:p@ss{S}@db:5432/app', 'postgresql://<redacted>@db:5432/app'),
        (
            f'{{"n": 1, "credentials": {{"user": "u", "key": "{S}"}}, "m": 2',
            '{"n": 1, "credentials": <redacted>, "m": 2',
        ),
        (
            f'key:\n-----BEGIN RSA PRIVATE KEY-----\n{S}\n{S}==\n-----END RSA PRIVATE KEY-----\nok',
            'key:\n<redacted>\nok',
        ),
        (f'-----BEGIN OPENSSH PRIVATE KEY-----\n{S}\n(cut)', '<redacted>'),
        ('export of glpat-' + 'AxII-_lFCudklIPFwqGs done', 'export of <redacted> done'),  # detect-secrets' shape
        ('api_key: ' + 'x' * 70_000, 'api_key: <redacted>'),  # a long value leaves no tail
        ('Login(password="' + 'y' * 70_000 + '")', 'Login(password="<redacted>")'),
        ('?token=' + 'z' * 70_000 + '&a=1', '?token=<redacted>&a=1'),
    ],
)
def test_each_shape_of_issue_41_is_replaced(text: str, kept: str) -> None:
    assert scrub_text(text) == kept
    assert scrub_text(kept) == kept


def test_json_nested_in_strings_is_scrubbed_at_any_depth_and_rewritten_only_where_it_held_a_secret() -> None:
    inner = {'api_key': S, 'city': 'Paris'}
    for depth in range(1, 6):
        text = json.dumps(inner)
        for _ in range(depth - 1):
            text = json.dumps({'body': text})
        cleaned = scrub({'result': text})['result']
        assert S not in cleaned
        assert 'Paris' in cleaned
    compact = json.dumps({'city': 'Paris', 'n': [1, 2]}, separators=(',', ':'))
    assert scrub({'args': compact}) == {'args': compact}  # no secret: the text is kept as it was


def test_cookie_set_cookie_and_credentials_fields_are_replaced_whole() -> None:
    data = {'headers': {'Cookie': f'sid={S}', 'Set-Cookie': f'sid={S}; Path=/'}, 'credentials': {'user': 'u', 'pw': S}}
    assert scrub(data) == {
        'headers': {'Cookie': '<redacted>', 'Set-Cookie': '<redacted>'},
        'credentials': {'user': '<redacted>', 'pw': '<redacted>'},
    }


def test_what_is_not_a_secret_stays() -> None:
    text = 'max_tokens: 100\nspin=3\nTokenizer: bpe\nThe key point: scrubbing.\nhttps://a.example:8080/x?page=2#top'
    assert scrub_text(text) == text
    assert scrub({'input_tokens': 5, 'key': 'k', 'tokens': ['a']}) == {'input_tokens': 5, 'key': 'k', 'tokens': ['a']}


@pytest.mark.parametrize(
    'text',
    [
        'token=' * 16_666,
        'a:' * 50_000,
        'https://a:' * 10_000,
        'https://a:b@' * 10_000,
        '-----BEGIN PRIVATE KEY-----' * 3_333,
        'password="' * 10_000,
        '\\"token\\": \\"' * 6_666,
        'api_key: ' + 'x' * 100_000,
        'api_key: x\n' * 10_000,
        'credentials: {' * 10_000,
        'credentials: [' + '"' * 100_000,
        'x' * 21 + 'token' * 20_000,
        'token' + ' \t' * 50_000 + '=x',
        '{' * 33_333 + '}' * 33_333,
        'a' * 100_000 + '-us1',
    ],
)
def test_hostile_text_scrubs_in_one_pass_and_stays_idempotent(text: str) -> None:
    # Each of these would take minutes with a backtracking rule; no rule is.
    once = scrub_text(text)
    assert scrub_text(once) == once


def test_the_gated_detect_secrets_plugins_still_need_what_their_gate_checks() -> None:
    # A plugin is skipped on text holding none of its `NEEDED` parts: an update of detect-secrets
    # that drops one from a pattern must show here.
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    from agentool.testing._known_shapes import NEEDED

    plugins = {kind.__name__: kind for kind in get_mapping_from_secret_type_to_class().values()}
    for name, parts in NEEDED.items():
        plugin = plugins[name]()
        assert isinstance(plugin, RegexBasedDetector)
        for pattern in plugin.denylist:
            source = pattern.pattern.replace('\\', '').lower()  # `hooks\.slack\.com` holds hooks.slack.com
            assert any(part.lower() in source for part in parts), (name, pattern.pattern)


_ALNUM = string.ascii_letters + string.digits
_LOWER = string.ascii_lowercase + string.digits


@dataclass(frozen=True)
class Secret:
    """One corpus entry: the text a tool or a model would hold, and the values that must not survive."""

    shape: str
    text: str
    values: tuple[str, ...]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip('=')


def corpus(seed: int = 41) -> list[Secret]:
    """Many secret shapes, each built from `seed` (deterministic; no real key)."""
    rng = random.Random(seed)

    def pick(alphabet: str, n: int) -> str:
        return ''.join(rng.choice(alphabet) for _ in range(n))

    def word() -> str:  # a password a person types: mixed, with a symbol
        return pick(_ALNUM, 10) + rng.choice('!%*') + pick(_ALNUM, 5)

    entries: list[Secret] = []

    def add(shape: str, make: Callable[[str], str], value: str) -> None:
        entries.append(Secret(shape, make(value), (value,)))

    add('openai key', lambda v: f'Use {v} for the OpenAI client.', 'sk-proj-' + pick(_ALNUM, 48))
    add('anthropic key', lambda v: f'ANTHROPIC_API_KEY is {v}', 'sk-ant-api03-' + pick(_ALNUM + '-_', 90))
    add('google key', lambda v: f'maps key {v} (restricted)', 'AIza' + pick(_ALNUM + '-_', 35))
    add('groq key', lambda v: f'groq: {v}', 'gsk_' + pick(_ALNUM, 52))
    add('hugging face token', lambda v: f'login with {v}', 'hf_' + pick(_ALNUM, 34))
    add(
        'aws access key id',
        lambda v: f'the key id {v} belongs to ci',
        'AKIA' + pick(string.ascii_uppercase + '234567', 16),
    )
    add(
        'aws secret access key',
        lambda v: f'aws_secret_access_key = {v}',
        pick(_ALNUM + '/+', 40),
    )
    add('github token', lambda v: f'git clone with {v}', 'ghp_' + pick(_ALNUM, 36))
    add('github fine-grained token', lambda v: f'token {v} expires', 'github_pat_' + pick(_ALNUM + '_', 82))
    add('gitlab token', lambda v: f'export of {v} done', 'glpat-' + pick(_ALNUM + '-_', 20))
    add(
        'slack bot token',
        lambda v: f'post as {v}',
        f'xoxb-{pick(string.digits, 12)}-{pick(string.digits, 12)}-{pick(_LOWER, 24)}',
    )
    add(
        'slack webhook',
        lambda v: f'notify {v}',
        f'https://hooks.slack.com/services/T{pick(_ALNUM, 8)}/B{pick(_ALNUM, 8)}/{pick(_ALNUM, 24)}',
    )
    add('stripe live key', lambda v: f'charge with {v}', 'sk_live_' + pick(_ALNUM, 24))
    add('stripe restricted key', lambda v: f'refunds use {v}', 'rk_live_' + pick(_ALNUM, 24))
    add('sendgrid key', lambda v: f'mail via {v}', f'SG.{pick(_ALNUM + "-_", 22)}.{pick(_ALNUM + "-_", 43)}')
    add('twilio key', lambda v: f'sms key {v}', 'SK' + pick('0123456789abcdef', 32))
    add('mailchimp key', lambda v: f'list sync {v}', pick('0123456789abcdef', 32) + '-us12')
    add('pypi token', lambda v: f'upload with {v}', 'pypi-AgEIcHlwaS5vcmc' + pick(_ALNUM + '-_', 80))
    add('square secret', lambda v: f'square {v}', 'sq0csp-' + pick(_ALNUM + '-_', 43))
    add(
        'discord bot token',
        lambda v: f'bot {v} online',
        f'M{pick(_ALNUM, 23)}.{pick(_ALNUM, 6)}.{pick(_ALNUM + "-_", 27)}',
    )
    add('telegram bot token', lambda v: f'bot api {v}', f'{pick(string.digits, 9)}:{pick(_ALNUM + "-_", 35)}')
    add(
        'azure storage connection string',
        lambda v: f'DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={v};EndpointSuffix=core.windows.net',
        base64.b64encode(rng.randbytes(66)).decode(),
    )
    header = _b64url(json.dumps({'alg': 'HS256', 'typ': 'JWT'}).encode())
    payload = _b64url(json.dumps({'sub': pick(_LOWER, 12), 'iat': 1_700_000_000}).encode())
    add('jwt', lambda v: f'session {v}', f'{header}.{payload}.{_b64url(rng.randbytes(32))}')
    add('bearer header', lambda v: f'Authorization: Bearer {v}', pick(_ALNUM + '-._~', 40))
    add('basic auth header', lambda v: f'Authorization: Basic {v}', base64.b64encode(f'ada:{word()}'.encode()).decode())
    add('api key header', lambda v: f'X-Api-Key: {v}', pick(_ALNUM, 32))
    add('cookie header', lambda v: f'Cookie: session={v}; theme=dark', pick(_ALNUM, 32))
    add('set-cookie header', lambda v: f'Set-Cookie: sid={v}; Path=/; HttpOnly', pick(_ALNUM, 32))
    add('env line', lambda v: f'DB_HOST=db\nDB_PASSWORD={v}\nDB_PORT=5432', word())
    add('exported env line', lambda v: f'export DEPLOY_TOKEN={v}', pick(_ALNUM, 24))
    add('yaml line', lambda v: f'service:\n  api_key: {v}\n  region: eu', pick(_ALNUM, 24))
    add('quoted yaml line', lambda v: f'oauth:\n  client_secret: "{v}"', pick(_ALNUM, 30))
    add('ini line', lambda v: f'[database]\npassword = {v}\nuser = app', word())
    add('python repr', lambda v: f"Client(api_key='{v}', timeout=30)", pick(_ALNUM, 28))
    add('url password with a raw @', lambda v: f'postgresql://app:{v}@db.internal:5432/app', f'p@ss{pick(_ALNUM, 12)}')
    add('url password', lambda v: f'redis://:{v}@cache:6379/0', pick(_ALNUM, 20))
    add('url user and password', lambda v: f'https://ada:{v}@git.example.com/repo.git', pick(_ALNUM, 20))
    for name in ('refresh_token', 'client_secret', 'private_token', 'access-token', 'api_key', 'code'):
        add(
            f'oauth query {name}',
            lambda v, name=name: f'https://auth.example.com/cb?{name}={v}&state=xyz',
            pick(_ALNUM, 32),
        )
    add('oauth fragment', lambda v: f'https://app.example.com/#access_token={v}&token_type=bearer', pick(_ALNUM, 40))
    add(
        'aws signed url',
        lambda v: f'https://b.s3.amazonaws.com/k?X-Amz-Signature={v}&X-Amz-Expires=60',
        pick('0123456789abcdef', 64),
    )
    add('json field', lambda v: json.dumps({'user': 'ada', 'password': v}), word())
    add('json nested twice', lambda v: json.dumps({'body': json.dumps({'api_key': v})}), pick(_ALNUM, 32))
    add(
        'json nested three times',
        lambda v: json.dumps({'a': json.dumps({'b': json.dumps({'client_secret': v})})}),
        pick(_ALNUM, 32),
    )
    add('credentials field', lambda v: json.dumps({'credentials': {'user': 'ada', 'key': v}}), pick(_ALNUM, 32))
    add('cookie field', lambda v: json.dumps({'headers': {'Cookie': f'sid={v}'}}), pick(_ALNUM, 32))
    for kind in ('RSA PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'PRIVATE KEY', 'ENCRYPTED PRIVATE KEY'):
        body = base64.b64encode(rng.randbytes(384)).decode()
        lines = tuple(body[i : i + 64] for i in range(0, len(body), 64))
        block = '\n'.join((f'-----BEGIN {kind}-----', *lines, f'-----END {kind}-----'))
        entries.append(Secret(f'pem {kind.lower()}', f'key file:\n{block}\n', lines))
    return entries


CORPUS = corpus()
URLS = [secret for secret in CORPUS if secret.text.startswith(('https://', 'postgresql://', 'redis://'))]
TEXT = '\n'.join(secret.text for secret in CORPUS)


def _structured() -> dict[str, Any]:
    # The same secrets as JSON fields, the way tools pass them around.
    pick = {secret.shape: secret.values[0] for secret in CORPUS}
    return {
        'credentials': {'user': 'ada', 'password': pick['env line']},
        'headers': {'X-Api-Key': pick['api key header'], 'Cookie': f'sid={pick["cookie header"]}'},
        'Set-Cookie': f'sid={pick["set-cookie header"]}',
        'body': json.dumps({'body': json.dumps({'api_key': pick['json nested twice']})}),
    }


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    step = sum(isinstance(message, ModelResponse) for message in messages)
    url = URLS[step % len(URLS)].text
    if step < 3:
        call = ToolCallPart('lookup', {'text': TEXT, 'config': _structured()}, tool_call_id=f'call_{step}')
        return ModelResponse(parts=[call], provider_url=url)
    return ModelResponse(parts=[TextPart(f'Found these:\n{TEXT}')], provider_url=url)


def _lookup(executed: list[int]) -> Tool[Any]:
    def lookup(text: str, config: dict[str, Any]) -> dict[str, Any]:
        executed.append(len(text))
        return {'found': TEXT, 'config': _structured(), 'raw': json.dumps(_structured())}

    return Tool(lookup, description=f'Look things up. Deploy with {CORPUS[0].text}')


def _scan(path: Path) -> list[dict[str, Any]]:
    # detect-secrets as a user runs it on a repository, all plugins on. A cassette's fingerprints
    # are digests (hex, high entropy) by design: those lines alone are excluded.
    scan = ['scan', '--all-files', '--exclude-lines', r'^\s*"fingerprint": "[0-9a-f]{32}",?$', str(path)]
    scanned = subprocess.run(
        [sys.executable, '-m', 'detect_secrets', *scan], capture_output=True, text=True, check=True, cwd=path.parent
    )
    results: dict[str, list[dict[str, Any]]] = json.loads(scanned.stdout)['results']
    return [finding for findings in results.values() for finding in findings]


def _assert_clean(path: Path) -> None:
    """No value of the corpus is in the file's bytes, and detect-secrets finds nothing there."""
    written = path.read_bytes()
    for secret in CORPUS:
        for value in secret.values:
            assert value.encode() not in written, secret.shape
    assert _scan(path) == []


def test_the_corpus_is_deterministic_varied_and_found_by_the_scanner_unscrubbed(tmp_path: Path) -> None:
    # The corpus is worth something only if the scanner sees it when nothing scrubs it.
    assert corpus() == CORPUS
    assert len(CORPUS) >= 50
    assert len({secret.shape for secret in CORPUS}) == len(CORPUS)
    raw = tmp_path / 'raw.txt'
    raw.write_text(TEXT)
    found = {finding['type'] for finding in _scan(raw)}
    for kind in ('Private Key', 'JSON Web Token', 'AWS Access Key', 'Secret Keyword', 'Basic Auth Credentials'):
        assert kind in found


async def test_no_secret_of_the_corpus_reaches_a_cassette_and_the_cassette_replays(tmp_path: Path) -> None:
    path = tmp_path / 'corpus.json'
    live: list[int] = []
    model = CassetteModel(FunctionModel(_model), cassette=path, mode='once')
    agent = Agent(output_type=str, tools=[_lookup(live)])
    recorded = await agent.run('look it up', model=model, capabilities=[CassetteTools(model)])
    assert recorded.output == f'Found these:\n{TEXT}'
    assert len(live) == 3
    _assert_clean(path)
    assert b'PRIVATE KEY' not in path.read_bytes()
    cassette = Cassette.load(path)
    assert len(cassette.exchanges) == 4
    assert len(cassette.tool_calls) == 3

    offline: list[int] = []
    with override_allow_model_requests(False):
        replay = CassetteModel(None, cassette=path)
        agent = Agent(output_type=str, tools=[_lookup(offline)])
        replayed = await agent.run('look it up', model=replay, capabilities=[CassetteTools(replay)])
    assert offline == []  # every tool result came from the cassette
    assert replay.unused_exchanges() == []
    assert replayed.output.startswith('Found these:\n')
    assert all(value not in replayed.output for secret in CORPUS for value in secret.values)


async def _stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    # Deltas of 7 characters: every secret is split across several of them.
    if not any(isinstance(message, ModelResponse) for message in messages):
        args = json.dumps({'text': TEXT, 'config': _structured()})
        for start in range(0, len(args), 7):
            yield {0: DeltaToolCall('lookup' if start == 0 else None, args[start : start + 7], tool_call_id='c1')}
        return
    answer = f'Found these:\n{TEXT}'
    for start in range(0, len(answer), 7):
        yield answer[start : start + 7]


async def test_no_secret_of_the_corpus_reaches_a_cassette_from_a_stream_or_a_recorded_toolset(tmp_path: Path) -> None:
    path = tmp_path / 'streamed.json'
    model = CassetteModel(FunctionModel(stream_function=_stream), cassette=path, mode='once')
    toolset = CassetteToolset(FunctionToolset([_lookup([])]), model, name='corpus')
    async with Agent(output_type=str).run_stream('look it up', model=model, toolsets=[toolset]) as result:
        assert await result.get_output() == f'Found these:\n{TEXT}'
    _assert_clean(path)
    cassette = Cassette.load(path)
    assert cassette.toolsets['corpus'][0]['description'].startswith('Look things up. Deploy with ')
    assert any(exchange.stream for exchange in cassette.exchanges)
