"""Child process of the Prefect kill tests: `python -m tests.prefect_worker OUTPUTS JOB...`.

Runs the pipeline with Prefect durability in one flow run per JOB (its id in OUTPUTS/JOB.run, its output
in OUTPUTS/JOB). A later life marks a flow run whose process was SIGKILLed crashed, as Prefect's runner
does, and runs the *same* flow run again: its completed tasks are read back from the result storage.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun
from prefect.flow_engine import run_flow_async
from prefect.states import Crashed

import agentool.prefect as durable_prefect
from tests.durable_agentools import build, pipeline_prompt
from tests.function_pipeline import pipeline_agent

build()  # the `ledger` and `batch` agentools the pipeline's toolset selects
_agent = pipeline_agent('pipeline_prefect_worker', durable_prefect.capabilities())


@flow(name='agentool-tests-pipeline', persist_result=True)
async def pipeline(job: str) -> str:
    return (await _agent.run(pipeline_prompt(job))).output


async def _run(outputs: Path, job: str) -> str:
    """JOB's output: from its flow run, created now or resumed after its process died."""
    record = outputs / f'{job}.run'
    parameters = {'job': job}
    async with get_client() as client:
        if record.exists():
            run: FlowRun = await client.read_flow_run(UUID(record.read_text()))
            if run.state is not None and run.state.is_completed():
                return await run.state.result()  # pyright: ignore[reportUnknownVariableType]
            # The run's process died in it; its state still says RUNNING.
            await client.set_flow_run_state(run.id, Crashed(message='its process was killed'), force=True)
            run = await client.read_flow_run(run.id)
        else:
            run = await client.create_flow_run(pipeline, parameters=parameters)
            partial = record.with_suffix('.part')
            partial.write_text(str(run.id))
            partial.replace(record)  # the id is there whole, or not at all
    result: Any = await run_flow_async(pipeline, flow_run=run, parameters=parameters)
    return result


async def _main(outputs: Path, jobs: list[str]) -> None:
    for job in jobs:
        if not (outputs / job).exists():
            (outputs / job).write_text(await _run(outputs, job))


if __name__ == '__main__':
    asyncio.run(_main(Path(sys.argv[1]), sys.argv[2:]))
