"""A throwaway PostgreSQL server for the tests: installed if missing, on loopback, in a temporary directory.

The binaries are Debian's `postgresql` package (apt-get installs it when missing and the process is
root), or `initdb` on PATH; the cluster trusts local connections and runs as `postgres` under root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from tests.temporal_server import free_port


class PostgresUnavailableError(RuntimeError):
    """No server binaries, and they could not be installed here."""


def _bin_dir() -> Path | None:
    versions = sorted(Path('/usr/lib/postgresql').glob('*/bin/initdb'), key=lambda p: int(p.parts[-3]))
    if versions:
        return versions[-1].parent
    found = shutil.which('initdb')
    return Path(found).resolve().parent if found else None


def _install() -> Path:
    if (found := _bin_dir()) is not None:
        return found
    if os.geteuid() != 0 or shutil.which('apt-get') is None:
        raise PostgresUnavailableError('PostgreSQL is not installed, and installing it needs root and apt-get')
    env = {**os.environ, 'DEBIAN_FRONTEND': 'noninteractive'}
    subprocess.run(['apt-get', 'update', '-qq'], check=True, env=env, capture_output=True)
    subprocess.run(['apt-get', 'install', '-y', '-qq', 'postgresql'], check=True, env=env, capture_output=True)
    if (found := _bin_dir()) is None:
        raise PostgresUnavailableError('apt-get installed postgresql, but no initdb was found')
    return found


@contextmanager
def postgres_server() -> Generator[str]:
    """A running server for the block; yields `postgresql://postgres@127.0.0.1:PORT/postgres`."""
    bin_dir = _install()
    root = Path(tempfile.mkdtemp(prefix='agentool-postgres-'))
    as_user: list[str] = []
    if os.geteuid() == 0:  # the server refuses to run as root
        shutil.chown(root, 'postgres', 'postgres')
        as_user = ['runuser', '-u', 'postgres', '--']
    data, log = root / 'data', root / 'server.log'
    port = free_port()

    def pg(tool: str, *args: str, check: bool = True) -> None:
        subprocess.run([*as_user, str(bin_dir / tool), '-D', str(data), *args], check=check, capture_output=True)

    try:
        pg('initdb', '-U', 'postgres', '--auth=trust', '-E', 'UTF8')
        options = f'-c listen_addresses=127.0.0.1 -p {port} -k {root} -c max_connections=300 -c fsync=off'
        pg('pg_ctl', '-l', str(log), '-o', options, '-w', 'start')
        try:
            yield f'postgresql://postgres@127.0.0.1:{port}/postgres'
        finally:
            pg('pg_ctl', '-m', 'fast', '-w', 'stop', check=False)
    finally:
        shutil.rmtree(root, ignore_errors=True)
