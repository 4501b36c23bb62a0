"""`tools/call` over Streamable HTTP: agentool's server beside the MCP SDK's own and FastMCP's.

Each server runs in a process of its own on loopback, serving the same tool (`adder_add`: two
numbers in, their sum out) with uvicorn's h11 protocol on asyncio, and this process calls it in
turn over one keep-alive connection, in each protocol era: the handshake era (`initialize` once,
then calls in the session) and the sessionless 2026-07-28 revision (each call a self-contained POST).
A sample is the server process's CPU time (user + system, from `/proc`) per call, so other load
on the machine and the client's own work do not count; its inverse is the calls per CPU second
the server sustains. Servers and eras are interleaved sample by sample.

The servers (`python -m bench.http_serving KIND` runs one and prints its port):

- `agentool`: `agentool.mcp_http.serve_http`, every guard on (fair sessions, Host/Origin, size).
- `unguarded`: the same agentool MCP `Server` served by the SDK's own `streamable_http_app`, so the
  ratio of the two is the guards' cost.
- `sdk`: the SDK's high-level `MCPServer` with the tool as a plain function.
- `fastmcp`: FastMCP with the tool as a plain function.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
from collections.abc import Generator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._table import Row
from ._timing import Scale

__all__ = ('http_serving_rows', 'KINDS')

ROOT = Path(__file__).resolve().parent.parent
KINDS = ('agentool', 'unguarded', 'sdk', 'fastmcp')
ERAS = ('2025-11-25', '2026-07-28')
_TICK = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100
_ACCEPT = {'accept': 'application/json, text/event-stream', 'content-type': 'application/json'}
_META: dict[str, object] = {
    'io.modelcontextprotocol/protocolVersion': ERAS[1],
    'io.modelcontextprotocol/clientCapabilities': {},
}


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far."""
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime and stime: fields 14 and 15 of stat(5)


@dataclass
class _Served:
    kind: str
    process: subprocess.Popen[str]
    url: str


@contextmanager
def _serving(kind: str) -> Generator[_Served]:
    command = [sys.executable, '-m', 'bench.http_serving', kind]
    # FastMCP logs each session at INFO by default; every server here logs warnings only.
    environment = {**os.environ, 'PYTHONPATH': str(ROOT), 'FASTMCP_LOG_LEVEL': 'WARNING'}
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=environment)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f'bench: the {kind} server did not start (it said {line[:200]!r})')
        port = int(line)
        yield _Served(kind, process, f'http://127.0.0.1:{port}/mcp')
    finally:
        process.terminate()
        process.wait()


class _Caller:
    """Calls `adder_add` on one server in one era, over one keep-alive connection."""

    def __init__(self, served: _Served, era: str) -> None:
        import httpx

        self.served, self.era = served, era
        self.http = httpx.Client(timeout=None)
        self.headers: dict[str, str] = {**_ACCEPT}
        if era == ERAS[1]:
            self.headers |= {'mcp-protocol-version': era, 'mcp-method': 'tools/call', 'mcp-name': 'adder_add'}
            return
        init = {'protocolVersion': era, 'capabilities': {}, 'clientInfo': {'name': 'bench', 'version': '1'}}
        opened = self._post({'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': init})
        self.headers |= {'mcp-session-id': opened.headers['mcp-session-id'], 'mcp-protocol-version': era}
        self._post({'jsonrpc': '2.0', 'method': 'notifications/initialized'})

    def _post(self, message: dict[str, Any]) -> Any:
        response = self.http.post(self.served.url, content=json.dumps(message), headers=self.headers)
        response.raise_for_status()
        return response

    def call(self, number: int) -> None:
        params: dict[str, Any] = {'name': 'adder_add', 'arguments': {'a': number, 'b': 1}}
        if self.era == ERAS[1]:
            params['_meta'] = _META
        text = self._post({'jsonrpc': '2.0', 'id': number + 1, 'method': 'tools/call', 'params': params}).text
        if str(number + 1) not in text or '"isError":true' in text:  # the sum came back, not an error
            raise RuntimeError(f'bench: {self.served.kind} ({self.era}) answered {text[:300]!r}')

    def sample(self, calls: int) -> float:
        """Server CPU seconds per call over `calls` calls."""
        start = _cpu(self.served.process.pid)
        for number in range(calls):
            self.call(number)
        return (_cpu(self.served.process.pid) - start) / calls


def measure(calls: int, repeats: int) -> dict[tuple[str, str], list[float]]:
    """Server CPU seconds per call, `repeats` interleaved samples per (kind, era)."""
    with ExitStack() as stack:
        servers = [stack.enter_context(_serving(kind)) for kind in KINDS]
        callers = [_Caller(served, era) for served in servers for era in ERAS]
        for caller in callers:  # warm-up: imports, first-call paths
            caller.sample(max(10, calls // 10))
        taken: dict[tuple[str, str], list[float]] = {(c.served.kind, c.era): [] for c in callers}
        for _ in range(repeats):
            for caller in callers:
                taken[caller.served.kind, caller.era].append(caller.sample(calls))
        return taken


def http_serving_rows(scale: Scale) -> list[Row]:
    """Throughput ratios: agentool against the SDK serving the same server unguarded, the SDK's
    `MCPServer` and FastMCP, in each era (median and range of the per-repeat ratios)."""
    calls = max(50, scale.run_loops * 5)
    taken = measure(calls, max(5, scale.repeats))
    rows: list[Row] = []
    for era in ERAS:
        ours = taken['agentool', era]
        for kind, what in (
            ('unguarded', 'the same server, unguarded'),
            ('sdk', "the SDK's MCPServer"),
            ('fastmcp', 'FastMCP'),
        ):
            theirs = taken[kind, era]
            # Throughput is the inverse of CPU per call: theirs / ours, repeat by repeat.
            ratios = [t / o for t, o in zip(theirs, ours, strict=True)]
            rows.append(
                Row(
                    benchmark=f'HTTP tools/call throughput ({era}): agentool vs {what}',
                    measured=(
                        f'{1 / statistics.median(ours):,.0f} vs {1 / statistics.median(theirs):,.0f} calls per '
                        f'server CPU second; ratio range {min(ratios):.2f} to {max(ratios):.2f}x'
                    ),
                    ratio=statistics.median(ratios),
                    target=0.90,
                    kind='at_least',
                    cause=_CAUSES.get(kind, ''),
                )
            )
    return rows


_CAUSES = {
    'sdk': (
        "the SDK's MCPServer calls a plain function; agentool validates the input against the agentool's "
        'schema, routes it, runs it through the injector and an operation span, and checks the output: '
        'the row against the same server unguarded is what the guards cost'
    ),
}
"""Why a row may miss its target (shown under the table only when it does)."""


# --- the servers (run in their own processes) ----------------------------------------------------------


def _listener() -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(('127.0.0.1', 0))
    listener.listen(128)
    return listener


def _uvicorn(app: Any, listener: socket.socket) -> None:
    import uvicorn

    config = uvicorn.Config(app, log_level='warning', http='h11', loop='asyncio', ws='none', lifespan='on')
    print(listener.getsockname()[1], flush=True)
    uvicorn.Server(config).run(sockets=[listener])


def _agentool_server() -> Any:
    from agentool.mcp import create_mcp_server

    from ._subjects import create_adder

    create_adder('adder')
    return create_mcp_server()


def _serve(kind: str) -> None:
    listener = _listener()
    if kind == 'agentool':
        import anyio

        from agentool.mcp_http import HttpOptions, serve_http

        port = listener.getsockname()[1]
        listener.close()  # serve_http listens itself, on the port just found free
        options = HttpOptions(port=port)
        anyio.run(lambda: serve_http(_agentool_server(), options, announce=lambda _: print(port, flush=True)))
    elif kind == 'unguarded':
        _uvicorn(_agentool_server().streamable_http_app(), listener)
    elif kind == 'sdk':
        from mcp.server.mcpserver import MCPServer

        sdk = MCPServer('adder')

        @sdk.tool(name='adder_add')
        async def add(a: float, b: float) -> float:  # pyright: ignore[reportUnusedFunction]
            """Add two numbers."""
            return a + b

        _uvicorn(sdk.streamable_http_app(), listener)
    else:
        from fastmcp import FastMCP

        fast = FastMCP('adder')

        @fast.tool(name='adder_add')
        async def fast_add(a: float, b: float) -> float:  # pyright: ignore[reportUnusedFunction]
            """Add two numbers."""
            return a + b

        _uvicorn(fast.http_app(path='/mcp'), listener)


if __name__ == '__main__':
    _serve(sys.argv[1])
