"""What one durable operation costs on Temporal and on Prefect, against each engine's floor and pydantic-ai's own.

Rows, each the median wall time per run of interleaved rounds with its spread (min-max), on
servers started for the bench on loopback (`tests.temporal_server`, `tests.prefect_server`):

- **Temporal**: `agentool.temporal.durable('adder')` run in a workflow against a bare workflow
  calling one activity that adds (the floor for one journaled effect; target <= 1.2x) and against
  a pydantic-ai agent (`TestModel` calling a function tool `add` once) with `TemporalDurability`
  in a workflow (target <= 1.0x). One in-process worker runs the workflows and activities.
- **Prefect**: `agentool.prefect.durable('adder')` run in a flow against a bare flow calling one
  task that adds, its result persisted (the floor; target <= 1.2x), and against the same
  pydantic-ai agent with `PrefectDurability` in a flow (target <= 1.0x).

Wall time: what a caller waits for a workflow's or flow's result, the server's round trips included.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from prefect import flow, task
from pydantic_ai import Agent
from pydantic_ai.durable_exec.prefect import PrefectDurability
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalDurability
from pydantic_ai.models.test import TestModel
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

import agentool.prefect as durable_prefect
import agentool.temporal as durable_temporal
from bench.durable_rows import PROMPT, Rows, add, create_adder, ms, ratio
from tests.prefect_server import prefect_server, prefect_settings
from tests.temporal_server import temporal_server

__all__ = ('measure_prefect', 'measure_temporal', 'report', 'section')

QUEUE = 'agentool-bench'

Subject = Callable[[], Awaitable[Any]]


create_adder()

# --- Temporal: the agents are built at import, before the worker registers their activities ----

_temporal_agentool = durable_temporal.durable('adder')
_temporal_pydantic_ai = Agent(
    TestModel(call_tools=['add']),
    name='pydantic_ai_adder',
    tools=[add],
    capabilities=[TemporalDurability(activity_config=durable_temporal.DEFAULT_ACTIVITY_CONFIG)],
)


@activity.defn(name='bench.add')
async def _add_activity(a: int, b: int) -> int:
    return a + b


@workflow.defn(name='bench.bare_activity')
class _BareWorkflow:
    @workflow.run
    async def run(self, a: int, b: int) -> int:
        return await workflow.execute_activity(_add_activity, args=[a, b], start_to_close_timeout=timedelta(seconds=60))


@workflow.defn(name='bench.agentool')
class _AgenToolWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> int:
        return (await _temporal_agentool.run(prompt)).output


@workflow.defn(name='bench.pydantic_ai')
class _PydanticAIWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await _temporal_pydantic_ai.run(prompt)).output


async def _time(subjects: dict[str, Subject], repeats: int, runs: int) -> Rows:
    rows: Rows = {name: [] for name in subjects}
    for subject in subjects.values():  # warm up: imports, workflow sandboxes, first graph runs
        await subject()
        await subject()
    for _ in range(repeats):  # interleaved: every subject once per round
        for name, subject in subjects.items():
            start = time.perf_counter()
            for _ in range(runs):
                await subject()
            rows[name].append((time.perf_counter() - start) / runs)
    return rows


async def measure_temporal(repeats: int, runs: int) -> Rows:
    """Seconds per run of each Temporal subject: `repeats` interleaved rounds of `runs` runs each."""
    with temporal_server() as address:
        client = await Client.connect(address, plugins=[PydanticAIPlugin()])
        runner = SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules('agentool', 'bench', 'tests')
        )
        worker = Worker(
            client,
            task_queue=QUEUE,
            workflows=[_BareWorkflow, _AgenToolWorkflow, _PydanticAIWorkflow],
            activities=[_add_activity],
            plugins=[AgentPlugin(_temporal_agentool), AgentPlugin(_temporal_pydantic_ai)],
            workflow_runner=runner,
        )

        def run(workflow_run: Any, *args: Any) -> Subject:
            return lambda: client.execute_workflow(workflow_run, args=list(args), id=uuid.uuid4().hex, task_queue=QUEUE)

        async with worker:
            return await _time(
                {
                    'bare Temporal activity': run(_BareWorkflow.run, 2, 3),
                    'agentool durable() on Temporal': run(_AgenToolWorkflow.run, PROMPT),
                    'pydantic-ai TemporalDurability': run(_PydanticAIWorkflow.run, 'add'),
                },
                repeats,
                runs,
            )


# --- Prefect ----------------------------------------------------------------------------------------

_prefect_agents: dict[str, Any] = {}


@task(name='bench.add', persist_result=True)
async def _add_task(a: int, b: int) -> int:
    return a + b


@flow(name='bench-bare-task')
async def _bare_flow(a: int, b: int) -> int:
    return await _add_task(a, b)


@flow(name='bench-agent')
async def _agent_flow(agent: str, prompt: str) -> Any:
    return (await _prefect_agents[agent].run(prompt)).output


async def measure_prefect(repeats: int, runs: int) -> Rows:
    """Seconds per run of each Prefect subject: `repeats` interleaved rounds of `runs` runs each."""
    _prefect_agents['agentool'] = durable_prefect.durable('adder')
    _prefect_agents['pydantic_ai'] = Agent(
        TestModel(call_tools=['add']), name='pydantic_ai_adder', tools=[add], capabilities=[PrefectDurability()]
    )
    subjects: dict[str, Subject] = {
        'bare Prefect task': lambda: _bare_flow(2, 3),
        'agentool durable() on Prefect': lambda: _agent_flow('agentool', PROMPT),
        'pydantic-ai PrefectDurability': lambda: _agent_flow('pydantic_ai', 'add'),
    }
    with (
        prefect_server() as url,
        tempfile.TemporaryDirectory(prefix='agentool-bench-') as home,
        prefect_settings(url, Path(home)),
    ):
        return await _time(subjects, repeats, runs)


def _round_ratios(rows: Rows, numerator: str, denominator: str) -> list[float]:
    return [a / b for a, b in zip(rows[numerator], rows[denominator], strict=True)]


def section(engines: dict[str, Rows], *, repeats: int, runs: int) -> str:
    """The `durable` section of docs/benchmarks.md: each engine's two ratios, with targets and results."""
    lines = [
        '## Durable execution',
        '',
        f'Written by `make bench-durable` (`bench/durable_engines.py`): wall time per run on a local server '
        f'started for the bench, median of {repeats} interleaved rounds of {runs} runs, the ratio taken per '
        'round (median, min-max).',
        '',
        '| Engine | Subject vs baseline | Times (median) | Ratio | Target | Result |',
        '| --- | --- | --- | ---: | ---: | --- |',
    ]
    for engine, rows in engines.items():
        floor, agentool, own = rows
        for baseline, target in ((floor, 1.2), (own, 1.0)):
            ratios = _round_ratios(rows, agentool, baseline)
            middle = statistics.median(ratios)
            subject, floor_ms = (statistics.median(rows[name]) * 1000 for name in (agentool, baseline))
            spread = f'{middle:.2f}x ({min(ratios):.2f}-{max(ratios):.2f})'
            result = 'met' if middle <= target else '**missed**'
            lines.append(
                f'| {engine} | `{agentool}` vs `{baseline}` | {subject:.1f} ms vs {floor_ms:.1f} ms | {spread} '
                f'| ≤ {target:.2f}x | {result} |'
            )
    return '\n'.join(lines) + '\n'


def report(rows: Rows, engine: str) -> list[str]:
    """The table's lines for `engine`'s rows: each subject, then the two ratios with their targets."""
    floor, agentool, own = rows
    lines = [f'  {name:<32} {ms(samples)}' for name, samples in rows.items()]
    lines += [
        f'  agentool / bare {engine} floor        = {ratio(rows, agentool, floor)}  (target <= 1.2x)',
        f'  agentool / pydantic-ai {engine}        = {ratio(rows, agentool, own)}  (target <= 1.0x)',
    ]
    return lines
