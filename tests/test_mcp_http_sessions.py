"""MCP sessions over HTTP are bounded: a flood of `initialize` cannot lock other clients out.

The finding: 10,001 `initialize` requests on one keep-alive connection opened 10,000 sessions
(the SDK's cap), and every new client then got 503 for up to 30 minutes. The app is driven here
in-process (ASGI calls, no sockets), each request naming its peer (address and port); a client is
its address, so `FLOODER` and `OTHER` are on two addresses.
The flood itself is in `tests/test_reliability_serving_abuse.py` (10,000 under `make fuzz`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

pytest.importorskip('mcp')


from agentool.errors import ServingError
from agentool.mcp_http import HttpOptions
from tests.mcp_asgi import INITIALIZE, Held, busy_session, holding, list_tools, open_session, running, send

FLOODER = ('127.0.0.1', 40001)
OTHER = ('127.0.0.2', 40002)


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
        third = ('127.0.0.3', 40003)
        fresh = await open_session(app, third)  # the idle session was closed for it
        assert (await list_tools(app, OTHER, idle)).status == 404
        assert (await list_tools(app, third, fresh)).status == 200
        await busy_session(app, third, held, group)  # `fresh` is busy now too
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


ALLOWED = 'https://app.example.com'


async def test_off_loopback_a_named_origin_list_is_enforced(held: Held) -> None:
    options = HttpOptions(host='0.0.0.0', allow_unauthenticated=True, allowed_origins=[ALLOWED + '/'])
    assert options.allowed_origins == (ALLOWED,)
    async with running(options) as app:
        evil = await send(app, FLOODER, INITIALIZE, headers={'origin': 'https://evil.example'})
        assert evil.status == 403
        assert evil.rpc()['error']['message'] == 'Origin not allowed'
        assert (await send(app, FLOODER, INITIALIZE, headers={'origin': ALLOWED})).status == 200
        assert (await send(app, OTHER, INITIALIZE)).status == 200  # no Origin: not a browser


async def test_an_allowed_origin_written_in_capitals_matches_what_browsers_send(held: Held) -> None:
    options = HttpOptions(host='0.0.0.0', allow_unauthenticated=True, allowed_origins=[ALLOWED.upper()])
    async with running(options) as app:
        assert (await send(app, FLOODER, INITIALIZE, headers={'origin': ALLOWED})).status == 200


async def test_off_loopback_without_allowed_origins_origin_is_not_checked(held: Held) -> None:
    async with running(HttpOptions(host='0.0.0.0', allow_unauthenticated=True)) as app:
        assert (await send(app, FLOODER, INITIALIZE, headers={'origin': 'https://evil.example'})).status == 200


@pytest.mark.parametrize(
    ('options', 'option'),
    [
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
    ],
)
def test_limit_options_are_checked_at_construction(options: dict[str, Any], option: str) -> None:
    with pytest.raises(ServingError) as raised:
        HttpOptions(**options)
    assert raised.value.details['options'] == [option]


async def test_with_a_token_an_authorised_flood_recycles_its_own_sessions(held: Held) -> None:
    async with running(HttpOptions(token='s3cret', max_sessions_per_client=1)) as app:
        auth = {'authorization': 'Bearer s3cret'}
        first = (await send(app, FLOODER, INITIALIZE, headers=auth)).headers['mcp-session-id']
        second = (await send(app, FLOODER, INITIALIZE, headers=auth)).headers['mcp-session-id']
        assert app.state.mcp_sessions.evicted == 1  # closed through the app, with the creator's credential
        gone = await send(app, FLOODER, {'jsonrpc': '2.0', 'id': 2, 'method': 'ping'}, session=first, headers=auth)
        kept = await send(app, FLOODER, {'jsonrpc': '2.0', 'id': 2, 'method': 'ping'}, session=second, headers=auth)
        assert (gone.status, kept.status) == (404, 200)
