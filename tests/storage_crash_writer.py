"""Storage test helper: `python storage_crash_writer.py PATH COUNT PREFIX [START_AT]`.

Writes COUNT keys to the SQLite store at PATH and prints each key on stdout only after its write
returned (that is, after its commit). The crash test kills this process at a random moment; the
stress test starts several at one wall-clock instant START_AT, so they open one new file together.
"""

from __future__ import annotations

import asyncio
import sys
import time

from examples.storage import SQLiteStore


async def _write_all(path: str, count: int, prefix: str, start_at: float) -> None:
    await asyncio.sleep(max(0.0, start_at - time.time()))
    store = SQLiteStore(path)
    for index in range(count):
        key = f'{prefix}{index:05d}'
        await store.write(key, {'index': index, 'padding': 'x' * 64})
        sys.stdout.write(key + '\n')
        sys.stdout.flush()
    await store.aclose()


if __name__ == '__main__':
    start_at = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    asyncio.run(_write_all(sys.argv[1], int(sys.argv[2]), sys.argv[3], start_at))
