"""Who a client is, for the session limits: its address, its token's name, a trusted proxy's word.

Driven in-process (ASGI calls naming each request's peer); the loopback floods are in
`tests/test_serving_fair_limits.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('mcp')

from agentool.cli import main
from agentool.errors import ServingError
from agentool.mcp_http import HttpOptions
from tests.mcp_asgi import INITIALIZE, running, send

ALICE, BOB = 'alice-token-1', 'bob-token-22'
PROXY = ('10.0.0.5', 50000)


def _bearer(token: str) -> dict[str, str]:
    return {'authorization': f'Bearer {token}'}


async def test_two_named_tokens_at_one_address_are_two_clients(injector: object) -> None:
    options = HttpOptions(tokens={'alice': ALICE, 'bob': BOB}, max_sessions=4, max_sessions_per_client=1)
    async with running(options) as app:
        for token in (ALICE, BOB, ALICE, ALICE):
            assert (await send(app, ('127.0.0.1', 1), INITIALIZE, headers=_bearer(token))).status == 200
        table = app.state.mcp_sessions
        assert table.open == 2  # one each: alice's flood recycled alice's own session
        assert sorted(table.per_client) == [('127.0.0.1', 'alice'), ('127.0.0.1', 'bob')]
        assert (await send(app, ('127.0.0.1', 1), INITIALIZE, headers=_bearer('nobody'))).status == 401


async def test_a_single_token_holder_is_counted_by_address_alone(injector: object) -> None:
    async with running(HttpOptions(tokens={'ci': ALICE}, max_sessions=4, max_sessions_per_client=1)) as app:
        assert (await send(app, ('127.0.0.1', 1), INITIALIZE, headers=_bearer(ALICE))).status == 200
        assert list(app.state.mcp_sessions.per_client) == [('127.0.0.1', '')]


async def test_a_forwarded_address_counts_only_from_a_named_proxy(injector: object) -> None:
    options = HttpOptions(trusted_proxies=['10.0.0.0/24'], max_sessions=8, max_sessions_per_client=1)
    async with running(options) as app:
        for client in ('192.0.2.1', '192.0.2.2', '192.0.2.1'):
            # The client may prepend anything; the proxy appends the address it saw, read from the right.
            forwarded = {'x-forwarded-for': f'6.6.6.6, {client}'}
            assert (await send(app, PROXY, INITIALIZE, headers=forwarded)).status == 200
        spoofed = {'x-forwarded-for': '192.0.2.99'}
        assert (await send(app, ('198.51.100.7', 1), INITIALIZE, headers=spoofed)).status == 200
        clients = sorted(address for address, _ in app.state.mcp_sessions.per_client)
        assert clients == ['192.0.2.1', '192.0.2.2', '198.51.100.7']  # not the spoofer's claim


async def test_without_trusted_proxies_x_forwarded_for_is_ignored(injector: object) -> None:
    async with running(HttpOptions(max_sessions=8, max_sessions_per_client=1)) as app:
        for client in ('192.0.2.1', '192.0.2.2'):
            headers = {'x-forwarded-for': client}
            assert (await send(app, PROXY, INITIALIZE, headers=headers)).status == 200
        assert list(app.state.mcp_sessions.per_client) == [('10.0.0.5', '')]


@pytest.mark.parametrize(
    ('options', 'option'),
    [
        ({'max_sessions': 8, 'max_sessions_per_client': 8}, 'max_sessions_per_client'),
        ({'tokens': {}}, 'tokens'),
        ({'tokens': {'a': 'x\ty'}}, 'tokens'),
        ({'tokens': {'a': ' padded'}}, 'tokens'),
        ({'tokens': {'': 'abc'}}, 'tokens'),
        ({'tokens': {'a': 'same', 'b': 'same'}}, 'tokens'),
        ({'tokens': {'a': 'abc'}, 'token': 'other'}, 'token'),
        ({'trusted_proxies': '10.0.0.1'}, 'trusted_proxies'),
        ({'trusted_proxies': ['proxy.example']}, 'trusted_proxies'),
    ],
)
def test_identity_options_are_checked_at_construction(options: dict[str, Any], option: str) -> None:
    with pytest.raises(ServingError) as raised:
        HttpOptions(**options)
    assert raised.value.details['options'] == [option]
    assert not {'same', 'abc'} & set(str(raised.value).replace("'", ' ').split())  # no token is quoted


def test_one_session_server_serves_one_client_at_a_time() -> None:
    assert HttpOptions(max_sessions=1, max_sessions_per_client=1).max_sessions == 1


def test_a_tokens_file_names_one_token_a_line(tmp_path: Path) -> None:
    tokens_file = tmp_path / 'tokens'
    tokens_file.write_text(f'# who may call\nalice {ALICE}\n\nbob   {BOB}\n', encoding='utf-8')
    assert HttpOptions(tokens_file=tokens_file).resolve_tokens() == {'alice': ALICE, 'bob': BOB}


@pytest.mark.parametrize(
    ('content', 'said'),
    [
        ('alice\n', 'line 1 of the tokens file'),
        (f'alice {ALICE}\nalice {BOB}\n', 'line 2 of the tokens file'),
        (f'alice {ALICE}\nbob {ALICE}\n', 'two names share one token'),
        ('# nothing\n', 'it names no token'),
    ],
)
def test_a_bad_tokens_file_is_refused_without_quoting_a_token(tmp_path: Path, content: str, said: str) -> None:
    tokens_file = tmp_path / 'tokens'
    tokens_file.write_text(content, encoding='utf-8')
    with pytest.raises(ServingError, match=said) as raised:
        HttpOptions(tokens_file=tokens_file).resolve_tokens()
    assert not any(token in str(raised.value) for token in (ALICE, BOB))


@pytest.mark.parametrize(
    ('flags', 'option'),
    [
        (['--trusted-proxy', 'nonsense'], 'trusted_proxies'),
        (['--max-sessions', '4', '--max-sessions-per-client', '4'], 'max_sessions_per_client'),
    ],
)
def test_the_cli_identity_flags_reach_the_options(
    flags: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(['mcp', '--transport', 'streamable-http', *flags]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert f'invalid HTTP serving options: {option}' in err


def test_the_cli_tokens_file_flag_reaches_the_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokens_file = tmp_path / 'tokens'
    tokens_file.write_text('alice\n', encoding='utf-8')
    assert main(['mcp', '--transport', 'streamable-http', '--tokens-file', str(tokens_file)]) == 1
    assert 'line 1 of the tokens file' in capsys.readouterr().err
