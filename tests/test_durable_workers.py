"""Scale-out on Postgres: worker processes share one DBOS queue of agentool pipeline runs.

A real PostgreSQL server (`tests.postgres_server`) runs on loopback for the module; jobs are enqueued
with `DBOSClient` from this process, which runs no workflow itself.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbos import DBOSClient, EnqueueOptions

import agentool.dbos as durable_dbos
from tests.agentools import ROOT, python_env
from tests.durable_agentools import (
    HOLD_ENV,
    LEDGER_ENV,
    STEPS,
    build,
    create_ledger,
    expected_entries,
    ledger_rows,
    pipeline_prompt,
)
from tests.durable_worker import EXECUTOR_ENV
from tests.postgres_server import postgres_server

JOBS = 8


@pytest.fixture(scope='module')
def postgres() -> Iterator[str]:
    with postgres_server() as url:
        yield url


def _paths(server: str, tmp_path: Path, name: str) -> tuple[str, Path, Path]:
    """The database `name` on the server, the outputs directory and the ledger (in WAL before workers open it)."""
    outputs, ledger = tmp_path / 'outputs', tmp_path / 'ledger.sqlite'
    outputs.mkdir()
    create_ledger(ledger)
    return f'{server.rsplit("/", 1)[0]}/{name}', outputs, ledger


def _start(
    database: str, outputs: Path, ledger: Path, executor: str, *, hold: Path | None = None
) -> subprocess.Popen[str]:
    env = python_env() | {LEDGER_ENV: str(ledger), EXECUTOR_ENV: executor}
    if hold is not None:
        env[HOLD_ENV] = str(hold)
    worker = subprocess.Popen(
        [sys.executable, '-m', 'tests.durable_worker', database, str(outputs), '--queue'],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == 'launched', worker.communicate(timeout=60)[1]
    return worker


def _enqueue(client: DBOSClient, jobs: list[str]) -> None:
    queue, workflow = durable_dbos.QUEUE_NAME, durable_dbos.WORKFLOW_NAME
    for job in jobs:
        options = EnqueueOptions(queue_name=queue, workflow_name=workflow, workflow_id=job, app_version='agentool-1')
        client.enqueue(options, 'pipeline', pipeline_prompt(job))


def _reference(tmp_path: Path, jobs: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The outputs of uninterrupted, non-durable runs."""
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / 'reference.sqlite'))
    agent = build()
    return {job: agent.run_sync(pipeline_prompt(job)).output for job in jobs}


def _check_exactly_once(ledger: Path, jobs: list[str]) -> tuple[int, int]:
    executions, effects = ledger_rows(ledger)
    entries = sorted(entry for _, entry, _ in effects)
    assert entries == expected_entries(jobs)
    assert len(effects) == len(jobs) * STEPS
    return len(executions), len(effects)


def _busy_worker(client: DBOSClient, executors: list[str]) -> str:
    """The executor of the first pending workflow seen with at least one step done."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for status in client.list_workflows(status='PENDING'):
            if status.executor_id in executors and client.list_workflow_steps(status.workflow_id):
                return status.executor_id
        time.sleep(0.02)
    raise AssertionError('no worker was seen in the middle of a job')


def _stop(outputs: Path, workers: list[subprocess.Popen[str]]) -> None:
    (outputs / 'STOP').touch()
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode in (0, -signal.SIGKILL), err


# One worker, and two sharing the queue; three sharing it (one killed) are the test after this one.
@pytest.mark.parametrize('count', [1, 2])
def test_workers_share_the_queue_and_run_each_job_once(
    postgres: str, tmp_path: Path, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = [f'w{count}-job{n}' for n in range(JOBS)]
    expected = _reference(tmp_path, jobs, monkeypatch)
    database, outputs, ledger = _paths(postgres, tmp_path, f'agentool_workers_{count}')
    workers = [_start(database, outputs, ledger, f'worker{n}') for n in range(count)]
    client = DBOSClient(system_database_url=database)
    try:
        _enqueue(client, jobs)
        results = {job: client.retrieve_workflow(job).get_result() for job in jobs}
        executors = {client.retrieve_workflow(job).get_status().executor_id for job in jobs}
    finally:
        client.destroy()
        _stop(outputs, workers)
    assert results == expected
    _check_exactly_once(ledger, jobs)
    assert executors <= {f'worker{n}' for n in range(count)}
    if count > 1:
        assert len(executors) > 1  # the work was shared


def test_a_killed_workers_jobs_finish_on_the_others_without_duplicates(
    postgres: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = [f'kill-job{n}' for n in range(JOBS)]
    expected = _reference(tmp_path, jobs, monkeypatch)
    database, outputs, ledger = _paths(postgres, tmp_path, 'agentool_workers_kill')
    # Jobs wait in the middle (after their first step) while `hold` exists, so the victim cannot
    # finish its jobs between being seen busy and being killed.
    hold = tmp_path / 'HOLD'
    hold.touch()
    workers = [_start(database, outputs, ledger, f'worker{n}', hold=hold) for n in range(3)]
    client = DBOSClient(system_database_url=database)
    try:
        _enqueue(client, jobs)
        # Kill the first worker found in the middle of a job: it has run steps of a job that is not done.
        victim = _busy_worker(client, [f'worker{n}' for n in range(3)])
        workers[int(victim.removeprefix('worker'))].send_signal(signal.SIGKILL)
        workers[int(victim.removeprefix('worker'))].wait(timeout=60)
        hold.unlink()
        survivors = [f'worker{n}' for n in range(3) if f'worker{n}' != victim]
        stranded = [w.workflow_id for w in client.list_workflows(executor_id=victim, status='PENDING')]
        (outputs / f'RECOVER.{survivors[0]}').write_text(victim)
        results = {job: client.retrieve_workflow(job).get_result() for job in jobs}
        finished_by = {job: client.retrieve_workflow(job).get_status().executor_id for job in stranded}
    finally:
        hold.unlink(missing_ok=True)
        client.destroy()
        _stop(outputs, workers)
    assert stranded, 'the victim was killed with no job in progress'
    assert set(finished_by.values()) <= set(survivors)
    assert results == expected
    executions, effects = _check_exactly_once(ledger, jobs)
    sys.stderr.write(
        f'multi-worker kill: {len(stranded)} stranded jobs finished elsewhere, {effects} operations checked, '
        f'{executions - effects} re-executions absorbed, 0 duplicates\n'
    )
