"""Durable agentools on DBOS: pinned persisted names, transparency outside a workflow, and crash/resume.

The crash test runs the pipeline of `tests.durable_agentools` (an LLM agent scripted with the test
double, calling ledger appends and a delegating agentool) in child processes, SIGKILLs them at
seeded points — inside a step before and after its side effect commits, and at random moments —
restarts them until every workflow has finished, and checks: every workflow completes, each
ledger append's side effect happened exactly once, and the outputs equal an uninterrupted run.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec import CapabilityOperationId
from pydantic_ai.durable_exec.dbos import DBOSOperationNamer
from pydantic_ai.models.test import TestModel

import agentool.dbos as durable_dbos
from agentool import ConfigurationError, Route
from agentool.durable import CAPABILITY_ID, OPERATION_NAME, AgenToolDurability, unit_key
from tests.durable_agentools import KILL_ENV, LEDGER_ENV, STEPS, build, expected_entries, ledger_rows, pipeline_prompt

ROOT = Path(__file__).resolve().parent.parent
HEAVY = bool(os.environ.get('AGENTOOL_FUZZ'))
JOBS = 6 if HEAVY else 3
STEP_KILLS = 16 if HEAVY else 2
"""Rounds killed by the ledger tool itself at a seeded execution, before or after its commit.

By default the fewest that cover each kill point (one before a commit, one after); `make fuzz` more."""
TIMED_KILLS = 8 if HEAVY else 1
"""Rounds killed by the test at a seeded moment after the worker launched."""


def test_persisted_names_are_pinned() -> None:
    # Persisted compatibility data: in-flight workflows find their steps by these names. Changing
    # one strands them, so a change here must come with a migration, never as a rename.
    assert (CAPABILITY_ID, OPERATION_NAME) == ('agentool', 'operation')
    assert AgenToolDurability().id == 'agentool'
    namer = DBOSOperationNamer('pipeline')
    assert namer.operation_name(CapabilityOperationId(CAPABILITY_ID, operation=OPERATION_NAME)) == (
        'pipeline__capability__agentool.operation'
    )
    assert (durable_dbos.WORKFLOW_NAME, durable_dbos.QUEUE_NAME) == ('agentool.run', 'agentool')


def test_routes_are_durable_unless_opted_out() -> None:
    assert Route(tool='t').durable is True
    assert Route(tool='t', durable=False).durable is False


async def test_outside_a_workflow_a_durable_agent_runs_as_a_plain_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / 'plain.sqlite'))
    plain = await build().run(pipeline_prompt('a'))
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / 'durable.sqlite'))
    durable = await build(capabilities=durable_dbos.capabilities()).run(pipeline_prompt('a'))
    assert durable.output == plain.output
    assert 'batch_run={"job":"a","seqs":[1,2,3]}' in plain.output
    executions, effects = ledger_rows()
    assert [entry for _, entry in executions] == ['a/first', 'a/batch0', 'a/batch1', 'a/batch2', 'a/last']
    assert {unit for unit, _, _ in effects} == {None}  # no durable unit, so no unit key
    assert unit_key() is None


@pytest.mark.parametrize('function', ['run', 'run with an id', 'enqueue', 'recover'])
async def test_a_call_before_launch_says_to_launch_first(function: str) -> None:
    # DBOS is launched only in worker subprocesses, never in the test process.
    agent = Agent(TestModel(), name='plain')
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        'run': lambda: durable_dbos.run(agent, 'hi'),
        'run with an id': lambda: durable_dbos.run(agent, 'hi', workflow_id='w-1'),
        'enqueue': lambda: durable_dbos.enqueue(agent, 'hi'),
        'recover': lambda: durable_dbos.recover(['gone']),
    }
    with pytest.raises(ConfigurationError, match=r'needs DBOS running: call `await agentool.dbos.launch\(...\)` first'):
        await calls[function]()


def test_database_url_takes_paths_and_urls(tmp_path: Path) -> None:
    assert durable_dbos.database_url(tmp_path / 'x' / 'db.sqlite') == f'sqlite:///{tmp_path}/x/db.sqlite'
    assert durable_dbos.database_url('postgresql://u@127.0.0.1:5/db') == 'postgresql://u@127.0.0.1:5/db'
    assert durable_dbos.default_database_path().parts[-2:] == ('agentool', 'dbos.sqlite3')


def _env(ledger: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    env[LEDGER_ENV] = str(ledger)
    env.update(extra)
    return env


def _worker(database: str, outputs: Path, jobs: list[str], env: dict[str, str], *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, '-m', 'tests.durable_worker', database, str(outputs), *jobs, *options],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_crash_and_resume_runs_every_operation_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(15)
    jobs = [f'job{n}' for n in range(JOBS)]
    ledger, outputs, database = tmp_path / 'ledger.sqlite', tmp_path / 'outputs', str(tmp_path / 'dbos.sqlite')
    outputs.mkdir()
    total = JOBS * STEPS
    # Kill points inside steps: the n-th committed execution, just before or just after its commit.
    step_kills = sorted(rng.sample(range(1, total + 1), STEP_KILLS))
    phases = (['before', 'after'] * STEP_KILLS)[:STEP_KILLS]  # both kill points, whatever the count
    rng.shuffle(phases)
    plan = [(f'{phase}:{n}', None) for phase, n in zip(phases, step_kills, strict=False)]
    plan += [(None, rng.uniform(0.0, 1.5)) for _ in range(TIMED_KILLS)]
    killed = 0
    for kill_at, delay in plan:
        executions = len(ledger_rows(ledger)[0]) if ledger.exists() else 0
        if kill_at is not None and int(kill_at.split(':')[1]) <= executions:
            continue  # a re-execution already passed this point
        extra = {KILL_ENV: kill_at} if kill_at is not None else {}
        worker = _worker(database, outputs, jobs, _env(ledger, **extra))
        if delay is not None:
            assert worker.stdout is not None
            worker.stdout.readline()  # 'launched'
            time.sleep(delay)
            worker.send_signal(signal.SIGKILL)
        _, err = worker.communicate(timeout=300)
        if worker.returncode == -signal.SIGKILL:
            killed += 1
        else:
            assert worker.returncode == 0, err
    finisher = _worker(database, outputs, jobs, _env(ledger))
    _, err = finisher.communicate(timeout=300)
    assert finisher.returncode == 0, err

    # Every workflow completed, with the output of an uninterrupted run.
    reference_ledger = tmp_path / 'reference.sqlite'
    reference = _worker(str(tmp_path / 'reference-dbos.sqlite'), _mkdir(tmp_path / 'ref'), jobs, _env(reference_ledger))
    _, err = reference.communicate(timeout=300)
    assert reference.returncode == 0, err
    for job in jobs:
        assert (outputs / job).read_text() == (tmp_path / 'ref' / job).read_text()

    # Each operation's side effect happened exactly once; re-executions were absorbed by the unit key.
    executions, effects = ledger_rows(ledger)
    entries = [entry for _, entry, _ in effects]
    assert sorted(entries) == expected_entries(jobs)
    assert len(set(entries)) == len(entries)  # duplicates: none
    assert len({unit for unit, _, _ in effects}) == len(effects)
    assert killed >= STEP_KILLS // 2
    _report(
        f'crash/resume: {killed} workers killed, {len(effects)} operations checked, '
        f'{len(executions) - len(effects)} step re-executions absorbed, 0 duplicates'
    )


def test_single_operations_resume_after_a_kill_before_and_after_their_effect(tmp_path: Path) -> None:
    # One append per job: `s*` by `Agent('agentool:ledger', capabilities=capabilities())`, `d*` by
    # `durable('ledger')`. `*b` is killed just before its append commits (nothing happened), `*a`
    # just after (the effect committed, DBOS has not recorded the step): its step runs again.
    ledger, outputs, database = tmp_path / 'ledger.sqlite', _mkdir(tmp_path / 'outputs'), str(tmp_path / 'dbos.sqlite')
    jobs = ['sb', 'db', 'sa', 'da']
    for count, kill_at in ((1, 'before:1'), (2, 'before:2'), (3, 'after:3'), (4, 'after:5')):
        # Each worker first recovers the job the previous one was killed in, then dies in the next.
        worker = _worker(database, outputs, jobs[:count], _env(ledger, **{KILL_ENV: kill_at}), '--single')
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == -signal.SIGKILL, err
    finisher = _worker(database, outputs, jobs, _env(ledger), '--single')
    _, err = finisher.communicate(timeout=300)
    assert finisher.returncode == 0, err
    reference = _worker(str(tmp_path / 'ref.sqlite'), _mkdir(tmp_path / 'ref'), jobs, _env(tmp_path / 'r'), '--single')
    _, err = reference.communicate(timeout=300)
    assert reference.returncode == 0, err
    for job in jobs:
        assert (outputs / job).read_text() == (tmp_path / 'ref' / job).read_text()
        assert f'{job}/first' in (outputs / job).read_text()
    executions, effects = ledger_rows(ledger)
    assert [entry for _, entry, _ in effects] == [f'{job}/first' for job in jobs]  # each effect once
    assert [entry for _, entry in executions] == [
        'sb/first',
        'db/first',
        'sa/first',
        'sa/first',
        'da/first',
        'da/first',
    ]
    assert [unit for unit, _, _ in effects] == [f'{job}:1' for job in jobs]  # the operation: the only step


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def _report(line: str) -> None:
    sys.stderr.write(line + '\n')
