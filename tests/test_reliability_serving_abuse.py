"""Serving under abuse, heavier under `make fuzz` (`AGENTOOL_FUZZ=1`): session floods, concurrent writes
to shared deps through every surface at once, hostile token files and terminal escapes.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip('mcp')

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.cli import main
from agentool.core.injector import AgenToolInjector, use_injector
from agentool.core.registry import AgenToolRegistry, use_registry
from agentool.errors import ServingError
from agentool.mcp_http import HttpOptions
from tests.mcp_asgi import INITIALIZE, list_tools, open_session, running, send
from tests.test_shared_deps_concurrency import SURFACES, create_counter, surfaces

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


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(codec='utf-8'), max_size=3000))
def test_a_tool_error_is_always_one_terminal_safe_line(capsys: pytest.CaptureFixture[str], text: str) -> None:
    with use_registry(AgenToolRegistry()), use_injector(AgenToolInjector()):
        create_agentool('shout', ShoutInput, RoutingConfig(operation_map={'shout': 'shout'}), [shout])
        capsys.readouterr()
        assert main(['call', 'shout', '{"operation": "shout", "text": ' + json.dumps(text) + '}']) == 1
    err = capsys.readouterr().err
    assert err.endswith('\n')
    assert err.count('\n') == 1
    assert not any(ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F for char in err[:-1])
    assert len(err) <= 2_000
