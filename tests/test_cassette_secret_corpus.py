"""A corpus of realistic secrets, recorded into cassettes: an independent scanner finds nothing in the files.

Every secret is built at test time from a seeded generator (never a real key), in the shapes an
agent's tools and models pass around: provider and vendor tokens, JWTs, PEM private keys, OAuth
parameters in URLs, header, env, YAML and INI lines, Python reprs, JSON nested in strings, fields
named `Cookie` or `credentials`, URL passwords holding a raw `@`. They go through the public API
into every place a cassette writes text (tool arguments and results, model text and streamed
deltas, provider URLs, a tool's description, a recorded toolset's definitions); then Yelp's
detect-secrets scans the written files with all its plugins (keyword and high-entropy ones
included, which the scrubber does not use) and no value of the corpus may appear in the bytes.
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

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from agentool.testing import Cassette, CassetteModel, CassetteTools, CassetteToolset

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


def _agent(executed: list[int]) -> Agent[None, str]:
    return Agent(output_type=str, tools=[_lookup(executed)])


def _scan(path: Path) -> list[dict[str, Any]]:
    # detect-secrets as a user runs it on a repository, all plugins on. A cassette's fingerprints
    # are digests (hex, high entropy) by design: those lines alone are excluded.
    scanned = subprocess.run(
        [
            sys.executable,
            '-m',
            'detect_secrets',
            'scan',
            '--all-files',
            '--exclude-lines',
            r'^\s*"fingerprint": "[0-9a-f]{32}",?$',
            str(path),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=path.parent,
    )
    results: dict[str, list[dict[str, Any]]] = json.loads(scanned.stdout)['results']
    return [finding for findings in results.values() for finding in findings]


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
    recorded = await _agent(live).run('look it up', model=model, capabilities=[CassetteTools(model)])
    assert recorded.output == f'Found these:\n{TEXT}'
    assert len(live) == 3
    written = path.read_bytes()
    for secret in CORPUS:
        for value in secret.values:
            assert value.encode() not in written, secret.shape
    assert b'PRIVATE KEY' not in written
    assert _scan(path) == []
    cassette = Cassette.load(path)
    assert len(cassette.exchanges) == 4
    assert len(cassette.tool_calls) == 3

    offline: list[int] = []
    with override_allow_model_requests(False):
        replay = CassetteModel(None, cassette=path)
        replayed = await _agent(offline).run('look it up', model=replay, capabilities=[CassetteTools(replay)])
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
    written = path.read_bytes()
    for secret in CORPUS:
        for value in secret.values:
            assert value.encode() not in written, secret.shape
    assert _scan(path) == []
    cassette = Cassette.load(path)
    assert cassette.toolsets['corpus'][0]['description'].startswith('Look things up. Deploy with ')
    assert any(exchange.stream for exchange in cassette.exchanges)
