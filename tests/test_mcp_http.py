"""Serving over Streamable HTTP: a real server on an ephemeral loopback port, called with the official client."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip('mcp')

import httpx2
from mcp import MCPError

from agentool.errors import ServingError, UnsafeServingError
from agentool.mcp import create_mcp_server
from agentool.mcp_http import TOKEN_ENV, HttpOptions, http_app, is_loopback, serve_http
from tests.http_serving import add, served

ROOT = Path(__file__).resolve().parents[1]
TOKEN = 'correct-horse-battery-staple'
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
    ],
)
def test_every_option_is_checked_at_construction(options: dict[str, Any], option: str) -> None:
    with pytest.raises(ServingError, match=f'{option} must') as raised:
        HttpOptions(**options)
    assert raised.value.details['options'] == [option]


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


@pytest.mark.parametrize(
    ('host', 'loopback'),
    [
        ('127.0.0.1', True),
        ('127.0.0.2', True),
        ('::1', True),
        ('[::1]', True),
        ('localhost', True),
        ('LOCALHOST', True),
        ('0.0.0.0', False),
        ('::', False),
        ('192.168.1.10', False),
        ('example.com', False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


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
            response = await raw.post(
                url, content=b'{' + b' ' * 5000 + b'}', headers={'content-type': 'application/json'}
            )
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
