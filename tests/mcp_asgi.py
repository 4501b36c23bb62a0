"""Test helpers: drive the MCP HTTP app in-process with ASGI calls, each request naming its client."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup
from pydantic_ai import RunContext
from starlette.applications import Starlette

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.core.injector import AgenToolInjector, use_injector
from agentool.core.registry import AgenToolRegistry, use_registry
from agentool.mcp import create_mcp_server
from agentool.mcp_http import HttpOptions, http_app

INITIALIZE = {
    'jsonrpc': '2.0',
    'id': 1,
    'method': 'initialize',
    'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 't', 'version': '1'}},
}

MODERN = '2026-07-28'
"""MCP's sessionless revision: each request a self-contained POST, no `initialize`, no session."""


def modern(method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request for `method` and the headers it travels with."""
    meta = {'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}}
    headers = {'mcp-protocol-version': MODERN, 'mcp-method': method}
    if params is not None and 'name' in params:
        headers['mcp-name'] = params['name']
    return {'jsonrpc': '2.0', 'id': 1, 'method': method, 'params': {**(params or {}), '_meta': meta}}, headers


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


@dataclass
class Held:
    """A tool call that stays in progress until the test releases it: a session kept busy."""

    entered: int = 0
    inside: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)


class HoldInput(BaseOperationInput):
    operation: Literal['hold']


async def hold(ctx: RunContext[Held]) -> str:
    ctx.deps.entered += 1
    ctx.deps.inside.set()
    await ctx.deps.release.wait()
    return 'released'


@contextmanager
def holding() -> Generator[Held]:
    """A registry of its own with the `holder` agentool (`holder_hold` waits for `release`), and its gate."""
    with use_registry(AgenToolRegistry()), use_injector(AgenToolInjector()) as injector:
        create_agentool('holder', HoldInput, RoutingConfig(operation_map={'hold': 'hold'}), [hold], deps_type=Held)
        gate = Held()
        injector.provide(Held, instance=gate)
        yield gate


async def busy_session(app: Starlette, client: tuple[str, int], held: Held, group: TaskGroup) -> str:
    """A session of `client` with a `holder_hold` call in progress (until `held.release`)."""
    session = await open_session(app, client)
    call = {'jsonrpc': '2.0', 'id': 3, 'method': 'tools/call', 'params': {'name': 'holder_hold', 'arguments': {}}}
    entered = held.entered
    group.start_soon(lambda: send(app, client, call, session=session))
    while held.entered == entered:
        await held.inside.wait()
        held.inside = anyio.Event()
    return session
