"""Child process of the DBOS tests: `python -m tests.durable_worker DATABASE OUTPUTS JOB... [--queue|--single]`.

Launches DBOS on DATABASE (SQLite path or Postgres URL), recovering this executor's pending workflows, and
writes each JOB's pipeline output (`workflow id = JOB`) to OUTPUTS/JOB. `--single`: each JOB is one append
(`Agent('agentool:ledger')` when JOB starts with `s`, else `durable('ledger')`). `--queue`: a queue worker
until OUTPUTS/STOP appears, recovering the dead executors OUTPUTS/RECOVER.<its executor id> lists.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from pydantic_ai import Agent

import agentool.dbos as durable_dbos
from tests.durable_agentools import build, pipeline_prompt

EXECUTOR_ENV = 'AGENTOOL_TEST_EXECUTOR'


async def _main(database: str, outputs: Path, jobs: list[str], *, queue: bool, single: bool = False) -> None:
    agent = durable_dbos.register(build(capabilities=durable_dbos.capabilities()))
    string = durable_dbos.register(
        Agent('agentool:ledger', name='ledger_string', capabilities=durable_dbos.capabilities())
    )
    ledger = durable_dbos.durable('ledger')
    await durable_dbos.launch(
        database, executor_id=os.environ.get(EXECUTOR_ENV), polling_interval=0.1, worker_concurrency=2
    )
    sys.stdout.write('launched\n')
    sys.stdout.flush()
    try:
        if queue:
            await _serve(outputs)
            return
        for job in jobs:
            if single:
                job_agent = string if job.startswith('s') else ledger
                output = await durable_dbos.run(job_agent, _append_prompt(job), workflow_id=job)
            else:
                output = await durable_dbos.run(agent, pipeline_prompt(job), workflow_id=job)
            (outputs / job).write_text(str(output))
    finally:
        durable_dbos.shutdown()


def _append_prompt(job: str) -> str:
    return json.dumps({'operation': 'append', 'entry': f'{job}/first'})


async def _serve(outputs: Path) -> None:
    """Work on the queue until OUTPUTS/STOP appears; recover the workers OUTPUTS/RECOVER.<executor> names."""
    orders = outputs / f'RECOVER.{os.environ.get(EXECUTOR_ENV)}'
    while not (outputs / 'STOP').exists():
        if orders.exists():
            dead = orders.read_text().split()
            orders.unlink()
            recovered = await durable_dbos.recover(dead)
            (outputs / f'RECOVERED.{os.environ.get(EXECUTOR_ENV)}').write_text('\n'.join(recovered))
        await asyncio.sleep(0.1)


if __name__ == '__main__':
    queue = '--queue' in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    asyncio.run(_main(args[0], Path(args[1]), args[2:], queue=queue, single='--single' in sys.argv))
