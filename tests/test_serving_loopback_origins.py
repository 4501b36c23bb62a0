"""A web page cannot reach a loopback server, however loopback is spelled.

Each spelling is served for real on an ephemeral port; a client sending another site's `Host` or
`Origin` (what a page that rebinds its DNS name to 127.0.0.1 sends) is refused, and the tool that
writes is never run. Then the same server answers a client that names it properly.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from functools import partial
from typing import Literal

import anyio
import pytest

pytest.importorskip('mcp')

import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.mcp import create_mcp_server
from agentool.mcp_http import HttpOptions, serve_http

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
async def served(options: HttpOptions) -> AsyncGenerator[str]:
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
    async with served(HttpOptions(host=host, port=0)) as url:
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
    async with served(HttpOptions(port=0, token=token)) as url:
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
    async with served(HttpOptions(port=0)) as url, httpx2.AsyncClient() as http:
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
            assert body['jsonrpc'] == '2.0'
            assert body['id'] is None
            assert named in body['error']['message']
            assert body['error']['data'] == {'status': status}


async def test_a_401_for_a_missing_or_wrong_token_is_a_json_rpc_error_keeping_www_authenticate() -> None:
    async with served(HttpOptions(port=0, token='the-token')) as url, httpx2.AsyncClient() as http:
        initialize = {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {}}
        for sent in ({}, {'Authorization': 'Bearer not-the-token'}, {'Authorization': 'Basic the-token'}):
            headers = {'Accept': 'application/json, text/event-stream', **sent}
            response = await http.post(url, json=initialize, headers=headers)
            assert response.status_code == 401, sent
            assert response.headers['content-type'] == 'application/json'
            assert response.headers['www-authenticate'].startswith('Bearer'), sent
            body = response.json()
            assert body['jsonrpc'] == '2.0'
            assert body['id'] is None
            assert body['error']['data'] == {'status': 401, 'error': 'invalid_token'}
            assert 'the-token' not in response.text
