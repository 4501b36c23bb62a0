"""Helpers of `agentool.dbos`: URLs shown without passwords, SQLite before 3.42, quiet input errors."""

from __future__ import annotations

import logging
import sqlite3
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .errors import InvalidInputError

__all__ = ('quiet_input_errors', 'safe_url', 'sqlite_engine_kwargs')


class _QuietInputErrors(logging.Filter):
    """DBOS's record of a workflow that ended with a typed input error: one INFO line, no traceback.

    DBOS logs every failed workflow at ERROR with its traceback. A rejected input is the caller's
    answer (`run` raises it), not a failure of the worker, so it is shown only at INFO.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, InvalidInputError):
            return True
        record.msg, record.args = f'{record.getMessage()} {type(error).__name__}: {error}', ()
        record.levelno, record.levelname = logging.INFO, 'INFO'
        record.exc_info, record.exc_text = None, None
        return logging.getLogger(record.name).isEnabledFor(logging.INFO)


def quiet_input_errors() -> None:
    """Install the filter on DBOS's logger (idempotent)."""
    logger = logging.getLogger('dbos')
    if not any(isinstance(existing, _QuietInputErrors) for existing in logger.filters):
        logger.addFilter(_QuietInputErrors())


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
