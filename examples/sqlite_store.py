"""The SQLite store behind the storage agentool: durable key-value storage of JSON values (stdlib only).

This is the store layer; `examples.storage` is the agentool built on it (input schema, tools,
routing) and re-exports every public name here, so `from examples.storage import SQLiteStore`
works too. Importing this module registers no agentool and opens nothing.

Durability: WAL journal, `synchronous=FULL`, one `BEGIN IMMEDIATE ... COMMIT` per write; a write
that returned survives a crash, and a crash never leaves half a write. Async safety: each store
has one connection used by one worker thread, so SQLite never blocks the event loop; a cancelled
caller waits for its transaction to end (committed or rolled back) before the cancellation
propagates. Any SQLite error (a lock held past the store's timeout, a corrupt or unwritable file,
use of a closed store) surfaces as a typed `StoreError` naming the path and the operation, with
the `sqlite3` error as its cause.

The default store (`default_store()`): the innermost `use_store(...)` block's store, else the
embedded default at `default_path()` (`$AGENTOOL_STORAGE_PATH`, else the user-data directory;
never the working directory), opened on its first operation and closed at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, JsonValue

from agentool.errors import AgenToolError
from agentool.paths import user_data_dir

__all__ = (
    'MEMORY',
    'PATH_ENV',
    'DeleteResult',
    'ExistsResult',
    'ListResult',
    'ReadResult',
    'SQLiteStore',
    'StoreError',
    'WriteResult',
    'default_path',
    'default_store',
    'use_store',
)

MEMORY = ':memory:'
"""The path of a private in-memory database (one per store; gone when the store closes)."""

PATH_ENV = 'AGENTOOL_STORAGE_PATH'
"""Environment variable that sets the embedded default store's path."""

_T = TypeVar('_T')


class StoreError(AgenToolError):
    """A store operation failed in SQLite, or the store is closed.

    `details` has `path`, `operation` (`'read'`, `'write'`, ...) and `sqlite_error` (SQLite's error
    name such as `'SQLITE_BUSY'`, or `None`); the `sqlite3` error is the `__cause__`. A path whose
    directory cannot be created (a file in the way, no such root, no permission) adds `os_error`
    (`'FileExistsError'`, ...), with the `OSError` as the cause. A write that
    raised it was not applied: its transaction rolled back.
    """


# --- typed results ---------------------------------------------------------------------------------


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra='forbid')


class ReadResult(_Result):
    """What `read` found."""

    operation: Literal['read'] = 'read'
    key: str
    found: bool
    data: JsonValue = None


class WriteResult(_Result):
    """A committed write; `created` is false when it replaced an existing value."""

    operation: Literal['write'] = 'write'
    key: str
    created: bool


class ListResult(_Result):
    """The keys, in sorted order."""

    operation: Literal['list'] = 'list'
    prefix: str | None = None
    keys: list[str]


class DeleteResult(_Result):
    """A committed delete; `deleted` is false when there was no such key."""

    operation: Literal['delete'] = 'delete'
    key: str
    deleted: bool


class ExistsResult(_Result):
    """Whether a key exists."""

    operation: Literal['exists'] = 'exists'
    key: str
    exists: bool


# --- the store --------------------------------------------------------------------------------------

_SCHEMA = 'CREATE TABLE IF NOT EXISTS agentool_storage (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)'


class SQLiteStore:
    """A key-value store in one SQLite database, safe to use from async code.

    Args:
        path: The database file (its directory is created on first use), or `MEMORY`.
        timeout: Seconds to wait for another process's write lock before `StoreError` (SQLITE_BUSY).
    """

    def __init__(self, path: str | os.PathLike[str] = MEMORY, *, timeout: float = 5.0) -> None:
        self.path = _checked_path(path)
        self.timeout = timeout
        self._connection: sqlite3.Connection | None = None  # opened and used only in the worker
        # One worker thread per store: the connection stays in one thread and operations queue up.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix='agentool-sqlite')
        self._closed = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f'SQLiteStore({self.path!r})'

    # --- operations (each one transaction, run in the worker thread) ---------------------------

    async def read(self, key: str) -> ReadResult:
        """The value under `key`, or `found=False`."""
        return await self._call('read', lambda db: _read(db, key))

    async def write(self, key: str, data: object) -> WriteResult:
        """Store `data` under `key`; returns once the commit is durable.

        `data` must be a JSON value (dicts, lists, strings, numbers, booleans, None); anything else
        raises `TypeError` or `ValueError` before the transaction starts.
        """
        return await self._call('write', lambda db: _write(db, key, data))

    async def list(self, prefix: str | None = None) -> ListResult:
        """The keys (starting with `prefix`, when given), sorted."""
        return await self._call('list', lambda db: _list(db, prefix))

    async def delete(self, key: str) -> DeleteResult:
        """Remove `key`; `deleted=False` when it was not there."""
        return await self._call('delete', lambda db: _delete(db, key))

    async def exists(self, key: str) -> ExistsResult:
        """Whether `key` has a value."""
        return await self._call('exists', lambda db: _exists(db, key))

    # --- lifecycle -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection and stop the worker, after the operations already queued. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._executor.shutdown(wait=True)
        # The worker has ended, so closing from this thread cannot race an operation.
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def aclose(self) -> None:
        """`close()` without blocking the event loop."""
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    # --- worker side ---------------------------------------------------------------------------------

    async def _call(self, operation: str, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:  # so a concurrent close() cannot shut the executor between check and submit
            if self._closed:
                raise StoreError(
                    f'cannot {operation}: store {self.path!r} is closed', path=self.path, operation=operation
                )
            submitted = self._executor.submit(self._in_worker, operation, work)
        future = asyncio.wrap_future(submitted)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # Not started yet: drop it, nothing was applied. Started: a transaction cannot be stopped
            # halfway from here, so wait until it has committed or rolled back before propagating.
            if not submitted.cancel():
                await _wait_through_cancellation(future)
            raise

    def _in_worker(self, operation: str, work: Callable[[sqlite3.Connection], _T]) -> _T:
        try:
            if self._connection is None:
                self._connection = _connect(self.path, self.timeout)
            return work(self._connection)
        except sqlite3.Error as error:
            name: str | None = getattr(error, 'sqlite_errorname', None)
            raise StoreError(
                f'store {self.path!r}: {operation} failed: {error}' + (f' ({name})' if name else ''),
                path=self.path,
                operation=operation,
                sqlite_error=name,
            ) from error
        except OSError as error:  # creating the database's directory: a file in the way, no such root, no permission
            raise StoreError(
                f'store {self.path!r}: {operation} failed: cannot create its directory: {error}',
                path=self.path,
                operation=operation,
                sqlite_error=None,
                os_error=type(error).__name__,
            ) from error


async def _wait_through_cancellation(future: asyncio.Future[Any]) -> None:
    while not future.done():
        try:
            await asyncio.wait({future})
        except asyncio.CancelledError:
            continue  # the first cancellation is re-raised by the caller once the work has ended


def _checked_path(path: object) -> str:
    """`path` as a string, or `StoreError` now for one no file can have (a NUL, not a path at all)."""
    try:
        text = os.fspath(cast('str | os.PathLike[str]', path))
    except TypeError:
        text = None
    if not isinstance(text, str) or '\x00' in text or not text or not _encodable(text):
        shown = repr(path)[:200]
        raise StoreError(
            f'store path {shown} is not a usable file path (a non-empty string without NUL characters)',
            path=shown,
            operation='open',
            sqlite_error=None,
        )
    return text


def _encodable(text: str) -> bool:
    try:
        os.fsencode(text)
        text.encode('utf-8')  # what SQLite is given
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def _connect(path: str, timeout: float) -> sqlite3.Connection:
    if path != MEMORY:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: no implicit transactions; every write says BEGIN/COMMIT itself.
    # check_same_thread=False only so close() can run after the worker ended; all use is in the worker.
    # timeout= sets SQLite's busy timeout before any statement runs.
    db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        if path != MEMORY:  # in-memory databases stay in 'memory' mode and are private: nothing to race
            with _setup_lock:  # threads of this process take turns; other processes are retried below
                _retry_busy(lambda: _enable_wal(db), timeout)
        db.execute('PRAGMA synchronous=FULL')  # fsync the WAL on every commit
        _retry_busy(lambda: db.execute(_SCHEMA), timeout)
    except BaseException:
        db.close()
        raise
    return db


# Opening one file from many connections at once: switching to WAL needs an exclusive lock, and
# SQLite answers SQLITE_BUSY at once (without its busy handler) when waiting could deadlock, so
# the switch is checked first (WAL persists in the file) and retried with backoff until `timeout`.
_setup_lock = threading.Lock()


def _enable_wal(db: sqlite3.Connection) -> None:
    if db.execute('PRAGMA journal_mode').fetchone()[0] != 'wal':
        db.execute('PRAGMA journal_mode=WAL')


def _retry_busy(step: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as error:
            if not _is_busy(error) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _is_busy(error: sqlite3.OperationalError) -> bool:
    return (error.sqlite_errorcode & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)  # extended codes too


@contextmanager
def _transaction(db: sqlite3.Connection) -> Generator[sqlite3.Connection]:
    # IMMEDIATE takes the write lock up front, so the read-then-write below cannot race another process.
    db.execute('BEGIN IMMEDIATE')
    try:
        yield db
        db.execute('COMMIT')
    except BaseException:
        if db.in_transaction:  # a failed COMMIT can leave the transaction open
            db.execute('ROLLBACK')
        raise


def _read(db: sqlite3.Connection, key: str) -> ReadResult:
    row = db.execute('SELECT value FROM agentool_storage WHERE key = ?', (key,)).fetchone()
    if row is None:
        return ReadResult(key=key, found=False)
    return ReadResult(key=key, found=True, data=json.loads(row[0]))


def _write(db: sqlite3.Connection, key: str, data: object) -> WriteResult:
    value = json.dumps(data, allow_nan=False, separators=(',', ':'))  # before BEGIN: may raise
    with _transaction(db):
        created = db.execute('SELECT 1 FROM agentool_storage WHERE key = ?', (key,)).fetchone() is None
        db.execute(
            'INSERT INTO agentool_storage (key, value) VALUES (?, ?) '
            'ON CONFLICT (key) DO UPDATE SET value = excluded.value',
            (key, value),
        )
    return WriteResult(key=key, created=created)


def _list(db: sqlite3.Connection, prefix: str | None) -> ListResult:
    if not prefix:
        rows = db.execute('SELECT key FROM agentool_storage ORDER BY key').fetchall()
    elif (end := _after_prefix(prefix)) is None:
        rows = db.execute('SELECT key FROM agentool_storage WHERE key >= ? ORDER BY key', (prefix,)).fetchall()
    else:  # a range on the key index: exact for any prefix (NUL included), no wildcards, case-sensitive
        rows = db.execute(
            'SELECT key FROM agentool_storage WHERE key >= ? AND key < ? ORDER BY key', (prefix, end)
        ).fetchall()
    return ListResult(prefix=prefix, keys=[row[0] for row in rows])


def _after_prefix(prefix: str) -> str | None:
    """The least string above every string starting with `prefix`; `None` when there is none.

    SQLite compares text as UTF-8 bytes (`BINARY`), which orders like code points: the last code
    point that can grow is incremented (skipping the surrogates, which UTF-8 cannot hold).
    """
    stripped = prefix.rstrip(chr(0x10FFFF))
    if not stripped:
        return None
    following = ord(stripped[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:
        following = 0xE000
    return stripped[:-1] + chr(following)


def _delete(db: sqlite3.Connection, key: str) -> DeleteResult:
    with _transaction(db):
        deleted = db.execute('DELETE FROM agentool_storage WHERE key = ?', (key,)).rowcount > 0
    return DeleteResult(key=key, deleted=deleted)


def _exists(db: sqlite3.Connection, key: str) -> ExistsResult:
    return ExistsResult(key=key, exists=_read(db, key).found)


# --- the default store ----------------------------------------------------------------------------


def default_path() -> str:
    """The embedded default store's path: `$AGENTOOL_STORAGE_PATH`, else the user-data directory.

    Linux: `$XDG_DATA_HOME` or `~/.local/share`; macOS: `~/Library/Application Support`;
    Windows: `%LOCALAPPDATA%`; each followed by `agentool/storage.sqlite3`.
    """
    if configured := os.environ.get(PATH_ENV):
        return configured if configured == MEMORY else os.path.expanduser(configured)
    return str(user_data_dir() / 'storage.sqlite3')


class _EmbeddedDefault:
    """The process-wide default store, opened lazily (the file appears on the first operation)."""

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _store: ClassVar[SQLiteStore | None] = None

    @classmethod
    def get(cls) -> SQLiteStore:
        with cls._lock:
            if cls._store is None:
                cls._store = SQLiteStore(default_path())
                atexit.register(cls._store.close)
            return cls._store


_scoped_store: ContextVar[SQLiteStore | None] = ContextVar('agentool_storage_scoped_store', default=None)


@contextmanager
def use_store(store: SQLiteStore) -> Generator[SQLiteStore]:
    """Make `store` the default store for runs without deps in this block (task-local, nestable)."""
    token = _scoped_store.set(store)
    try:
        yield store
    finally:
        _scoped_store.reset(token)


def default_store() -> SQLiteStore:
    """The store of the innermost `use_store` block, else the embedded default store."""
    return _scoped_store.get() or _EmbeddedDefault.get()
