"""Stopping an HTTP server lets calls in flight finish, up to `shutdown_timeout`, and logs any it cuts.

The finding: SIGTERM cut a 12 s call after uvicorn's fixed 5 s, and its client got 200 headers with
an empty body. Also here: nothing the server imports comes from the working directory (a
`./httptools.py` was run by uvicorn's optional import).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncGenerator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from pydantic_ai import RunContext

pytest.importorskip('mcp')

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.core.injector import AgenToolInjector, use_injector
from agentool.core.registry import AgenToolRegistry, use_registry
from agentool.mcp import create_mcp_server
from agentool.mcp_http import HttpOptions, serve_http


@dataclass
class Slow:
    inside: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)


class SlowInput(BaseOperationInput):
    operation: Literal['work']


async def work(ctx: RunContext[Slow]) -> str:
    ctx.deps.inside.set()
    await ctx.deps.release.wait()
    return 'finished'


@pytest.fixture
def slow() -> Iterator[Slow]:
    with use_registry(AgenToolRegistry()), use_injector(AgenToolInjector()) as injector:
        create_agentool('slow', SlowInput, RoutingConfig(operation_map={'work': 'work'}), [work], deps_type=Slow)
        deps = Slow()
        injector.provide(Slow, instance=deps)
        yield deps


@asynccontextmanager
async def serving(options: HttpOptions) -> AsyncGenerator[tuple[str, anyio.CancelScope]]:
    """Serve in this loop; yields the URL and the scope whose cancellation stops the server gracefully."""
    async with anyio.create_task_group() as group:
        url = await group.start(partial(serve_http, create_mcp_server(), options, announce=lambda line: None))
        yield url, group.cancel_scope


INITIALIZE = {
    'jsonrpc': '2.0',
    'id': 1,
    'method': 'initialize',
    'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 't', 'version': '1'}},
}
CALL = {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call', 'params': {'name': 'slow_work', 'arguments': {}}}
HEADERS = {'accept': 'application/json, text/event-stream'}


async def _call(url: str, outcome: dict[str, Any]) -> None:
    """A session and one call on one keep-alive connection; `outcome` gets the call's status and body."""
    try:
        async with httpx2.AsyncClient(headers=HEADERS, timeout=30) as http:
            opened = await http.post(url, json=INITIALIZE)
            session = {'mcp-session-id': opened.headers['mcp-session-id']}
            note = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}
            await http.post(url, json=note, headers=session)
            answer = await http.post(url, json=CALL, headers=session)
            outcome['status'], outcome['body'] = answer.status_code, answer.text
    except httpx2.HTTPError as error:  # what the client saw when its call was cut
        outcome['error'] = error


async def test_a_stop_lets_a_call_in_flight_finish(slow: Slow) -> None:
    outcome: dict[str, Any] = {}
    with anyio.fail_after(30):
        async with anyio.create_task_group() as clients, serving(HttpOptions(port=0)) as (url, stop):
            clients.start_soon(_call, url, outcome)
            await slow.inside.wait()
            stop.cancel()  # the server stops once its calls are done
            clients.start_soon(_release_soon, slow)
    assert outcome['status'] == 200
    assert '"structuredContent":{"result":"finished"}' in outcome['body']


async def _release_soon(slow: Slow) -> None:
    await anyio.sleep(0.3)  # well after the stop began
    slow.release.set()


async def test_a_call_past_the_shutdown_limit_is_cut_and_logged(slow: Slow, caplog: pytest.LogCaptureFixture) -> None:
    outcome: dict[str, Any] = {}
    caplog.set_level(logging.WARNING, logger='agentool.mcp')
    with anyio.fail_after(30):
        async with (
            anyio.create_task_group() as clients,
            serving(HttpOptions(port=0, shutdown_timeout=0.2)) as (url, stop),
        ):
            clients.start_soon(_call, url, outcome)
            await slow.inside.wait()
            stop.cancel()  # never released: cut after 0.2 s
    assert 'finished' not in outcome.get('body', '')
    assert 'the shutdown limit (shutdown_timeout) passed: cut a call still running' in caplog.text


def test_the_shutdown_limit_is_checked() -> None:
    assert HttpOptions().shutdown_timeout == 30.0
    assert HttpOptions(shutdown_timeout=2).shutdown_timeout == 2


@pytest.mark.parametrize('module', ['httptools', 'uvloop'])
async def test_serving_imports_nothing_from_the_working_directory(
    slow: Slow, module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An optional dependency uvicorn probes for, planted where the working directory is importable.
    (tmp_path / f'{module}.py').write_text("raise SystemExit('imported from the working directory')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    async with serving(HttpOptions(port=0)) as (url, stop):
        async with httpx2.AsyncClient() as http, Client(streamable_http_client(url, http_client=http)) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ['slow_work']
        stop.cancel()
    assert module not in sys.modules
