"""The stdio MCP transport checks a line's size before parsing it and never buffers past the limit.

The findings: a 50 MB line was parsed before it was refused (peak 241 MB), and a 120 MB line with
no newline was buffered whole. Now such a line is skipped as it arrives and answered with a JSON-RPC
error; the server's memory stays flat and it goes on serving.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.agentools import ROOT

pytest.importorskip('mcp')

from tests.mcp_asgi import INITIALIZE

HUGE = 30 * 1024 * 1024


def _server() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, '-m', 'agentool', '--import', 'tests.todo_cli', 'mcp'],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.kill()
    server.wait()
    for pipe in (server.stdin, server.stdout, server.stderr):
        if pipe is not None:
            pipe.close()


def _send(server: subprocess.Popen[bytes], data: bytes) -> None:
    assert server.stdin is not None
    for start in range(0, len(data), 1 << 20):
        server.stdin.write(data[start : start + (1 << 20)])
    server.stdin.flush()


def _answer(server: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert server.stdout is not None
    return json.loads(server.stdout.readline())


def _peak_kib(server: subprocess.Popen[bytes]) -> int:
    status = Path(f'/proc/{server.pid}/status').read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith('VmHWM:')))


@pytest.mark.skipif(not Path('/proc/self/status').exists(), reason='reads the peak memory from /proc')
def test_an_oversized_line_is_refused_unparsed_and_the_server_goes_on() -> None:
    server = _server()
    try:
        _send(server, json.dumps(INITIALIZE).encode() + b'\n')
        assert _answer(server)['result']['serverInfo']['name'] == 'agentool'
        before = _peak_kib(server)
        _send(server, b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": "' + b'a' * HUGE + b'"}}\n')
        refused = _answer(server)
        assert refused['id'] is None
        assert refused['error']['code'] == -32600
        assert 'is over the limit of 1048576 bytes' in refused['error']['message']
        assert refused['error']['data']['size'] > HUGE
        _send(server, b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}\n')
        assert _answer(server) == {'jsonrpc': '2.0', 'id': 3, 'result': {}}
        assert _peak_kib(server) - before < 10 * 1024  # a 30 MB line held (or parsed) would show here
    finally:
        _stop(server)


def test_an_endless_line_is_never_held_whole() -> None:
    server = _server()
    try:
        _send(server, b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": "' + b'b' * HUGE)  # no newline
        assert server.stdin is not None
        server.stdin.close()  # end of input: the refusal comes, then the server ends
        refused = _answer(server)
        assert 'is over the limit' in refused['error']['message']
        assert server.wait(timeout=60) == 0
    finally:
        _stop(server)


PEEKER = """
import sys
from typing import Literal

from tests.mcp_asgi import INITIALIZE
from agentool import BaseOperationInput, RoutingConfig, create_agentool


class PeekInput(BaseOperationInput):
    operation: Literal['peek']


def peek() -> str:
    return repr(sys.stdin.read())


create_agentool('peeker', PeekInput, RoutingConfig(operation_map={'peek': 'peek'}), [peek])
"""


def test_a_tool_reading_stdin_gets_nothing_of_the_protocol(tmp_path: Path) -> None:
    (tmp_path / 'peeker_module.py').write_text(PEEKER)
    messages = [
        INITIALIZE,
        {'jsonrpc': '2.0', 'method': 'notifications/initialized'},
        {'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call', 'params': {'name': 'peeker_peek', 'arguments': {}}},
        {'jsonrpc': '2.0', 'id': 3, 'method': 'ping'},
    ]
    server = subprocess.Popen(
        [sys.executable, '-m', 'agentool', '--import', 'peeker_module', 'mcp'],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, 'PYTHONPATH': str(ROOT)},
    )
    watchdog = threading.Timer(60, server.kill)  # a stolen message would leave an answer missing
    watchdog.start()
    try:
        _send(server, b''.join(json.dumps(message).encode() + b'\n' for message in messages))
        answers = {answer['id']: answer for answer in (_answer(server) for _ in range(3))}
    finally:
        watchdog.cancel()
        _stop(server)
    assert answers[2]['result']['content'][0]['text'] == "''"  # the null device, not the client's messages
    assert answers[3] == {'jsonrpc': '2.0', 'id': 3, 'result': {}}


@pytest.mark.parametrize(
    ('line', 'code'),
    [(b'garbage', -32700), (b'{"jsonrpc": "2.0", "id": 5', -32700), (b'[1, 2]', -32600), (b'{"id": 7}', -32600)],
)
def test_a_line_that_is_not_a_message_is_answered_with_a_json_rpc_error(line: bytes, code: int) -> None:
    server = _server()
    try:
        _send(server, line + b'\n' + json.dumps(INITIALIZE).encode() + b'\n')
        refused = _answer(server)
        assert refused['id'] is None
        assert refused['error']['code'] == code
        assert 'not read' in refused['error']['message']
        assert _answer(server)['id'] == 1  # and the server goes on
    finally:
        _stop(server)
