"""Test helpers: drive the MCP HTTP app in-process with ASGI calls, each request naming its client."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.applications import Starlette

from agentool.mcp import create_mcp_server
from agentool.mcp_http import HttpOptions, http_app

INITIALIZE = {
    'jsonrpc': '2.0',
    'id': 1,
    'method': 'initialize',
    'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 't', 'version': '1'}},
}


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def rpc(self) -> dict[str, Any]:
        text = self.body.decode()
        if text.startswith('event:'):  # an event stream: the JSON is on the data line
            text = next(line[len('data: ') :] for line in text.splitlines() if line.startswith('data: '))
        return json.loads(text)


async def send(
    app: Starlette,
    client: tuple[str, int],
    message: dict[str, Any] | None = None,
    *,
    method: str = 'POST',
    session: str | None = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> Answer:
    """One HTTP request straight to the ASGI app, as `client` (address, port) would send it (`raw`: the body)."""
    body = raw if raw is not None else b'' if message is None else json.dumps(message).encode()
    sent = {
        'host': '127.0.0.1:8000',
        'accept': 'application/json, text/event-stream',
        'content-type': 'application/json',
        'content-length': str(len(body)),
        **({} if session is None else {'mcp-session-id': session}),
        **(headers or {}),
    }
    scope = {
        'type': 'http',
        'asgi': {'version': '3.0'},
        'http_version': '1.1',
        'method': method,
        'scheme': 'http',
        'path': '/mcp',
        'raw_path': b'/mcp',
        'root_path': '',
        'query_string': b'',
        'headers': [(k.encode(), v.encode()) for k, v in sent.items()],
        'client': client,
        'server': ('127.0.0.1', 8000),
        'app': app,
    }
    delivered = anyio.Event()

    async def receive() -> dict[str, Any]:
        if delivered.is_set():
            await anyio.sleep_forever()  # the client never disconnects
        delivered.set()
        return {'type': 'http.request', 'body': body, 'more_body': False}

    answer = Answer(0, {}, b'')

    async def respond(message: Any) -> None:
        if message['type'] == 'http.response.start':
            answer.status = message['status']
            answer.headers = {k.decode(): v.decode() for k, v in message.get('headers', [])}
        elif message['type'] == 'http.response.body':
            answer.body += message.get('body', b'')

    await app(scope, receive, respond)
    return answer


async def open_session(app: Starlette, client: tuple[str, int]) -> str:
    opened = await send(app, client, INITIALIZE)
    assert opened.status == 200, opened.body
    session = opened.headers['mcp-session-id']
    note = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}
    assert (await send(app, client, note, session=session)).status == 202
    return session


async def list_tools(app: Starlette, client: tuple[str, int], session: str) -> Answer:
    return await send(app, client, {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list'}, session=session)


@asynccontextmanager
async def running(options: HttpOptions) -> AsyncGenerator[Starlette]:
    app = http_app(create_mcp_server(), options)
    async with app.router.lifespan_context(app):
        yield app
