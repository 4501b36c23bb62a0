"""MCP's sessionless 2026-07-28 revision, served first-class beside the handshake era.

A 2026-07-28 request is a self-contained POST (no `initialize`, no `Mcp-Session-Id`). It passes
the same token, Host/Origin and size checks as any other, takes no session slot, and a flood of
either era cannot deny the other. Driven in-process (ASGI) for the counts, and over loopback with
the official client in each era.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

pytest.importorskip('mcp')

from agentool.mcp import TOOL_LIST_TTL_MS
from agentool.mcp_http import HttpOptions
from tests.http_serving import connected, served
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

FLOODER, OTHER, THIRD = ('127.0.0.1', 40001), ('127.0.0.2', 40002), ('127.0.0.3', 40003)


@pytest.fixture
def held() -> Iterator[Held]:
    with holding() as gate:
        yield gate


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


async def test_off_loopback_allowed_origins_apply_to_sessionless_requests(held: Held) -> None:
    options = HttpOptions(host='0.0.0.0', allow_unauthenticated=True, allowed_origins=['https://app.example'])
    async with running(options) as app:
        message, headers = modern('tools/list')
        evil = await send(app, THIRD, message, headers={**headers, 'origin': 'https://evil.example'})
        assert evil.status == 403
        good = await send(app, THIRD, message, headers={**headers, 'origin': 'https://app.example'})
        assert good.status == 200


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
