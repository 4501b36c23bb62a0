"""What a served agentool guards against: token files, web pages, a client's text in the log, abuse.

Token files are read with a size limit (`--token-file /dev/zero` grew to 3.2 GB), a BOM stripped, a
token no client could send in a header refused at start. A web page cannot reach a loopback server
however loopback is spelled (each spelling served for real; another site's `Host` or `Origin` is
refused and the writing tool never runs). What the server logs from a client is escaped and bounded
(a tool exception echoing `ESC]0;...BEL` once retitled the operator's window). Under abuse, heavier
with `make fuzz` (`AGENTOOL_FUZZ=1`): session floods, concurrent writes to shared deps through every
surface at once, hostile token files and terminal escapes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentool.errors import ServingError
from agentool.mcp_http import MAX_TOKEN_FILE_BYTES, TOKEN_ENV, HttpOptions
from tests.agentools import ROOT

pytest.importorskip('mcp')
import asyncio
import json
import logging
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from functools import partial
from typing import Literal

import anyio
import httpx2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.cli import main
from agentool.core.injector import AgenToolInjector, use_injector
from agentool.core.registry import AgenToolRegistry, use_registry
from agentool.mcp import create_mcp_server
from agentool.mcp_http import serve_http
from tests.http_serving import connected, served
from tests.mcp_asgi import INITIALIZE, list_tools, open_session, running, send
from tests.test_shared_deps_concurrency import SURFACES, create_counter, surfaces


def test_a_bom_saved_by_an_editor_is_not_part_of_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / 'token'
    token_file.write_bytes('\ufeffs3cret\r\n'.encode())
    assert HttpOptions(token_file=token_file).resolve_token() == 's3cret'


@pytest.mark.skipif(not os.path.exists('/dev/zero'), reason='needs /dev/zero')
def test_an_endless_token_file_is_refused_after_reading_the_limit() -> None:
    with pytest.raises(ServingError, match=f'is over {MAX_TOKEN_FILE_BYTES} bytes') as raised:
        HttpOptions(token_file='/dev/zero').resolve_token()
    assert raised.value.details['reason'] == 'token file too large'


def test_a_token_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / 'token'
    token_file.write_text('x' * (MAX_TOKEN_FILE_BYTES + 1))
    with pytest.raises(ServingError, match='it must hold just the token'):
        HttpOptions(token_file=token_file).resolve_token()
    token_file.write_text('x' * MAX_TOKEN_FILE_BYTES)
    assert HttpOptions(token_file=token_file).resolve_token() == 'x' * MAX_TOKEN_FILE_BYTES


def test_a_token_file_that_is_not_text_is_a_typed_error(tmp_path: Path) -> None:
    token_file = tmp_path / 'token'
    token_file.write_bytes(b'\xff\xfe\x00bad')
    with pytest.raises(ServingError, match='not UTF-8 text'):
        HttpOptions(token_file=token_file).resolve_token()


def test_a_directory_as_token_file_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ServingError, match='cannot read the token file'):
        HttpOptions(token_file=tmp_path).resolve_token()


@pytest.mark.parametrize('token', ['ab\x00cd', 'ab\ncd', 'ab\rcd', 'ab\x1b[31mcd', 'ab\tcd', 'ab\u2028cd'])
def test_a_token_no_client_can_send_is_refused_at_start(token: str, tmp_path: Path) -> None:
    token_file = tmp_path / 'token'
    token_file.write_text(token, encoding='utf-8')
    for options in (HttpOptions(token=token), HttpOptions(token_file=token_file)):
        with pytest.raises(ServingError, match='no client can send') as raised:
            options.resolve_token()
        assert token not in str(raised.value)  # the secret is never echoed


def test_a_token_from_the_environment_is_checked_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, 'ab\x1bcd')  # (an environment cannot hold a NUL)
    with pytest.raises(ServingError, match=f'the bearer token from \\${TOKEN_ENV} holds a control'):
        HttpOptions().resolve_token()


def test_a_token_with_an_inner_space_or_non_ascii_letters_is_kept(tmp_path: Path) -> None:
    assert HttpOptions(token='pass phrase').resolve_token() == 'pass phrase'
    assert HttpOptions(token='clé').resolve_token() == 'clé'


WRITTEN: list[str] = []


class NoteInput(BaseOperationInput):
    operation: Literal['write']
    text: str


async def write(text: str) -> str:
    WRITTEN.append(text)
    return 'written'


def _ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(('::1', 0))
    except OSError:
        return False
    return True


SPELLINGS = [
    '127.0.0.1',
    '127.0.0.2',
    'localhost',
    'LOCALHOST',
    pytest.param('::1', marks=pytest.mark.skipif(not _ipv6(), reason='no IPv6 loopback')),
    pytest.param('0:0:0:0:0:0:0:1', marks=pytest.mark.skipif(not _ipv6(), reason='no IPv6 loopback')),
]


@asynccontextmanager
async def served_notes(options: HttpOptions) -> AsyncGenerator[str]:
    create_agentool('notes', NoteInput, RoutingConfig(operation_map={'write': 'write'}), [write])
    server = create_mcp_server()
    async with anyio.create_task_group() as group:
        url = await group.start(partial(serve_http, server, options, announce=lambda _: None))
        yield url
        group.cancel_scope.cancel()


async def _write(url: str, headers: dict[str, bytes], statuses: list[int]) -> None:
    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    http = httpx2.AsyncClient(headers={k.encode(): v for k, v in headers.items()}, event_hooks={'response': [record]})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        await client.call_tool('notes_write', {'text': 'hello'})


@pytest.mark.parametrize('host', SPELLINGS)
async def test_another_sites_host_or_origin_is_refused_on_every_loopback_spelling(host: str) -> None:
    WRITTEN.clear()
    async with served_notes(HttpOptions(host=host, port=0)) as url:
        port = url.rsplit(':', 1)[1].split('/')[0]
        cases: tuple[tuple[dict[str, bytes], int], ...] = (
            ({'Host': f'attacker.example:{port}'.encode()}, 421),
            ({'Host': b'attacker.example'}, 421),
            ({'Origin': f'http://attacker.example:{port}'.encode()}, 403),
            ({'Origin': b'http://attacker.example'}, 403),
        )
        for headers, status in cases:
            statuses: list[int] = []
            with pytest.RaisesGroup(MCPError, flatten_subgroups=True, allow_unwrapped=True):
                await _write(url, headers, statuses)
            assert statuses, headers
            assert set(statuses) == {status}, headers
        assert WRITTEN == []
        statuses = []
        await _write(url, {}, statuses)  # the server itself works: a client naming it is served
        assert WRITTEN == ['hello']
        assert set(statuses) <= {200, 202, 204}


async def test_a_non_ascii_token_works_and_others_get_401() -> None:
    token = 'clé-secrète-日本'
    WRITTEN.clear()
    async with served_notes(HttpOptions(port=0, token=token)) as url:
        statuses: list[int] = []
        await _write(url, {'Authorization': f'Bearer {token}'.encode()}, statuses)  # UTF-8 bytes
        assert WRITTEN == ['hello']
        for wrong in ('clé-secrète', 'cle-secrete-日本', token.encode().decode('latin-1').encode()):
            refused: list[int] = []
            with pytest.RaisesGroup(MCPError, flatten_subgroups=True, allow_unwrapped=True):
                sent = wrong if isinstance(wrong, bytes) else wrong.encode()
                await _write(url, {'Authorization': b'Bearer ' + sent}, refused)
            assert set(refused) == {401}, wrong
    assert WRITTEN == ['hello']


async def test_every_refusal_before_the_protocol_is_a_json_rpc_error() -> None:
    """The SDK's own refusals (Host 421, Origin 403, Content-Type 400) have the guard's JSON shape."""
    async with served_notes(HttpOptions(port=0)) as url, httpx2.AsyncClient() as http:
        port = url.rsplit(':', 1)[1].split('/')[0]
        initialize = {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {}}
        accept = {'Accept': 'application/json, text/event-stream'}
        cases = (
            ({**accept, 'Host': f'attacker.example:{port}'}, 421, 'Host'),
            ({**accept, 'Origin': 'http://attacker.example'}, 403, 'Origin'),
            ({**accept, 'Content-Type': 'text/plain'}, 400, 'Content-Type'),
        )
        for headers, status, named in cases:
            content = json.dumps(initialize).encode()
            response = await http.post(url, content=content, headers={'Content-Type': 'application/json', **headers})
            assert response.status_code == status, headers
            assert response.headers['content-type'] == 'application/json'
            body = response.json()
            assert (body['jsonrpc'], body['id']) == ('2.0', None)
            assert named in body['error']['message']
            assert body['error']['data'] == {'status': status}


async def test_a_401_for_a_missing_or_wrong_token_is_a_json_rpc_error_keeping_www_authenticate() -> None:
    async with served_notes(HttpOptions(port=0, token='the-token')) as url, httpx2.AsyncClient() as http:
        initialize = {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {}}
        for sent in ({}, {'Authorization': 'Bearer not-the-token'}, {'Authorization': 'Basic the-token'}):
            headers = {'Accept': 'application/json, text/event-stream', **sent}
            response = await http.post(url, json=initialize, headers=headers)
            assert response.status_code == 401, sent
            assert response.headers['content-type'] == 'application/json'
            assert response.headers['www-authenticate'].startswith('Bearer'), sent
            body = response.json()
            assert (body['jsonrpc'], body['id']) == ('2.0', None)
            assert body['error']['data'] == {'status': 401, 'error': 'invalid_token'}
            assert 'the-token' not in response.text


HOSTILE = '\x1b]0;pwned\x07\x1b[2J\x9b2J\r\nFAKE LOG LINE'
SHOUTY = 'from tests.test_serving_security import create_shout\n\ncreate_shout()\n'


def _unsafe(text: str) -> list[str]:
    """The control characters in `text` a terminal would act on (line breaks between records aside)."""
    return sorted({c for c in text if (ord(c) < 0x20 and c != '\n') or 0x7F <= ord(c) <= 0x9F})


async def test_a_tool_exception_echoing_escapes_reaches_stderr_escaped_and_bounded(tmp_path: Path) -> None:
    (tmp_path / 'shouty.py').write_text(SHOUTY, encoding='utf-8')
    environment = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    environment['PYTHONPATH'] = os.pathsep.join([str(ROOT), str(tmp_path)])
    command = [sys.executable, '-m', 'agentool', '--import', 'shouty', 'mcp', '--transport', 'streamable-http']
    process = subprocess.Popen(  # noqa: ASYNC220  # started once, read from a thread below
        [*command, '--port', '0'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment
    )
    try:
        assert process.stderr is not None
        line = (await anyio.to_thread.run_sync(process.stderr.readline)).decode()
        url = line.split('serving at ', 1)[1].split(' ', 1)[0]
        async with connected(url) as client:
            result = await client.call_tool('shout_shout', {'text': HOSTILE + 'x' * 100_000})
            assert result.is_error
    finally:
        process.send_signal(signal.SIGINT)
        _, raw = await anyio.to_thread.run_sync(process.communicate)
    err = raw.decode('utf-8')
    assert 'RuntimeError' in err  # logged, with its traceback
    assert _unsafe(err) == []
    assert '\\x1b]0;pwned\\x07\\x1b[2J\\x9b2J\\r\\nFAKE LOG LINE' in err  # shown, as escapes
    assert len(err) < 60_000  # the 100,000 characters sent, cut short


async def test_a_hostile_host_header_is_logged_escaped(caplog: pytest.LogCaptureFixture) -> None:
    # The SDK logs the Host header it refuses; a byte such as 0x9b (a C1 control: CSI) is valid in
    # an HTTP header, and would reach the terminal as it came.
    async with served(HttpOptions(port=0)) as url:
        port = int(url.rsplit(':', 1)[1].split('/')[0])
        body = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}).encode()
        request = (
            b'POST /mcp HTTP/1.1\r\nHost: evil\x9b2J.example\r\ncontent-type: application/json\r\n'
            b'accept: application/json, text/event-stream\r\nconnection: close\r\n'
            b'content-length: ' + str(len(body)).encode() + b'\r\n\r\n' + body
        )

        def exchange() -> bytes:
            with socket.create_connection(('127.0.0.1', port)) as connection:
                connection.sendall(request)
                return b''.join(iter(lambda: connection.recv(65536), b''))

        with caplog.at_level(logging.WARNING):
            answer = await anyio.to_thread.run_sync(exchange)
    assert answer.startswith(b'HTTP/1.1 421')
    logged = [record.getMessage() for record in caplog.records if 'evil' in record.getMessage()]
    assert logged, caplog.text
    assert all(_unsafe(message) == [] and '\\x9b2J' in message for message in logged)


HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
FLOOD = 10_000 if HEAVY else 1_000
"""`initialize` requests on one connection (the finding sent 10,001)."""
EXAMPLES = 300 if HEAVY else 25
ROUNDS = 2 if HEAVY else 1
CALLS = 100 if HEAVY else 20
"""Calls per surface, all surfaces at once."""


# --- session floods ---------------------------------------------------------------------------------


async def test_an_initialize_flood_leaves_another_client_served(injector: AgenToolInjector) -> None:
    create_counter()
    async with running(HttpOptions()) as app:
        statuses: dict[int, int] = {}
        for _ in range(FLOOD):
            status = (await send(app, ('127.0.0.1', 40001), INITIALIZE)).status
            statuses[status] = statuses.get(status, 0) + 1
        table = app.state.mcp_sessions
        assert statuses == {200: FLOOD}  # each new session recycled one of the flooder's own
        assert table.open == HttpOptions().max_sessions_per_client  # memory bounded by the limit
        assert table.evicted == FLOOD - table.open
        other = ('127.0.0.2', 40002)
        listed = await list_tools(app, other, await open_session(app, other))
        assert listed.status == 200
        assert 'counter_bump' in [tool['name'] for tool in listed.rpc()['result']['tools']]


async def test_a_flood_from_many_connections_of_one_address_is_one_client(injector: AgenToolInjector) -> None:
    create_counter()
    options = HttpOptions(max_sessions=50, max_sessions_per_client=5)
    async with running(options) as app:
        for number in range(FLOOD // 4):
            assert (await send(app, ('127.0.0.1', 20000 + number % 97), INITIALIZE)).status == 200
        assert app.state.mcp_sessions.open == 5  # each new connection recycled the address's own sessions
        other = ('127.0.0.2', 40002)
        assert (await list_tools(app, other, await open_session(app, other))).status == 200


# --- concurrent writes to shared deps, every surface at once -------------------------------------------


async def test_every_surface_at_once_keeps_every_write() -> None:
    for _ in range(ROUNDS):
        for operation in ('bump', 'abump'):
            with use_registry(AgenToolRegistry()), use_injector(AgenToolInjector()) as injector:
                starts = surfaces(injector, operation, CALLS)
                await asyncio.gather(*(starts[surface]() for surface in SURFACES))
                assert await injector.call('counter', '{"operation": "read"}') == CALLS * len(SURFACES)


# --- token files ----------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=200) | st.text(max_size=100).map(str.encode))
def test_any_token_file_gives_a_sendable_token_or_a_typed_error(tmp_path: Path, content: bytes) -> None:
    token_file = tmp_path / 'token'
    token_file.write_bytes(content)
    problems: list[ServingError] = []
    try:
        token = HttpOptions(token_file=token_file).resolve_token()
    except ServingError as error:
        problems.append(error)
        token = None
    if problems:
        assert len(str(problems[0])) < 1000
        return
    assert token is not None
    assert token == token.strip()
    assert not token.startswith('\ufeff')
    assert all(char.isprintable() for char in token)  # a header can carry it


# --- terminal escapes -----------------------------------------------------------------------------------


class ShoutInput(BaseOperationInput):
    operation: str = 'shout'
    text: str = ''


async def shout(text: str) -> str:
    raise RuntimeError(text)


def create_shout() -> None:
    create_agentool('shout', ShoutInput, RoutingConfig(operation_map={'shout': 'shout'}), [shout])


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(codec='utf-8'), max_size=3000))
def test_a_tool_error_is_always_one_terminal_safe_line(capsys: pytest.CaptureFixture[str], text: str) -> None:
    with use_registry(AgenToolRegistry()), use_injector(AgenToolInjector()):
        create_shout()
        capsys.readouterr()
        assert main(['call', 'shout', '{"operation": "shout", "text": ' + json.dumps(text) + '}']) == 1
    err = capsys.readouterr().err
    assert err.endswith('\n')
    assert err.count('\n') == 1
    assert not any(ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F for char in err[:-1])
    assert len(err) <= 2_000
