"""Child process of the Temporal tests: `python -m tests.temporal_worker ADDRESS TASK_QUEUE IDENTITY STOP`.

A worker of TASK_QUEUE (`tests.temporal_agentools`) named IDENTITY until the file STOP appears; prints
`ready` once it polls. The ledger path and kill point come from the environment.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.temporal_agentools import worker


async def _main(address: str, task_queue: str, identity: str, stop: Path) -> None:
    async with await worker(address, task_queue, identity=identity):
        sys.stdout.write('ready\n')
        sys.stdout.flush()
        while not stop.exists():  # noqa: ASYNC110, ASYNC240 - another process creates it
            await asyncio.sleep(0.1)


if __name__ == '__main__':
    asyncio.run(_main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])))
    # The worker has shut down cleanly. Leave without the interpreter's teardown, in which the
    # Temporal SDK's native runtime can abort (SIGABRT, seen once in a full parallel run) while its
    # threads are torn down: the test reads a clean stop as exit status 0.
    sys.stdout.flush()
    os._exit(0)
