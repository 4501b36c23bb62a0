"""What the server logs from a client is escaped and bounded: the operator's terminal stays theirs.

The finding: a tool exception echoing a client's text wrote raw `ESC]0;...BEL` (retitle the
window) and `ESC[2J` (clear the screen) to the server's stderr.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip('mcp')

from agentool.mcp_http import TOKEN_ENV, HttpOptions
from tests.http_serving import connected, served

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '\x1b]0;pwned\x07\x1b[2J\x9b2J\r\nFAKE LOG LINE'
SHOUTY = """
from agentool import BaseOperationInput, RoutingConfig, create_agentool


class ShoutInput(BaseOperationInput):
    operation: str = 'shout'
    text: str = ''


async def shout(text: str) -> str:
    raise RuntimeError(text)


create_agentool('shout', ShoutInput, RoutingConfig(operation_map={'shout': 'shout'}), [shout])
"""


def _unsafe(text: str) -> list[str]:
    """The control characters in `text` a terminal would act on (line breaks between records aside)."""
    return sorted({c for c in text if (ord(c) < 0x20 and c != '\n') or 0x7F <= ord(c) <= 0x9F})


async def test_a_tool_exception_echoing_escapes_reaches_stderr_escaped_and_bounded(tmp_path: Path) -> None:
    (tmp_path / 'shouty.py').write_text(SHOUTY, encoding='utf-8')
    environment = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    environment['PYTHONPATH'] = os.pathsep.join([str(ROOT), str(tmp_path)])
    command = [sys.executable, '-m', 'agentool', '--import', 'shouty', 'mcp', '--transport', 'streamable-http']
    process = subprocess.Popen(  # noqa: ASYNC220  # started once, read from a thread below
        [*command, '--port', '0'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment
    )
    try:
        assert process.stderr is not None
        line = (await anyio.to_thread.run_sync(process.stderr.readline)).decode()
        url = line.split('serving at ', 1)[1].split(' ', 1)[0]
        async with connected(url) as client:
            result = await client.call_tool('shout_shout', {'text': HOSTILE + 'x' * 100_000})
            assert result.is_error
    finally:
        process.send_signal(signal.SIGINT)
        _, raw = await anyio.to_thread.run_sync(process.communicate)
    err = raw.decode('utf-8')
    assert 'RuntimeError' in err  # logged, with its traceback
    assert _unsafe(err) == []
    assert '\\x1b]0;pwned\\x07\\x1b[2J\\x9b2J\\r\\nFAKE LOG LINE' in err  # shown, as escapes
    assert len(err) < 60_000  # the 100,000 characters sent, cut short


async def test_a_hostile_host_header_is_logged_escaped(caplog: pytest.LogCaptureFixture) -> None:
    # The SDK logs the Host header it refuses; a byte such as 0x9b (a C1 control: CSI) is valid in
    # an HTTP header, and would reach the terminal as it came.
    async with served(HttpOptions(port=0)) as url:
        port = int(url.rsplit(':', 1)[1].split('/')[0])
        body = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'ping'}).encode()
        request = (
            b'POST /mcp HTTP/1.1\r\nHost: evil\x9b2J.example\r\ncontent-type: application/json\r\n'
            b'accept: application/json, text/event-stream\r\nconnection: close\r\n'
            b'content-length: ' + str(len(body)).encode() + b'\r\n\r\n' + body
        )

        def exchange() -> bytes:
            with socket.create_connection(('127.0.0.1', port)) as connection:
                connection.sendall(request)
                return b''.join(iter(lambda: connection.recv(65536), b''))

        with caplog.at_level(logging.WARNING):
            answer = await anyio.to_thread.run_sync(exchange)
    assert answer.startswith(b'HTTP/1.1 421')
    logged = [record.getMessage() for record in caplog.records if 'evil' in record.getMessage()]
    assert logged, caplog.text
    assert all(_unsafe(message) == [] and '\\x9b2J' in message for message in logged)
