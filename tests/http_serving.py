"""Test helpers: serve the calculator over Streamable HTTP in this event loop, call it with the official client."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from functools import partial

import anyio
import httpx2
from mcp import Client
from mcp.client.client import ConnectMode
from mcp.client.streamable_http import streamable_http_client

from agentool.mcp import create_mcp_server
from agentool.mcp_http import HttpOptions, serve_http
from examples.calculator import create_calculator


@asynccontextmanager
async def served(options: HttpOptions, announced: list[str] | None = None) -> AsyncGenerator[str]:
    """Serve the calculator at `options` in this event loop; yields the URL, stops gracefully on exit."""
    create_calculator()
    server = create_mcp_server()
    async with anyio.create_task_group() as group:
        sink = [] if announced is None else announced
        url = await group.start(partial(serve_http, server, options, announce=sink.append))
        yield url
        group.cancel_scope.cancel()


def http_client(token: str | None, statuses: list[int], source: str | None = None) -> httpx2.AsyncClient:
    """An HTTP client for the MCP client, sending `token` and recording every response's status.

    `source`: the local address its connections come from (`127.0.0.2`: a second client on loopback,
    which Linux routes whole to `lo`).
    """

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    headers = {} if token is None else {'Authorization': f'Bearer {token}'}
    transport = None if source is None else httpx2.AsyncHTTPTransport(local_address=source)
    return httpx2.AsyncClient(headers=headers, event_hooks={'response': [record]}, transport=transport)


@asynccontextmanager
async def connected(
    url: str, *, mode: ConnectMode = 'legacy', source: str | None = None, token: str | None = None
) -> AsyncGenerator[Client]:
    """The official client connected to `url` in protocol era `mode`, from local address `source`."""
    async with (
        http_client(token, [], source) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def add(url: str, token: str | None, statuses: list[int], a: float, b: float, **extra: object) -> object:
    """`calculator_add` called over HTTP with the official client; the structured result."""
    async with http_client(token, statuses) as http, Client(streamable_http_client(url, http_client=http)) as client:
        result = await client.call_tool('calculator_add', {'a': a, 'b': b, **extra})
        return result.structured_content
