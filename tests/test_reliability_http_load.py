"""Many clients at once over Streamable HTTP, with a bearer token: no failed and no mixed-up responses.

CLIENTS official MCP clients, each its own session, make CALLS calls one after another, all clients at
once. Every call's arguments are unique, so a response delivered to the wrong call (or session) shows
as a wrong sum. `make fuzz` runs 50 clients x 200 calls.
"""

from __future__ import annotations

import os

import anyio
import pytest

pytest.importorskip('mcp')

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agentool.mcp_http import HttpOptions
from tests.http_serving import http_client, served

HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
CLIENTS = 50 if HEAVY else 10
CALLS = 200 if HEAVY else 20
TOKEN = 'load-test-token'


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
