"""Crash-test helper: `python storage_crash_writer.py PATH COUNT PREFIX`.

Writes COUNT keys to the SQLite store at PATH and prints each key on stdout only after its write
returned (that is, after its commit); the test kills this process at a random moment.
"""

from __future__ import annotations

import asyncio
import sys

from examples.storage import SQLiteStore


async def _write_all(path: str, count: int, prefix: str) -> None:
    store = SQLiteStore(path)
    for index in range(count):
        key = f'{prefix}{index:05d}'
        await store.write(key, {'index': index, 'padding': 'x' * 64})
        sys.stdout.write(key + '\n')
        sys.stdout.flush()
    await store.aclose()


if __name__ == '__main__':
    asyncio.run(_write_all(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
