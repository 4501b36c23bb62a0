"""A throwaway Prefect API server for the tests: `prefect server start` on loopback, SQLite in a temp dir."""

from __future__ import annotations

import os
import sys
import tempfile
import urllib.request
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.temporal_server import free_port, server_process


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f'{url}/health', timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


@contextmanager
def prefect_server(*, timeout: float = 300) -> Generator[str]:
    """A running server for the block; yields its API URL, `http://127.0.0.1:PORT/api`."""
    root = Path(tempfile.mkdtemp(prefix='agentool-prefect-'))
    port = free_port()
    env = {
        **os.environ,
        'PREFECT_HOME': str(root / 'home'),
        'PREFECT_SERVER_DATABASE_CONNECTION_URL': f'sqlite+aiosqlite:///{root / "prefect.db"}',
        'PREFECT_SERVER_ANALYTICS_ENABLED': 'false',
        'PREFECT_UI_ENABLED': 'false',
        'PREFECT_SERVER_LOGGING_LEVEL': 'WARNING',
    }
    # This interpreter's Prefect. Services on (their task run recorder writes the task runs flows
    # report), the scheduler off.
    command = [sys.executable, '-m', 'prefect', 'server', 'start', '--host', '127.0.0.1', '--port', str(port)]
    command += ['--no-scheduler', '--no-late-runs', '--no-ui', '--analytics-off']
    url = f'http://127.0.0.1:{port}/api'
    with server_process('Prefect', command, root, ready=lambda: _healthy(url), timeout=timeout, env=env):
        yield url


@contextmanager
def prefect_settings(url: str, home: Path) -> Generator[None]:
    """This process's flows and tasks report to the server at `url`; their results go under `home`."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_HOME,
        PREFECT_LOCAL_STORAGE_PATH,
        PREFECT_LOGGING_TO_API_ENABLED,
        temporary_settings,
    )

    updates: dict[Any, Any] = {
        PREFECT_API_URL: url,
        PREFECT_HOME: str(home),
        PREFECT_LOCAL_STORAGE_PATH: str(home / 'storage'),
        PREFECT_LOGGING_TO_API_ENABLED: False,
    }
    with temporary_settings(updates=updates):
        yield
