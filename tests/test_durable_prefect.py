"""Durable agentools inside Prefect flows against a real local Prefect server (`tests.prefect_server`).

The ledger pipeline of `tests.durable_agentools` runs in flows: each agentool operation one task; a
retried flow, or a flow run SIGKILLed in an operation (`tests.prefect_worker`) and run again, reads the
completed tasks' persisted results back: each effect once, the output of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, cast
from uuid import UUID

import pytest
from pydantic import BaseModel

from tests.agentools import ROOT, python_env

pytest.importorskip('pydantic_ai.durable_exec.prefect', exc_type=ImportError)

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from pydantic_ai import Agent
from pydantic_ai.agent import AbstractAgent

import agentool.prefect as durable_prefect
from agentool import AgenToolError, AgenToolNotFoundError, ConfigurationError, RoutingConfig, create_agentool
from agentool.durable import unit_key
from tests.durable_agentools import (
    KILL_ENV,
    LEDGER_ENV,
    STEPS,
    LedgerResult,
    build,
    create_ledger,
    expected_entries,
    ledger_rows,
)
from tests.function_pipeline import FAIL_ENV, MODEL_LOG_ENV, pipeline_agent
from tests.prefect_server import prefect_server, prefect_settings

OPERATION_TASK = 'Capability: agentool.operation'

_agents: dict[str, AbstractAgent[Any, Any]] = {}
"""The agents the flows run, by name (a flow's parameters are sent to the server, an agent cannot be)."""


@pytest.fixture(scope='module')
def server() -> Iterator[str]:
    with prefect_server() as url:
        yield url


@pytest.fixture
def prefect(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This test's flows on the server, results and the ledger in its own directory."""
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / 'ledger.sqlite'))
    with prefect_settings(server, tmp_path / 'prefect'):
        yield
    _agents.clear()


def _pipeline(capabilities: list[Any]) -> AbstractAgent[None, str]:
    build()  # the `ledger` and `batch` agentools, in the test's registry
    return pipeline_agent('pipeline_prefect', capabilities)


@flow(name='agentool-tests-run', retries=1, retry_delay_seconds=0, persist_result=False)
async def _run_flow(agent: str, prompt: str) -> Any:
    return (await _agents[agent].run(prompt)).output


_once_flow = _run_flow.with_options(name='agentool-tests-once', retries=0)


@flow(name='agentool-tests-refused-then-append', persist_result=False)
async def _refused_then_append_flow(runs: list[tuple[str, str]], entry: str) -> list[str]:
    """Each bad run's error type, then one append: the flow's one task, if the bad runs made none."""
    refused: list[str] = []
    for agent, prompt in runs:
        try:
            await _agents[agent].run(prompt)
        except AgenToolError as error:
            refused.append(type(error).__name__)
    await _agents['durable'].run(json.dumps({'operation': 'append', 'entry': entry}))
    return refused


async def _task_names(flow_run_id: UUID, count: int) -> list[str]:
    """The names of the flow run's task runs, once the server recorded `count` (from events, a moment later)."""
    runs: list[Any] = []
    async with get_client() as client:
        for _ in range(200):
            filter = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
            runs = await client.read_task_runs(flow_run_filter=filter)
            if len(runs) >= count:
                return sorted(run.name for run in runs)
            await asyncio.sleep(0.05)
    raise AssertionError(f'the server recorded {len(runs)} task runs, not {count}')


async def _flow(agent: str, prompt: str) -> tuple[Any, UUID]:
    state: Any = await cast(Any, _run_flow)(agent, prompt, return_state=True)
    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None
    return await state.result(), flow_run_id


class MarkInput(BaseModel):
    operation: Literal['mark']
    key: str


_marks: list[str | None] = []
"""The `unit_key()` each execution of `mark_mark` saw."""


async def mark_mark(key: str) -> str:
    """Records its unit key (its effect), then fails the first time: as a task that died after its effect."""
    _marks.append(unit_key())
    if len(_marks) == 1:
        raise RuntimeError('failed after the effect')
    return key


async def test_a_task_run_again_by_a_retried_flow_has_the_same_unit_key(prefect: None) -> None:
    _marks.clear()
    create_agentool(
        name='mark',
        input_schema=MarkInput,
        routing_config=RoutingConfig(operation_map={'mark': 'mark_mark'}),
        tools=[mark_mark],
        output_type=str,
    )
    _agents['mark'] = durable_prefect.durable('mark')
    output, _ = await _flow('mark', json.dumps({'operation': 'mark', 'key': 'k'}))
    assert output == 'k'
    # Two executions (the flow's retry ran the failed task again), one key: an effect recorded
    # with it in the first is found by the second.
    assert len(_marks) == 2
    assert _marks[0] is not None
    assert _marks[0] == _marks[1]


def test_the_options_are_checked() -> None:
    with pytest.raises(ConfigurationError) as refused:
        durable_prefect.capabilities(durability=cast(Any, 'PrefectDurability()'))
    assert refused.value.details['option'] == 'durability'
    with pytest.raises(AgenToolNotFoundError):
        durable_prefect.durable('missing')


async def test_each_operation_is_one_task_and_the_results_are_typed(
    prefect: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = (await _pipeline([]).run('process p1')).output  # outside a flow: transparent, plain
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / 'durable.sqlite'))
    _agents['pipeline'] = _pipeline(durable_prefect.capabilities())
    _agents['durable'] = durable_prefect.durable('ledger')
    output, flow_run = await _flow('pipeline', 'process p1')
    assert output == expected
    names = await _task_names(flow_run, STEPS + 4)  # + the model's four requests
    # Each agentool operation one task (the delegating `batch_run` runs in the flow, its three ledger
    # calls are tasks), each model request one; no tool-call task.
    assert sum(name.startswith(OPERATION_TASK) for name in names) == STEPS
    assert all(name.startswith((OPERATION_TASK, 'Model Request')) for name in names), names
    executions, effects = ledger_rows()
    assert sorted(entry for _, entry, _ in effects) == expected_entries(['p1'])
    assert len({unit for unit, _ in executions}) == STEPS  # a key of its own per task
    assert None not in {unit for unit, _ in executions}
    # The durable form: one task; the flow gets the agentool's output type.
    single, flow_run = await _flow('durable', json.dumps({'operation': 'append', 'entry': 'd/first'}))
    assert single == LedgerResult(entry='d/first', seq=0)
    assert [name.startswith(OPERATION_TASK) for name in await _task_names(flow_run, 1)] == [True]
    assert unit_key() is None  # outside a task
    assert durable_prefect.unit_key() is None


async def test_a_retried_flow_reads_completed_operations_back_instead_of_running_them(
    prefect: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = (await _pipeline([]).run('process r1')).output
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / 'durable.sqlite'))
    fail = tmp_path / 'FAIL'
    fail.touch()
    monkeypatch.setenv(FAIL_ENV, str(fail))
    models = tmp_path / 'models.log'
    monkeypatch.setenv(MODEL_LOG_ENV, str(models))
    _agents['pipeline'] = _pipeline(durable_prefect.capabilities())
    # The model fails after the batch: the flow's first attempt fails, its retry finishes the run.
    output, _ = await _flow('pipeline', 'process r1')
    assert not fail.exists()
    # The output of an uninterrupted run: the batch's results (three appends through the injector,
    # typed `LedgerResult`s) came back from Prefect's result storage on the retry.
    assert output == expected
    executions, effects = ledger_rows()
    assert sorted(entry for _, entry, _ in effects) == expected_entries(['r1'])
    assert sorted(entry for _, entry in executions) == expected_entries(['r1'])  # none ran twice
    # The completed model requests were cached too; the failed one ran again.
    assert models.read_text().split() == ['r1:0', 'r1:1', 'r1:2', 'r1:2', 'r1:3']
    # Each completed task's result was persisted (pickled) to the result storage: what a retry reads.
    assert len(list((tmp_path / 'prefect' / 'storage').iterdir())) >= STEPS + 4


def _worker(
    server: str, home: Path, outputs: Path, env: dict[str, str], *jobs: str
) -> subprocess.CompletedProcess[str]:
    """Run `tests.prefect_worker` for `jobs` to its end (or its death), results under `home`."""
    environment = {k: v for k, v in python_env().items() if k != KILL_ENV and not k.startswith('PREFECT_')}
    environment |= {
        'PREFECT_API_URL': server,
        'PREFECT_HOME': str(home),
        'PREFECT_LOCAL_STORAGE_PATH': str(home / 'storage'),
        'PREFECT_LOGGING_TO_API_ENABLED': 'false',
        **env,
    }
    command = [sys.executable, '-m', 'tests.prefect_worker', str(outputs), *jobs]
    return subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize('kill', ['before:3', 'after:3', 'after:5'])
async def test_a_flow_run_killed_in_an_operation_is_run_again_and_each_effect_happens_once(
    prefect: None, server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill: str
) -> None:
    # Killed in the 3rd append (`batch1`, by the delegating operation) or the 5th (`last`, the model's
    # tool call), before its commit or after it (Prefect has not stored the task's result yet).
    expected = (await _pipeline([]).run('process k1')).output  # outside a flow: plain
    ledger, models, outputs, home = (tmp_path / name for name in ('durable.sqlite', 'models.log', 'out', 'home'))
    outputs.mkdir()
    create_ledger(ledger)
    env = {LEDGER_ENV: str(ledger), MODEL_LOG_ENV: str(models)}
    killed = _worker(server, home, outputs, env | {KILL_ENV: kill}, 'k1')
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert not (outputs / 'k1').exists()
    resumed = _worker(server, home, outputs, env, 'k1')
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (outputs / 'k1').read_text() == expected
    executions, effects = ledger_rows(ledger)
    assert sorted(entry for _, entry, _ in effects) == expected_entries(['k1'])
    # Killed after its commit, the append ran again in the same unit (same key) and did nothing new;
    # the two appends before it were not run again.
    assert len(executions) == STEPS + kill.startswith('after')
    assert len({unit for unit, _ in executions}) == STEPS
    # Each of the model's requests was answered once: the completed ones were read back.
    assert models.read_text().split() == ['k1:0', 'k1:1', 'k1:2', 'k1:3']
    # One flow run, run twice: the first crashed, the second completed.
    flow_run = UUID((outputs / 'k1.run').read_text())
    async with get_client() as client:
        run = await client.read_flow_run(flow_run)
        history = await client.read_flow_run_states(flow_run)
    assert run.state is not None
    assert run.state.is_completed()
    states = [state.type.value for state in sorted(history, key=lambda state: state.timestamp)]
    assert states == ['PENDING', 'RUNNING', 'CRASHED', 'RUNNING', 'COMPLETED']


BAD_INPUT = [
    ('durable', 'not json', 'InvalidJSONError', {'agentool': 'ledger', 'position': 0, 'line': 1, 'column': 1}),
    ('durable', '{"operation": "nope"}', 'UnknownOperationError', {'agentool': 'ledger', 'operation': 'nope'}),
    ('durable', '{"operation": "append", "entry": 5}', 'InputValidationError', {'operation': 'append'}),
    ('missing', '{"operation": "append", "entry": "m"}', 'AgenToolNotFoundError', {'name': 'missing'}),
]


async def test_bad_input_fails_the_flow_with_the_typed_error_and_runs_no_task(prefect: None) -> None:
    build()
    _agents['durable'] = durable_prefect.durable('ledger')
    # The model string of an agentool nobody registered: found missing in the flow, at run time.
    _agents['missing'] = Agent('agentool:missing', name='missing', capabilities=durable_prefect.capabilities())
    for agent, prompt, error, details in BAD_INPUT:
        state: Any = await cast(Any, _once_flow)(agent, prompt, return_state=True)
        assert state.is_failed()
        with pytest.raises(AgenToolError) as raised:
            await state.result()
        assert type(raised.value).__name__ == error
        assert details.items() <= raised.value.details.items()
    # Inside one flow, the bad runs made no task: the append after them is the flow's only one.
    state = await cast(Any, _refused_then_append_flow)([run[:2] for run in BAD_INPUT], 'b/first', return_state=True)
    assert await state.result() == [error for *_, error, _ in BAD_INPUT]
    flow_run = state.state_details.flow_run_id
    assert [name.startswith(OPERATION_TASK) for name in await _task_names(flow_run, 1)] == [True]
    assert [entry for _, entry, _ in ledger_rows()[1]] == ['b/first']  # no tool ran for the bad runs
