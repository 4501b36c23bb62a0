"""Fair session limits on a real loopback server: one host cannot evict or lock out another.

The findings (`--max-sessions 8 --max-sessions-per-client 4`): a `curl` loop of `initialize`
requests, each on a new connection, evicted another client's idle session (the per-client limit
was keyed on address and port); eight sessions each holding its event stream open locked every
other client out with 503. Here the flooder is 127.0.0.1 and the other client 127.0.0.2 (Linux
routes all of 127.0.0.0/8 to `lo`), served by the official client in the handshake era.
"""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack

import pytest

pytest.importorskip('mcp')

import httpx2
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from agentool.errors import ServingError
from agentool.mcp_http import HttpOptions
from tests.http_serving import connected, served
from tests.mcp_asgi import INITIALIZE

pytestmark = pytest.mark.skipif(sys.platform != 'linux', reason='needs all of 127.0.0.0/8 on loopback (Linux)')

OPTIONS = HttpOptions(port=0, max_sessions=8, max_sessions_per_client=4)
ACCEPT = {'accept': 'application/json, text/event-stream', 'content-type': 'application/json'}


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
    session = {'mcp-session-id': opened.headers['mcp-session-id'], 'mcp-protocol-version': LATEST_HANDSHAKE_VERSION}
    async with _flooder() as http:
        note = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}
        assert (await http.post(url, json=note, headers={**ACCEPT, **session})).status_code == 202
    http = await stack.enter_async_context(_flooder())
    stream = await stack.enter_async_context(
        http.stream('GET', url, headers={'accept': 'text/event-stream', **session})
    )
    assert stream.status_code == 200  # the headers are in: the stream is held from here on
    return 200


async def test_an_initialize_loop_on_new_connections_never_evicts_another_hosts_session() -> None:
    # The other client holds no event stream open (as `curl` does not): its session is idle between
    # calls, so only the rules keep it.
    async with served(OPTIONS) as url:
        opened = await _initialize(url, '127.0.0.2')
        session = {'mcp-session-id': opened.headers['mcp-session-id'], 'mcp-protocol-version': LATEST_HANDSHAKE_VERSION}
        assert await _add(url, '127.0.0.2', session) == 200
        statuses = [(await _initialize(url)).status_code for _ in range(24)]
        assert statuses == [200] * 24  # the flood recycled its own sessions, four at most
        assert await _add(url, '127.0.0.2', session) == 200  # a 404 here is the eviction the finding saw
        async with connected(url, source='127.0.0.2') as official:  # and a new session opens at once
            assert (await official.call_tool('calculator_add', {'a': 2, 'b': 3})).structured_content == {'result': 5.0}


async def test_held_event_streams_hit_their_own_hosts_limit_and_another_host_is_served() -> None:
    async with served(OPTIONS) as url, AsyncExitStack() as streams:
        statuses = [await _hold_stream(url, streams) for _ in range(8)]
        assert statuses == [200] * 4 + [429] * 4  # its own limit, long before the server's
        async with connected(url, source='127.0.0.2') as other:
            result = await other.call_tool('calculator_add', {'a': 1, 'b': 2})
            assert result.structured_content == {'result': 3.0}


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
                assert (await client.call_tool('calculator_add', {'a': 1, 'b': 1})).structured_content == {
                    'result': 2.0
                }
            async with connected(url, source='127.0.0.3') as newcomer:
                result = await newcomer.call_tool('calculator_add', {'a': 2, 'b': 2})
                assert result.structured_content == {'result': 4.0}


@pytest.mark.parametrize(('max_sessions', 'share'), [(1, 1), (2, 1), (9, 4), (64, 32), (1000, 32)])
def test_a_clients_default_share_stays_below_a_small_server_cap(max_sessions: int, share: int) -> None:
    assert HttpOptions(max_sessions=max_sessions).max_sessions_per_client == share


def test_a_client_share_as_large_as_the_server_cap_is_refused() -> None:
    with pytest.raises(ServingError, match=r'max_sessions_per_client \(4\) must be below max_sessions \(4\)'):
        HttpOptions(max_sessions=4, max_sessions_per_client=4)
