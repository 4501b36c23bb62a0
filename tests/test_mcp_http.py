"""Serving over Streamable HTTP (`agentool.mcp_http`): a real server on an ephemeral loopback port, called
with the official client, and the app driven in-process (ASGI calls naming each request's peer).

Sections, in order: serving; sessions are bounded (a flood of `initialize` cannot lock other clients
out: 10,001 on one keep-alive connection once opened the SDK's 10,000 and every new client got 503);
MCP's sessionless 2026-07-28 revision served beside the handshake era (no session slot taken, a flood
of either era cannot deny the other); stopping lets calls in flight finish up to `shutdown_timeout`
(SIGTERM once cut a 12 s call after uvicorn's fixed 5 s) and nothing is imported from the working
directory; many clients at once with a bearer token get their own answers (`make fuzz`: 50 x 200);
who a client is for the session limits (address, token name, a trusted proxy's word); and fair limits
on a real loopback server, the flooder on 127.0.0.1 and the other client on 127.0.0.2 (Linux routes
all of 127.0.0.0/8 to `lo`). The flood itself is in tests/test_serving_security.py.
"""

from __future__ import annotations

import pytest

from tests.agentools import ROOT

pytest.importorskip('mcp')
import logging
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncGenerator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from pydantic_ai import RunContext

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.cli import main
from agentool.core.injector import AgenToolInjector, use_injector
from agentool.core.registry import AgenToolRegistry, use_registry
from agentool.errors import ServingError, UnsafeServingError
from agentool.mcp import TOOL_LIST_TTL_MS, create_mcp_server
from agentool.mcp_http import TOKEN_ENV, HttpOptions, http_app, is_loopback, serve_http
from tests.http_serving import add, connected, http_client, served
from tests.mcp_asgi import (
    INITIALIZE,
    MODERN,
    Held,
    busy_session,
    holding,
    list_tools,
    modern,
    open_session,
    running,
    send,
)

TOKEN = 'correct-horse-battery-staple'
ALLOWED = 'https://app.example.com'
EVIL = 'https://evil.example'
LINE = re.compile(r'^agentool mcp: serving at (http://127\.0\.0\.1:\d+/mcp) \((.*)\)$')


# --- serving ----------------------------------------------------------------------------------------


async def test_loopback_serves_without_a_token_and_announces_the_url() -> None:
    announced: list[str] = []
    async with served(HttpOptions(port=0), announced) as url:
        statuses: list[int] = []
        assert await add(url, None, statuses, 2, 3) == {'result': 5.0}
        assert set(statuses) <= {200, 202, 204}
    (line,) = announced
    match = LINE.match(line)
    assert match is not None, line
    assert match.groups() == (url, 'no authentication; requests up to 1048576 bytes')


async def test_the_server_stops_listening_when_cancelled() -> None:
    async with served(HttpOptions(port=0)) as url:
        port = int(url.rsplit(':', 1)[1].split('/')[0])
    with pytest.raises(ConnectionRefusedError), socket.create_connection(('127.0.0.1', port), timeout=1):
        pass


# --- authentication ---------------------------------------------------------------------------------


async def test_with_a_token_authorised_calls_succeed_and_others_get_401() -> None:
    announced: list[str] = []
    async with served(HttpOptions(port=0, token=TOKEN), announced) as url:
        ok: list[int] = []
        assert await add(url, TOKEN, ok, 1, 2) == {'result': 3.0}
        assert 401 not in ok
        for token in (None, 'wrong', TOKEN + 'x', TOKEN[:-1]):
            refused: list[int] = []
            with pytest.RaisesGroup(MCPError, flatten_subgroups=True, allow_unwrapped=True):
                await add(url, token, refused, 1, 2)
            assert refused, token
            assert set(refused) == {401}, token
        async with httpx2.AsyncClient() as raw:
            response = await raw.post(url, json={}, headers={'Authorization': 'Basic dXNlcjpwdw=='})
        assert response.status_code == 401
        assert response.headers['www-authenticate'].startswith('Bearer error="invalid_token"')
    assert 'bearer token required' in announced[0]


async def test_the_token_comes_from_a_file_or_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file = tmp_path / 'token'
    token_file.write_text(f'  {TOKEN}\n', encoding='utf-8')
    monkeypatch.setenv(TOKEN_ENV, 'from-the-environment')
    assert HttpOptions(token_file=token_file).resolve_token() == TOKEN
    assert HttpOptions(token='given', token_file=token_file).resolve_token() == 'given'
    assert HttpOptions().resolve_token() == 'from-the-environment'
    async with served(HttpOptions(port=0)) as url:  # the environment's token is required
        statuses: list[int] = []
        assert await add(url, 'from-the-environment', statuses, 1, 1) == {'result': 2.0}
    monkeypatch.delenv(TOKEN_ENV)
    assert HttpOptions().resolve_token() is None


@pytest.mark.parametrize('content', ['', ' \n'])
def test_an_empty_token_is_refused(tmp_path: Path, content: str) -> None:
    token_file = tmp_path / 'token'
    token_file.write_text(content, encoding='utf-8')
    with pytest.raises(ServingError, match=f"the bearer token from token file '{token_file}' is empty"):
        HttpOptions(token_file=token_file).resolve_token()
    with pytest.raises(ServingError, match='the bearer token from token is empty'):
        HttpOptions(token=content).resolve_token()


def test_an_unreadable_token_file_is_a_typed_error(tmp_path: Path) -> None:
    missing = tmp_path / 'missing'
    with pytest.raises(ServingError, match=f"cannot read the token file '{missing}'") as raised:
        HttpOptions(token_file=missing).resolve_token()
    assert raised.value.details == {'host': '127.0.0.1', 'port': 8000, 'token_file': str(missing)}


def test_invalid_options_are_refused_together() -> None:
    with pytest.raises(ServingError) as raised:
        HttpOptions(port=70000, path='mcp', max_request_bytes=0)
    assert raised.value.details['problems'] == [
        'port must be an int from 0 to 65535; got 70000',
        "path must be a URL path starting with '/'; got 'mcp'",
        'max_request_bytes must be a positive int; got 0',
    ]


@pytest.mark.parametrize('limit', ['a', True, 1.5, -1])
def test_a_request_limit_that_is_not_a_positive_int_is_refused(limit: Any) -> None:
    with pytest.raises(ServingError, match='max_request_bytes must be a positive int') as raised:
        HttpOptions(max_request_bytes=limit)
    assert raised.value.details['problems'] == [f'max_request_bytes must be a positive int; got {limit!r}']
    with pytest.raises(ServingError, match='port must be an int'):
        HttpOptions(port=str(8000))  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ('options', 'option'),
    [
        ({'host': None}, 'host'),
        ({'host': 123}, 'host'),
        ({'token': 123}, 'token'),
        ({'token_file': 123}, 'token_file'),
        ({'allow_unauthenticated': 'no'}, 'allow_unauthenticated'),
        ({'allow_unauthenticated': 1}, 'allow_unauthenticated'),
        ({'path': '/m cp'}, 'path'),
        ({'max_sessions': 0}, 'max_sessions'),
        ({'max_sessions_per_client': True}, 'max_sessions_per_client'),
        ({'session_idle_timeout': float('nan')}, 'session_idle_timeout'),
        ({'session_idle_timeout': -1}, 'session_idle_timeout'),
        ({'shutdown_timeout': float('inf')}, 'shutdown_timeout'),
        ({'allowed_origins': 'https://a.example'}, 'allowed_origins'),
        ({'allowed_origins': ('a.example',)}, 'allowed_origins'),
        ({'allowed_origins': ('https://a.example\r\nX: y',)}, 'allowed_origins'),
        ({'allowed_origins': ('https://a.example/app',)}, 'allowed_origins'),  # never an Origin: refuses all
        ({'allowed_origins': ('https://a.example?x=1',)}, 'allowed_origins'),
        ({'allowed_origins': ('https://user@a.example',)}, 'allowed_origins'),
        ({'allowed_origins': ('https://',)}, 'allowed_origins'),
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
def test_every_option_is_checked_at_construction(options: dict[str, Any], option: str) -> None:
    with pytest.raises(ServingError, match=rf'options: {option}\b.* (must|give|needs)') as raised:
        HttpOptions(**options)
    assert raised.value.details['options'] == [option]
    assert not {'same', 'abc'} & set(str(raised.value).replace("'", ' ').split())  # no token is quoted


@pytest.mark.parametrize(
    'origin',
    [
        'https://app.example.com/path',
        'https://app.example.com?x=1',
        'https://user:pass@app.example.com',
        'app.example.com',
        'https://app.example.com#top',
        'https://app.example.com\n',
    ],
)
def test_an_allowed_origin_no_browser_sends_is_refused_naming_it(origin: str) -> None:
    with pytest.raises(ServingError, match='nothing after: no browser sends a path') as raised:
        HttpOptions(allowed_origins=['https://ok.example.com', origin])
    assert raised.value.details['options'] == ['allowed_origins']
    assert repr(origin) in str(raised.value)
    with pytest.raises(ServingError, match='allowed_origins must be a tuple'):
        HttpOptions(allowed_origins='https://ok.example.com')  # type: ignore[arg-type]  # a lone string
    assert HttpOptions(allowed_origins=['HTTPS://OK.example.com:8443/']).allowed_origins == (
        'https://ok.example.com:8443',
    )
    assert HttpOptions(allowed_origins=[ALLOWED + '/']).allowed_origins == (ALLOWED,)


def test_a_truthy_string_never_allows_an_open_public_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ServingError, match="allow_unauthenticated must be True or False; got 'no'"):
        HttpOptions(host='0.0.0.0', allow_unauthenticated='no')  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize('host', ['::1', '[::1]'])
def test_an_ipv6_host_is_bracketed_once_in_the_url(host: str) -> None:
    options = HttpOptions(host=host)
    assert options.host == '::1'
    assert options.url() == 'http://[::1]:8000/mcp'


async def test_a_bracketed_ipv6_host_is_listened_on() -> None:
    if not socket.has_ipv6:
        pytest.skip('no IPv6')
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(('::1', 0))
    except OSError:
        pytest.skip('no IPv6 loopback')
    lines: list[str] = []
    url = ''
    async with anyio.create_task_group() as group:
        url = await group.start(
            lambda task_status: serve_http(  # pyright: ignore[reportUnknownLambdaType]
                create_mcp_server(), HttpOptions(host='[::1]', port=0), announce=lines.append, task_status=task_status
            )
        )
        group.cancel_scope.cancel()
    assert url.startswith('http://[::1]:')
    assert lines[0].startswith('agentool mcp: serving at http://[::1]:')


# --- what is reachable from elsewhere ---------------------------------------------------------------


LOOPBACK = ['127.0.0.1', '127.0.0.2', '::1', '[::1]', 'localhost', 'LOCALHOST']


@pytest.mark.parametrize('host', [*LOOPBACK, '0.0.0.0', '::', '192.168.1.10', 'example.com'])
def test_is_loopback(host: str) -> None:
    assert is_loopback(host) is (host in LOOPBACK)


def test_a_public_address_without_a_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    server = create_mcp_server()
    with pytest.raises(UnsafeServingError, match=r"without authentication on '0\.0\.0\.0'") as raised:
        http_app(server, HttpOptions(host='0.0.0.0', port=9000))
    assert raised.value.details == {'host': '0.0.0.0', 'port': 9000}
    assert isinstance(raised.value, ServingError)
    http_app(server, HttpOptions(host='0.0.0.0', token=TOKEN))  # with a token: fine
    http_app(server, HttpOptions(host='0.0.0.0', allow_unauthenticated=True))  # told explicitly: fine


async def test_a_port_in_use_is_a_typed_error() -> None:
    with socket.socket() as holder:
        holder.bind(('127.0.0.1', 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(ServingError, match=f'cannot listen on 127.0.0.1:{port}: Address already in use'):
            await serve_http(create_mcp_server(), HttpOptions(port=port))


# --- request size -----------------------------------------------------------------------------------


async def test_an_oversized_request_is_answered_413() -> None:
    async with served(HttpOptions(port=0, token=TOKEN, max_request_bytes=4096)) as url:
        statuses: list[int] = []
        assert await add(url, TOKEN, statuses, 1, 2) == {'result': 3.0}  # a normal call fits
        with pytest.RaisesGroup(MCPError, flatten_subgroups=True, allow_unwrapped=True):
            await add(url, TOKEN, statuses, 1, 2, padding='x' * 5000)
        assert statuses[-1] == 413
        async with httpx2.AsyncClient(headers={'Authorization': f'Bearer {TOKEN}'}) as raw:
            body = b'{' + b' ' * 5000 + b'}'
            response = await raw.post(url, content=body, headers={'content-type': 'application/json'})
        assert response.status_code == 413


# --- the command line -------------------------------------------------------------------------------


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, '-m', 'agentool', '--import', 'examples.calculator', 'mcp', *args]
    environment = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | {'PYTHONPATH': str(ROOT)} | (env or {})
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)


@pytest.mark.parametrize('stop', [signal.SIGINT, signal.SIGTERM])
async def test_cli_serves_over_http_with_a_token_file_until_a_signal(tmp_path: Path, stop: signal.Signals) -> None:
    token_file = tmp_path / 'token'
    token_file.write_text(TOKEN, encoding='utf-8')
    process = cli('--transport', 'streamable-http', '--port', '0', '--token-file', str(token_file))
    try:
        assert process.stderr is not None
        line = await anyio.to_thread.run_sync(process.stderr.readline)
        match = LINE.match(line.rstrip('\n'))
        assert match is not None, line
        assert match.group(2) == 'bearer token required; requests up to 1048576 bytes'
        statuses: list[int] = []
        assert await add(match.group(1), TOKEN, statuses, 20, 22) == {'result': 42.0}
        refused: list[int] = []
        with pytest.RaisesGroup(MCPError, flatten_subgroups=True, allow_unwrapped=True):
            await add(match.group(1), None, refused, 1, 2)
        assert refused
        assert set(refused) == {401}
    finally:
        process.send_signal(stop)
        out, err = await anyio.to_thread.run_sync(process.communicate)
    assert process.returncode == 0  # a graceful stop
    assert out == ''  # nothing on stdout
    assert err == ''  # the startup line aside (read above), nothing on stderr either


def test_cli_refuses_a_public_address_without_a_token() -> None:
    process = cli('--transport', 'streamable-http', '--host', '0.0.0.0', '--port', '0')
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert out == ''
    assert err.startswith("agentool: error: refusing to serve MCP without authentication on '0.0.0.0'")
    assert '--allow-unauthenticated' in err


async def test_serving_something_that_is_not_a_server_or_not_options_is_a_typed_error() -> None:
    with pytest.raises(ServingError, match='options must be an HttpOptions') as caught:
        http_app(create_mcp_server(), 'port=0')  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'options'
    with pytest.raises(ServingError, match='the server must be an MCP Server') as caught:
        http_app(create_mcp_server, HttpOptions())  # pyright: ignore[reportArgumentType]  # the function, not called
    assert caught.value.details['option'] == 'server'
    with pytest.raises(ServingError, match='options must be an HttpOptions'):
        await serve_http(create_mcp_server(), {'port': 0})  # pyright: ignore[reportArgumentType]


FLOODER = ('127.0.0.1', 40001)
OTHER = ('127.0.0.2', 40002)
THIRD = ('127.0.0.3', 40003)


@pytest.fixture
def held() -> Iterator[Held]:
    with holding() as gate:
        yield gate


async def test_a_client_whose_sessions_are_all_busy_gets_a_typed_429_and_others_are_served(held: Held) -> None:
    async with running(HttpOptions(max_sessions_per_client=2)) as app, anyio.create_task_group() as group:
        for _ in range(2):
            await busy_session(app, FLOODER, held, group)
        refused = await send(app, FLOODER, INITIALIZE)
        assert refused.status == 429
        assert refused.headers['retry-after'] == '1'
        error = refused.rpc()['error']
        assert error['data']['type'] == 'SessionLimitError'
        assert error['data']['details'] == {'option': 'max_sessions_per_client', 'limit': 2, 'open': 2}
        assert 'max_sessions_per_client=2' in error['message']
        assert len(refused.body) < 1000
        assert (await list_tools(app, OTHER, await open_session(app, OTHER))).status == 200
        assert app.state.mcp_sessions.refused == 1
        held.release.set()


async def test_at_the_server_cap_an_idle_session_makes_room_and_busy_ones_refuse_with_503(held: Held) -> None:
    options = HttpOptions(max_sessions=2, max_sessions_per_client=1)
    async with running(options) as app, anyio.create_task_group() as group:
        idle = await open_session(app, OTHER)
        await busy_session(app, FLOODER, held, group)
        fresh = await open_session(app, THIRD)  # the idle session was closed for it
        assert (await list_tools(app, OTHER, idle)).status == 404
        assert (await list_tools(app, THIRD, fresh)).status == 200
        await busy_session(app, THIRD, held, group)  # `fresh` is busy now too
        refused = await send(app, ('127.0.0.4', 40004), INITIALIZE)
        assert refused.status == 503
        assert refused.rpc()['error']['data']['details'] == {'option': 'max_sessions', 'limit': 2, 'open': 2}
        held.release.set()


async def test_a_deleted_session_frees_its_place(held: Held) -> None:
    async with running(HttpOptions(max_sessions_per_client=1)) as app:
        session = await open_session(app, FLOODER)
        assert app.state.mcp_sessions.open == 1
        assert (await send(app, FLOODER, method='DELETE', session=session)).status == 200
        assert app.state.mcp_sessions.open == 0
        assert app.state.mcp_sessions.evicted == 0


async def test_an_idle_session_expires(held: Held) -> None:
    async with running(HttpOptions(session_idle_timeout=0.05)) as app:
        session = await open_session(app, FLOODER)
        await anyio.sleep(0.5)  # the SDK's idle timer: time has to pass (any request would restart it)
        answer = await list_tools(app, FLOODER, session)
        assert answer.status == 404
        assert app.state.mcp_sessions.open == 0  # the 404 told the table too


async def test_an_unauthenticated_initialize_never_takes_a_place(held: Held) -> None:
    async with running(HttpOptions(token='s3cret', max_sessions_per_client=1)) as app:
        auth = {'authorization': 'Bearer s3cret'}
        first = await send(app, FLOODER, INITIALIZE, headers=auth)
        assert first.status == 200
        for _ in range(3):
            assert (await send(app, FLOODER, INITIALIZE)).status == 401
        assert app.state.mcp_sessions.evicted == 0
        assert app.state.mcp_sessions.open == 1


@pytest.mark.parametrize('scheme', ['bearer', 'BEARER', 'BeArEr'])
async def test_a_bearer_scheme_in_any_case_is_counted_like_any_session(held: Held, scheme: str) -> None:
    # The SDK accepts the scheme in any case; the guard must admit (and count) the same requests,
    # or a client writing `bearer` would open sessions past its limit and lock the others out.
    async with running(HttpOptions(token='s3cret', max_sessions=2, max_sessions_per_client=1)) as app:
        auth = {'authorization': f'{scheme} s3cret'}
        for _ in range(4):
            assert (await send(app, FLOODER, INITIALIZE, headers=auth)).status == 200
        assert app.state.mcp_sessions.open == 1  # its own idle session recycled each time
        assert (await send(app, OTHER, INITIALIZE, headers={'authorization': 'Bearer s3cret'})).status == 200
        assert (await send(app, FLOODER, INITIALIZE, headers={'authorization': f'{scheme}  s3cret'})).status == 401


@pytest.mark.parametrize(
    ('allowed', 'origin', 'status'),
    [
        ([ALLOWED + '/'], EVIL, 403),
        ([ALLOWED + '/'], ALLOWED, 200),
        ([ALLOWED + '/'], None, 200),  # no Origin: not a browser
        ([ALLOWED.upper()], ALLOWED, 200),  # written in capitals, it matches what browsers send
        (None, EVIL, 200),  # without allowed_origins, Origin is not checked off loopback
    ],
)
@pytest.mark.parametrize('sessionless', [False, True])
async def test_off_loopback_a_named_origin_list_is_enforced(
    held: Held, allowed: list[str] | None, origin: str | None, status: int, sessionless: bool
) -> None:
    origins: dict[str, Any] = {} if allowed is None else {'allowed_origins': allowed}
    options = HttpOptions(host='0.0.0.0', allow_unauthenticated=True, **origins)
    message, headers = modern('tools/list') if sessionless else (INITIALIZE, {})
    async with running(options) as app:
        answer = await send(app, THIRD, message, headers={**headers, **({'origin': origin} if origin else {})})
        assert answer.status == status
        if status == 403:
            assert answer.rpc()['error']['message'] == 'Origin not allowed'


async def test_with_a_token_an_authorised_flood_recycles_its_own_sessions(held: Held) -> None:
    async with running(HttpOptions(token='s3cret', max_sessions_per_client=1)) as app:
        auth = {'authorization': 'Bearer s3cret'}
        first = (await send(app, FLOODER, INITIALIZE, headers=auth)).headers['mcp-session-id']
        second = (await send(app, FLOODER, INITIALIZE, headers=auth)).headers['mcp-session-id']
        assert app.state.mcp_sessions.evicted == 1  # closed through the app, with the creator's credential
        gone = await send(app, FLOODER, {'jsonrpc': '2.0', 'id': 2, 'method': 'ping'}, session=first, headers=auth)
        kept = await send(app, FLOODER, {'jsonrpc': '2.0', 'id': 2, 'method': 'ping'}, session=second, headers=auth)
        assert (gone.status, kept.status) == (404, 200)


async def test_discover_list_and_call_are_served_without_a_session(held: Held) -> None:
    async with running(HttpOptions(max_sessions=2, max_sessions_per_client=1)) as app:
        for method in ('server/discover', 'tools/list'):
            message, headers = modern(method)
            answer = await send(app, THIRD, message, headers=headers)
            assert answer.status == 200, answer.body
            assert 'mcp-session-id' not in answer.headers
            result = answer.rpc()['result']
            # Both are fixed while the server runs and the same for every client: cacheable.
            assert (result['ttlMs'], result['cacheScope']) == (TOOL_LIST_TTL_MS, 'public')
            if method == 'server/discover':
                assert MODERN in result['supportedVersions']
        message, headers = modern('tools/call', {'name': 'holder_hold', 'arguments': {}})
        held.release.set()
        called = await send(app, THIRD, message, headers=headers)
        assert called.rpc()['result']['structuredContent'] == {'result': 'released'}
        table = app.state.mcp_sessions
        assert (table.open, table.evicted, table.refused) == (0, 0, 0)


async def test_a_full_server_still_answers_sessionless_calls_and_they_take_no_place(held: Held) -> None:
    async with running(HttpOptions(max_sessions=2, max_sessions_per_client=1)) as app, anyio.create_task_group() as g:
        await busy_session(app, FLOODER, held, g)
        await busy_session(app, OTHER, held, g)
        assert (await send(app, THIRD, INITIALIZE)).status == 503  # full: no session can open
        message, headers = modern('tools/list')
        for _ in range(20):
            assert (await send(app, THIRD, message, headers=headers)).status == 200
        table = app.state.mcp_sessions
        assert (table.open, table.evicted) == (2, 0)
        held.release.set()


async def test_a_sessionless_flood_never_evicts_an_idle_session(held: Held) -> None:
    async with running(HttpOptions(max_sessions=2, max_sessions_per_client=1)) as app:
        idle = await open_session(app, OTHER)
        await open_session(app, FLOODER)  # the server is full of idle sessions: each could be evicted
        message, headers = modern('tools/list')
        for _ in range(200):
            assert (await send(app, THIRD, message, headers=headers)).status == 200
        assert app.state.mcp_sessions.evicted == 0
        assert (await list_tools(app, OTHER, idle)).status == 200


async def test_sessionless_requests_need_the_token(held: Held) -> None:
    async with running(HttpOptions(token='s3cret')) as app:
        message, headers = modern('tools/list')
        for sent in ({}, {'authorization': 'Bearer wrong'}, {'authorization': 's3cret'}):
            refused = await send(app, THIRD, message, headers={**headers, **sent})
            assert refused.status == 401
            assert 'result' not in refused.rpc()
        ok = await send(app, THIRD, message, headers={**headers, 'authorization': 'Bearer s3cret'})
        assert ok.status == 200
        assert app.state.mcp_sessions.open == 0


async def test_sessionless_requests_are_size_limited(held: Held) -> None:
    async with running(HttpOptions(max_request_bytes=2000)) as app:
        message, headers = modern('tools/call', {'name': 'holder_hold', 'arguments': {'pad': 'x' * 4000}})
        assert (await send(app, THIRD, message, headers=headers)).status == 413


@pytest.mark.parametrize(
    ('sent', 'status'),
    [({'host': 'evil.example:8000'}, 421), ({'origin': 'http://evil.example'}, 403)],
)
async def test_sessionless_requests_are_host_and_origin_checked_on_loopback(
    held: Held, sent: dict[str, str], status: int
) -> None:
    async with running(HttpOptions()) as app:
        message, headers = modern('tools/list')
        assert (await send(app, THIRD, message, headers={**headers, **sent})).status == status


# --- both eras over loopback, each with the official client ------------------------------------------------


@pytest.mark.parametrize('mode', ['legacy', MODERN])
async def test_the_official_client_is_served_in_each_era(mode: str) -> None:
    options = HttpOptions(port=0, token='s3cret')
    async with served(options) as url, connected(url, mode=mode, token='s3cret') as client:
        assert (client.protocol_version == MODERN) == (mode == MODERN)
        listed = await client.list_tools()
        assert 'calculator_add' in [tool.name for tool in listed.tools]
        result = await client.call_tool('calculator_add', {'a': 2, 'b': 3})
        assert result.structured_content == {'result': 5.0}


async def test_sessionless_clients_leave_the_session_clients_their_places() -> None:
    options = HttpOptions(port=0, max_sessions=2, max_sessions_per_client=1)
    async with (
        served(options) as url,
        connected(url, source='127.0.0.2') as first,
        connected(url, source='127.0.0.3') as second,
    ):
        async with connected(url, mode=MODERN, source='127.0.0.4') as sessionless:
            for number in range(10):
                result = await sessionless.call_tool('calculator_add', {'a': number, 'b': 1})
                assert result.structured_content == {'result': number + 1.0}
        for client in (first, second):  # neither session was closed to make room
            result = await client.call_tool('calculator_add', {'a': 1, 'b': 1})
            assert result.structured_content == {'result': 2.0}


@dataclass
class Slow:
    inside: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)


class SlowInput(BaseOperationInput):
    operation: Literal['work']


async def work(ctx: RunContext[Slow]) -> str:
    ctx.deps.inside.set()
    await ctx.deps.release.wait()
    return 'finished'


@pytest.fixture
def slow() -> Iterator[Slow]:
    with use_registry(AgenToolRegistry()), use_injector(AgenToolInjector()) as injector:
        create_agentool('slow', SlowInput, RoutingConfig(operation_map={'work': 'work'}), [work], deps_type=Slow)
        deps = Slow()
        injector.provide(Slow, instance=deps)
        yield deps


@asynccontextmanager
async def serving(options: HttpOptions) -> AsyncGenerator[tuple[str, anyio.CancelScope]]:
    """Serve in this loop; yields the URL and the scope whose cancellation stops the server gracefully."""
    async with anyio.create_task_group() as group:
        url = await group.start(partial(serve_http, create_mcp_server(), options, announce=lambda line: None))
        yield url, group.cancel_scope


CALL = {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call', 'params': {'name': 'slow_work', 'arguments': {}}}
HEADERS = {'accept': 'application/json, text/event-stream'}


async def _call(url: str, outcome: dict[str, Any]) -> None:
    """A session and one call on one keep-alive connection; `outcome` gets the call's status and body."""
    try:
        async with httpx2.AsyncClient(headers=HEADERS, timeout=30) as http:
            opened = await http.post(url, json=INITIALIZE)
            session = {'mcp-session-id': opened.headers['mcp-session-id']}
            note = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}
            await http.post(url, json=note, headers=session)
            answer = await http.post(url, json=CALL, headers=session)
            outcome['status'], outcome['body'] = answer.status_code, answer.text
    except httpx2.HTTPError as error:  # what the client saw when its call was cut
        outcome['error'] = error


async def test_a_stop_lets_a_call_in_flight_finish(slow: Slow) -> None:
    outcome: dict[str, Any] = {}
    with anyio.fail_after(30):
        async with anyio.create_task_group() as clients, serving(HttpOptions(port=0)) as (url, stop):
            clients.start_soon(_call, url, outcome)
            await slow.inside.wait()
            stop.cancel()  # the server stops once its calls are done
            clients.start_soon(_release_soon, slow)
    assert outcome['status'] == 200
    assert '"structuredContent":{"result":"finished"}' in outcome['body']


async def _release_soon(slow: Slow) -> None:
    await anyio.sleep(0.3)  # well after the stop began
    slow.release.set()


async def test_a_call_past_the_shutdown_limit_is_cut_and_logged(slow: Slow, caplog: pytest.LogCaptureFixture) -> None:
    outcome: dict[str, Any] = {}
    caplog.set_level(logging.WARNING, logger='agentool.mcp')
    with anyio.fail_after(30):
        async with (
            anyio.create_task_group() as clients,
            serving(HttpOptions(port=0, shutdown_timeout=0.2)) as (url, stop),
        ):
            clients.start_soon(_call, url, outcome)
            await slow.inside.wait()
            stop.cancel()  # never released: cut after 0.2 s
    assert 'finished' not in outcome.get('body', '')
    assert 'the shutdown limit (shutdown_timeout) passed: cut a call still running' in caplog.text


def test_the_shutdown_limit_is_checked() -> None:
    assert HttpOptions().shutdown_timeout == 30.0
    assert HttpOptions(shutdown_timeout=2).shutdown_timeout == 2


@pytest.mark.parametrize('module', ['httptools', 'uvloop'])
async def test_serving_imports_nothing_from_the_working_directory(
    slow: Slow, module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An optional dependency uvicorn probes for, planted where the working directory is importable.
    (tmp_path / f'{module}.py').write_text("raise SystemExit('imported from the working directory')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    async with serving(HttpOptions(port=0)) as (url, stop):
        async with httpx2.AsyncClient() as http, Client(streamable_http_client(url, http_client=http)) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ['slow_work']
        stop.cancel()
    assert module not in sys.modules


HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
CLIENTS = 50 if HEAVY else 10
CALLS = 200 if HEAVY else 20


async def test_concurrent_clients_get_their_own_answers() -> None:
    outcomes: dict[str, int] = {'ok': 0}
    statuses: list[int] = []

    async def one_client(number: int) -> None:
        async with (
            http_client(TOKEN, statuses) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            for call in range(CALLS):
                a, b = number * 1_000_000 + call, call / 4
                result = await client.call_tool('calculator_add', {'a': a, 'b': b})
                if result.is_error:
                    outcome = f'error: {result.content}'
                elif result.structured_content != {'result': a + b}:
                    outcome = f'mixed up: {a} + {b} gave {result.structured_content}'
                else:
                    outcome = 'ok'
                outcomes[outcome] = outcomes.get(outcome, 0) + 1

    async with served(HttpOptions(port=0, token=TOKEN)) as url, anyio.create_task_group() as group:
        for number in range(CLIENTS):
            group.start_soon(one_client, number)
    assert outcomes == {'ok': CLIENTS * CALLS}
    assert set(statuses) <= {200, 202, 204}  # no 4xx or 5xx on any request


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
    ('flags', 'said'),
    [
        (['--trusted-proxy', 'nonsense'], 'invalid HTTP serving options: trusted_proxies'),
        (['--max-sessions', '4', '--max-sessions-per-client', '4'], 'invalid HTTP serving options: max_sessions_per'),
        (['--tokens-file', 'TOKENS'], 'line 1 of the tokens file'),
    ],
)
def test_the_cli_identity_flags_reach_the_options(
    flags: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokens_file = tmp_path / 'tokens'
    tokens_file.write_text('alice\n', encoding='utf-8')
    flags = [str(tokens_file) if flag == 'TOKENS' else flag for flag in flags]
    assert main(['mcp', '--transport', 'streamable-http', *flags]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert said in err


linux_loopback = pytest.mark.skipif(sys.platform != 'linux', reason='needs all of 127.0.0.0/8 on loopback (Linux)')

OPTIONS = HttpOptions(port=0, max_sessions=8, max_sessions_per_client=4)
ACCEPT = {'accept': 'application/json, text/event-stream', 'content-type': 'application/json'}


def _session_of(opened: httpx2.Response) -> dict[str, str]:
    return {'mcp-session-id': opened.headers['mcp-session-id'], 'mcp-protocol-version': LATEST_HANDSHAKE_VERSION}


def _flooder(source: str = '127.0.0.1') -> httpx2.AsyncClient:
    """A new connection from `source` (what each run of a `curl` loop is)."""
    return httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address=source))


async def _initialize(url: str, source: str = '127.0.0.1') -> httpx2.Response:
    async with _flooder(source) as http:
        return await http.post(url, json=INITIALIZE, headers=ACCEPT)


async def _add(url: str, source: str, session: dict[str, str]) -> int:
    """`calculator_add` called in `session` as `curl` would (no event stream held): the status."""
    params: dict[str, object] = {'name': 'calculator_add', 'arguments': {'a': 1, 'b': 2}}
    call = {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call', 'params': params}
    async with _flooder(source) as http:
        return (await http.post(url, json=call, headers={**ACCEPT, **session})).status_code


async def _hold_stream(url: str, stack: AsyncExitStack) -> int:
    """Open a session on a connection of its own and hold its event stream (`GET /mcp`) open on another.

    The `initialize` answer's status; the stream stays open until `stack` closes.
    """
    opened = await _initialize(url)
    if opened.status_code != 200:
        return opened.status_code
    session = _session_of(opened)
    async with _flooder() as http:
        note = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}
        assert (await http.post(url, json=note, headers={**ACCEPT, **session})).status_code == 202
    http = await stack.enter_async_context(_flooder())
    stream = await stack.enter_async_context(
        http.stream('GET', url, headers={'accept': 'text/event-stream', **session})
    )
    assert stream.status_code == 200  # the headers are in: the stream is held from here on
    return 200


@linux_loopback
async def test_an_initialize_loop_on_new_connections_never_evicts_another_hosts_session() -> None:
    # The other client holds no event stream open (as `curl` does not): its session is idle between
    # calls, so only the rules keep it.
    async with served(OPTIONS) as url:
        session = _session_of(await _initialize(url, '127.0.0.2'))
        assert await _add(url, '127.0.0.2', session) == 200
        statuses = [(await _initialize(url)).status_code for _ in range(24)]
        assert statuses == [200] * 24  # the flood recycled its own sessions, four at most
        assert await _add(url, '127.0.0.2', session) == 200  # a 404 here is the eviction the finding saw
        async with connected(url, source='127.0.0.2') as official:  # and a new session opens at once
            assert (await official.call_tool('calculator_add', {'a': 2, 'b': 3})).structured_content == {'result': 5.0}


@linux_loopback
async def test_held_event_streams_hit_their_own_hosts_limit_and_another_host_is_served() -> None:
    async with served(OPTIONS) as url, AsyncExitStack() as streams:
        statuses = [await _hold_stream(url, streams) for _ in range(8)]
        assert statuses == [200] * 4 + [429] * 4  # its own limit, long before the server's
        async with connected(url, source='127.0.0.2') as other:
            result = await other.call_tool('calculator_add', {'a': 1, 'b': 2})
            assert result.structured_content == {'result': 3.0}


@linux_loopback
async def test_a_flood_from_a_host_under_its_limit_leaves_the_server_room_for_another() -> None:
    # Two hosts at their limit fill the server; a third host still gets in, at the cost of the
    # idlest session of a host holding more than it does, never by a refusal.
    options = HttpOptions(port=0, max_sessions=4, max_sessions_per_client=2)
    async with served(options) as url, AsyncExitStack() as streams:
        assert await _hold_stream(url, streams) == 200
        for _ in range(3):
            assert (await _initialize(url)).status_code == 200  # one idle session of 127.0.0.1, recycled
        async with connected(url, source='127.0.0.2') as second, connected(url, source='127.0.0.2') as third:
            for client in (second, third):
                result = await client.call_tool('calculator_add', {'a': 1, 'b': 1})
                assert result.structured_content == {'result': 2.0}
            async with connected(url, source='127.0.0.3') as newcomer:
                result = await newcomer.call_tool('calculator_add', {'a': 2, 'b': 2})
                assert result.structured_content == {'result': 4.0}


@pytest.mark.parametrize(
    ('options', 'share'),
    [
        ({'max_sessions': 1}, 1),
        ({'max_sessions': 2}, 1),
        ({'max_sessions': 9}, 4),
        ({'max_sessions': 64}, 32),
        ({'max_sessions': 1000}, 32),
        ({'max_sessions': 1, 'max_sessions_per_client': 1}, 1),  # one session server: one client at a time
    ],
)
def test_a_clients_default_share_stays_below_a_small_server_cap(options: dict[str, Any], share: int) -> None:
    assert HttpOptions(**options).max_sessions_per_client == share
    assert HttpOptions(**options).max_sessions == options['max_sessions']


@linux_loopback
def test_a_client_share_as_large_as_the_server_cap_is_refused() -> None:
    with pytest.raises(ServingError, match=r'max_sessions_per_client \(4\) must be below max_sessions \(4\)'):
        HttpOptions(max_sessions=4, max_sessions_per_client=4)
