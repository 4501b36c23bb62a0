"""The system database helpers of `agentool.dbos`: URLs shown without passwords, and SQLite before 3.42."""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

__all__ = ('safe_url', 'sqlite_engine_kwargs')


def safe_url(url: str) -> str:
    """`url` with its password hidden, for messages."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:  # not parsable: only its scheme
        return url.partition('://')[0] + '://...'


def sqlite_engine_kwargs(url: str) -> dict[str, Any] | None:
    # DBOS on Python 3.12+ stamps rows with SQLite's `unixepoch('subsec')`, which SQLite before 3.42
    # (the system library of many Linux distributions) evaluates to NULL, so DBOS fails to launch.
    # Its connections get a `unixepoch` that understands the modifier; nothing else changes.
    if not url.startswith('sqlite') or sys.version_info < (3, 12) or sqlite3.sqlite_version_info >= (3, 42):
        return None
    from sqlalchemy.engine import make_url

    database = make_url(url).database or ':memory:'
    return {'creator': _connect_with_subsec(database)}


def _connect_with_subsec(database: str) -> Callable[[], sqlite3.Connection]:
    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(database, check_same_thread=False)
        connection.create_function('unixepoch', 1, _unixepoch)
        return connection

    return connect


def _unixepoch(value: object) -> float | int | None:
    if value == 'subsec':
        return time.time()
    if value == 'now':
        return int(time.time())
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None  # what SQLite's own unixepoch gives for text it cannot read
    return int(moment.replace(tzinfo=moment.tzinfo or UTC).timestamp())
