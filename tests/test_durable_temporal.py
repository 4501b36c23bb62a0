"""Durable agentools on a real Temporal server: units, typed results, retries, kills and workers.

The dev server (`tests.temporal_server`) runs on loopback for the session; the agents and workflows come
from `tests.temporal_agentools`. Workers run in this process, or as child processes (`tests.temporal_worker`).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from tests.agentools import ROOT, python_env

pytest.importorskip('pydantic_ai.durable_exec.temporal', exc_type=ImportError)

from pydantic_ai.durable_exec.temporal import TemporalDurability
from temporalio.api.enums.v1 import PendingActivityState, TimeoutType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.workflow import ActivityConfig

import agentool.temporal as durable_temporal
import tests.temporal_agentools as agents
from agentool import AgenToolNotFoundError, ConfigurationError
from agentool.durable import unit_key
from tests.durable_agentools import (
    HOLD_ENV,
    KILL_ENV,
    LEDGER_ENV,
    STEPS,
    create_ledger,
    expected_entries,
    ledger_rows,
    pipeline_prompt,
)
from tests.function_pipeline import MODEL_LOG_ENV
from tests.temporal_server import TemporalUnavailableError, temporal_binary, temporal_server

OPERATION = 'agent__{}__capability__agentool__operation'
SAFETY_NET = timedelta(minutes=5)
"""An execution timeout: a workflow task that failed instead of the workflow would be retried until then."""


@pytest.fixture(scope='session')
def temporal() -> Iterator[str]:
    """The address of a dev server for the session (each xdist worker starts its own)."""
    try:
        temporal_binary()
    except TemporalUnavailableError as error:
        pytest.skip(str(error))
    with temporal_server() as address:
        yield address


@pytest.fixture(autouse=True)
def agentools() -> None:
    """The agents' agentools, in the test's own registry (an in-process worker's tools run there)."""
    agents.register()


def test_the_options_are_checked_before_temporal_sees_them() -> None:
    for bad in ('60s', {'start_to_close_timeout': 'soon'}, {'retry_policy': 3}):
        with pytest.raises(ConfigurationError) as refused:
            durable_temporal.capabilities(activity_config=cast(Any, bad))
        assert refused.value.details['option'] == 'activity_config'
    with pytest.raises(AgenToolNotFoundError):
        durable_temporal.durable('missing')


def test_the_default_activity_config_is_the_documented_one() -> None:
    # The scaling-out guide states these: 60 s to finish, a dead worker noticed within 10 s, 3 attempts.
    durability = cast(TemporalDurability[Any], durable_temporal.capabilities()[0])
    config = durability.activity_config
    assert config.get('start_to_close_timeout') == timedelta(seconds=60)
    assert config.get('heartbeat_timeout') == timedelta(seconds=10)
    policy = config.get('retry_policy')
    assert policy is not None
    assert policy.maximum_attempts == 3
    assert 'InputValidationError' in (policy.non_retryable_error_types or ())


def test_typed_errors_are_not_retried_and_the_given_policy_is_kept() -> None:
    policy = RetryPolicy(maximum_attempts=7, non_retryable_error_types=['MyError'])
    config = ActivityConfig(start_to_close_timeout=timedelta(seconds=5), retry_policy=policy)
    durability = cast(TemporalDurability[Any], durable_temporal.capabilities(activity_config=config)[0])
    applied = durability.activity_config.get('retry_policy')
    assert applied is not None
    names = set(applied.non_retryable_error_types or ())
    assert {'MyError', 'AgenToolError', 'InvalidInputError', 'ToolArgumentError'} <= names
    assert applied.maximum_attempts == 7
    assert policy.non_retryable_error_types == ['MyError']  # the caller's policy is left as it was


def _queue() -> str:
    return f'agentool-{uuid.uuid4().hex}'


async def _start(client: Client, queue: str, run: Any, *args: Any, **options: Any) -> WorkflowHandle[Any, Any]:
    """Start the workflow `run` on `queue` with a fresh id."""
    return await client.start_workflow(run, args=list(args), id=_queue(), task_queue=queue, **options)


async def _activities(handle: WorkflowHandle[Any, Any]) -> list[tuple[str, str]]:
    """(activity type, activity id) of each activity the workflow scheduled, in order."""
    events = (await handle.fetch_history()).events
    field = 'activity_task_scheduled_event_attributes'
    scheduled = [event.activity_task_scheduled_event_attributes for event in events if event.HasField(field)]
    return [(attributes.activity_type.name, attributes.activity_id) for attributes in scheduled]


async def _retried(handle: WorkflowHandle[Any, Any]) -> dict[str, int]:
    """The activities that needed more than one attempt, with the timeout type that failed the previous one."""
    history = await handle.fetch_history()
    types = {
        event.event_id: event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField('activity_task_scheduled_event_attributes')
    }
    return {
        types[started.scheduled_event_id]: started.last_failure.timeout_failure_info.timeout_type
        for event in history.events
        if event.HasField('activity_task_started_event_attributes')
        and (started := event.activity_task_started_event_attributes).attempt > 1
    }


async def _reference(tmp_path: Path, jobs: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The outputs of uninterrupted runs outside a workflow (the capabilities are transparent there)."""
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / 'reference.sqlite'))
    outputs = {job: (await agents.pipeline.run(pipeline_prompt(job))).output for job in jobs}
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / 'ledger.sqlite'))
    return outputs


def _append(entry: object) -> str:
    return json.dumps({'operation': 'append', 'entry': entry})


async def test_each_operation_is_one_activity_with_a_typed_result_and_a_unit_key(
    temporal: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = await _reference(tmp_path, ['u1'], monkeypatch)
    queue = _queue()
    client = await agents.client(temporal)
    async with await agents.worker(temporal, queue):
        pipeline = await _start(client, queue, agents.PipelineWorkflow.run, pipeline_prompt('u1'))
        assert await pipeline.result() == expected['u1']
        singles: dict[str, Any] = {}
        handles: dict[str, WorkflowHandle[Any, Any]] = {}
        for form in ('durable', 'string', 'explicit'):
            handles[form] = await _start(client, queue, agents.AppendWorkflow.run, form, _append(f'{form}/first'))
            singles[form] = await handles[form].result()
    # The pipeline: each agentool operation one activity (the delegating `batch_run` runs in the
    # workflow, its three ledger calls are units), each model request one; no tool-call activity.
    activities = await _activities(pipeline)
    operations = [id for name, id in activities if name == OPERATION.format('pipeline')]
    assert len(operations) == STEPS
    assert len(activities) == STEPS + 4  # + the model's four requests
    assert all(name == OPERATION.format('pipeline') or 'model_request' in name for name, _ in activities)
    # Each effect carries the key of the activity it ran in: workflow id, run id, activity id.
    _, effects = ledger_rows()
    info = await pipeline.describe()
    assert [unit for unit, entry, _ in effects if entry.startswith('u1/')] == [
        f'{info.id}:{info.run_id}:{id}' for id in operations
    ]
    # The other forms: the one activity is the operation, named after the agent.
    agent_names = {'durable': 'ledger', 'string': 'ledger_string', 'explicit': 'ledger_explicit'}
    for form, handle in handles.items():
        assert [name for name, _ in await _activities(handle)] == [OPERATION.format(agent_names[form])]
    # The payload converter returned plain data; the workflow got the agentool's output type back.
    assert singles['durable'] == {'type': 'LedgerResult', 'value': {'entry': 'durable/first', 'seq': 0}}
    assert singles['string'] == {'type': 'str', 'value': '{"entry":"string/first","seq":0}'}
    assert singles['explicit'] == {'type': 'str', 'value': '{"entry":"explicit/first","seq":0}'}
    assert unit_key() is None  # outside an activity


async def test_an_unexpected_error_is_retried_in_its_unit_and_a_typed_error_is_not(temporal: str) -> None:
    queue = _queue()
    client = await agents.client(temporal)
    agents.unit_keys.clear()
    agents.refused_attempts.clear()
    async with await agents.worker(temporal, queue):
        flake = json.dumps({'operation': 'flake', 'key': 'f'})
        output = await (await _start(client, queue, agents.AppendWorkflow.run, 'flaky', flake)).result()
        refuse = json.dumps({'operation': 'refuse', 'key': 'r'})
        with pytest.raises(WorkflowFailureError) as failure:
            await (await _start(client, queue, agents.AppendWorkflow.run, 'flaky', refuse)).result()
    # The first attempt failed and Temporal ran the activity again: same unit, same key.
    assert output['type'] == 'Attempt'
    assert output['value']['attempt'] == 2
    assert len(agents.unit_keys) == 2
    assert agents.unit_keys[0] == agents.unit_keys[1] == output['value']['unit']
    # A typed agentool error fails the workflow after one attempt, its type and message kept.
    assert agents.refused_attempts == [1]
    cause = failure.value.cause
    assert isinstance(cause, ActivityError)
    assert isinstance(cause.cause, ApplicationError)
    assert (cause.cause.type, cause.cause.non_retryable) == ('ToolArgumentError', True)
    assert 'r: refused' in cause.cause.message
    assert cause.cause.details == ({'agentool': 'flaky'},)


def _worker(address: str, queue: str, identity: str, stop: Path, log: Path, **env: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, '-m', 'tests.temporal_worker', address, queue, identity, str(stop)],
        cwd=ROOT,
        env=python_env() | env,
        stdout=subprocess.PIPE,
        stderr=log.open('a'),
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == 'ready', log.read_text()[-3000:]
    return process


def _stop(stop: Path, workers: list[subprocess.Popen[str]]) -> None:
    stop.touch()
    for process in workers:
        process.wait(timeout=60)
        assert process.returncode in (0, -signal.SIGKILL)


@pytest.mark.parametrize('kill', ['before:3', 'after:3'])
async def test_a_worker_killed_in_an_operation_is_replaced_and_each_effect_happens_once(
    temporal: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill: str
) -> None:
    # Killed in the 3rd append (`batch1`, by the delegating operation) before its commit or after it (the
    # effect is there, the activity's result is not): the workflow finishes on a new worker.
    expected = await _reference(tmp_path, ['k1'], monkeypatch)
    ledger, models, stop, log = (tmp_path / name for name in ('ledger.sqlite', 'models.log', 'STOP', 'workers.log'))
    create_ledger(ledger)
    queue = _queue()
    env = {LEDGER_ENV: str(ledger), MODEL_LOG_ENV: str(models)}
    first = _worker(temporal, queue, 'first', stop, log, **env, **{KILL_ENV: kill})
    second: subprocess.Popen[str] | None = None
    try:
        client = await agents.client(temporal)
        handle = await _start(client, queue, agents.PipelineWorkflow.run, pipeline_prompt('k1'))
        assert first.wait(timeout=60) == -signal.SIGKILL
        second = _worker(temporal, queue, 'second', stop, log, **env)
        output = await handle.result()
    finally:
        _stop(stop, [first] if second is None else [first, second])
    assert output == expected['k1']
    executions, effects = ledger_rows(ledger)
    assert sorted(entry for _, entry, _ in effects) == expected_entries(['k1'])
    # Killed after its commit, the append ran again in the same unit (same key) and did nothing new.
    assert len(executions) == STEPS + (kill.startswith('after'))
    assert len({unit for unit, _ in executions}) == STEPS
    # Each of the model's requests was answered once: the new worker replayed them from the history.
    assert models.read_text().split() == ['k1:0', 'k1:1', 'k1:2', 'k1:3']
    # The killed attempt was noticed by its missed heartbeats (not the 30 s start-to-close timeout)
    # and the activity ran again as attempt 2; every other activity ran once.
    assert await _retried(handle) == {OPERATION.format('pipeline'): TimeoutType.TIMEOUT_TYPE_HEARTBEAT}


async def test_two_workers_share_a_queue_and_a_killed_ones_jobs_finish_once(
    temporal: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = [f'w-job{n}' for n in range(4)]
    expected = await _reference(tmp_path, jobs, monkeypatch)
    ledger, hold, stop, log = (tmp_path / name for name in ('ledger.sqlite', 'HOLD', 'STOP', 'workers.log'))
    create_ledger(ledger)
    # Every job waits in its `batch0` append while HOLD exists: the victim is killed mid-batch.
    hold.touch()
    queue = _queue()
    env = {LEDGER_ENV: str(ledger), HOLD_ENV: str(hold)}
    workers = {name: _worker(temporal, queue, name, stop, log, **env) for name in ('w0', 'w1')}
    try:
        client = await agents.client(temporal)
        handles = {job: await _start(client, queue, agents.PipelineWorkflow.run, pipeline_prompt(job)) for job in jobs}
        held = await _held(handles, ledger)
        victim = held[jobs[0]]
        workers[victim].send_signal(signal.SIGKILL)
        workers[victim].wait(timeout=60)
        hold.unlink()
        results = {job: await handle.result() for job, handle in handles.items()}
    finally:
        hold.unlink(missing_ok=True)
        _stop(stop, list(workers.values()))
    assert results == expected
    stranded = [job for job, identity in held.items() if identity == victim]
    assert stranded
    executions, effects = ledger_rows(ledger)
    assert sorted(entry for _, entry, _ in effects) == expected_entries(jobs)
    assert len(effects) == len(jobs) * STEPS
    sys.stderr.write(
        f'temporal kill: {len(stranded)} of {len(jobs)} jobs held by the killed worker finished on the other '
        f'(held by {sorted(set(held.values()))}), {len(executions) - len(effects)} re-executions, 0 duplicates\n'
    )


async def _held(handles: dict[str, WorkflowHandle[Any, Any]], ledger: Path) -> dict[str, str]:
    """The identity of the worker running each job's held `batch0` append, once every job is held."""
    for _ in range(1200):
        held: dict[str, str] = {}
        done = {entry for _, entry in ledger_rows(ledger)[0]}
        for job, handle in handles.items():
            if f'{job}/first' not in done:
                continue  # its pending operation, if any, is the first append, not the held one
            description = await handle.describe()
            for pending in description.raw_description.pending_activities:
                started = pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
                if started and pending.activity_type.name == OPERATION.format('pipeline'):
                    held[job] = pending.last_worker_identity
        if len(held) == len(handles):
            return held
        await asyncio.sleep(0.05)
    raise AssertionError('the jobs never all reached their held activity')


async def _workflow_task_failures(handle: WorkflowHandle[Any, Any]) -> int:
    history = await handle.fetch_history()
    return sum(event.HasField('workflow_task_failed_event_attributes') for event in history.events)


BAD_INPUT = [
    ('durable', 'not json', 'InvalidJSONError', {'agentool': 'ledger', 'position': 0, 'line': 1, 'column': 1}),
    ('string', '{"operation": "nope"}', 'UnknownOperationError', {'agentool': 'ledger', 'operation': 'nope'}),
    ('explicit', _append(5), 'InputValidationError', {'agentool': 'ledger', 'operation': 'append'}),
    ('missing', _append('m'), 'AgenToolNotFoundError', {'agentool': 'missing', 'name': 'missing'}),
]


async def test_bad_input_fails_the_workflow_at_once_with_the_typed_error_and_runs_nothing(temporal: str) -> None:
    queue = _queue()
    client = await agents.client(temporal)
    failures: dict[str, tuple[WorkflowFailureError, WorkflowHandle[Any, Any]]] = {}
    async with await agents.worker(temporal, queue):
        for form, prompt, error, _ in BAD_INPUT:
            handle = await _start(client, queue, agents.AppendWorkflow.run, form, prompt, execution_timeout=SAFETY_NET)
            with pytest.raises(WorkflowFailureError) as failure:
                await handle.result()
            failures[error] = failure.value, handle
    for form, _, error, details in BAD_INPUT:
        failure, handle = failures[error]
        cause = failure.cause
        assert isinstance(cause, ApplicationError), (form, repr(cause))
        assert (cause.type, cause.non_retryable) == (error, True)
        assert details.items() <= cause.details[0].items(), cause.details
        assert await _workflow_task_failures(handle) == 0  # the workflow failed, its task did not
        assert await _activities(handle) == []  # nothing scheduled


async def test_deps_an_activity_cannot_receive_fail_the_workflow_naming_the_field(temporal: str) -> None:
    queue = _queue()
    client = await agents.client(temporal)
    sign = json.dumps({'operation': 'sign', 'key': 'k'})
    async with await agents.worker(temporal, queue):
        # Given no deps, the operation gets those the worker's injector provides.
        assert await (await _start(client, queue, agents.DepsWorkflow.run, sign, False)).result() == 'worker:k'
        handle = await _start(client, queue, agents.DepsWorkflow.run, sign, True, execution_timeout=SAFETY_NET)
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError), repr(cause)
    assert (cause.type, cause.non_retryable) == ('DepsUnavailableError', True)
    assert cause.details[0] == {'deps_type': 'ClerkDeps', 'field': 'lock', 'type': 'lock', 'reason': 'unserialisable'}
    assert "field 'lock'" in cause.message
    assert await _workflow_task_failures(handle) == 0
    assert await _activities(handle) == []


async def test_a_result_over_the_payload_limit_fails_the_workflow_as_payloads_too_large(temporal: str) -> None:
    # The scaling-out guide's numbers: 1.5 MB of text crosses; 2.5 MB is over the dev server's 2 MB
    # limit, which Temporal reports as `PayloadsTooLarge`, not retried.
    queue = _queue()
    client = await agents.client(temporal)
    agents.bulk_attempts.clear()
    async with await agents.worker(temporal, queue):
        fits = json.dumps({'operation': 'text', 'size': 1_500_000})
        output = await (await _start(client, queue, agents.AppendWorkflow.run, 'bulk', fits)).result()
        assert len(output['value']) == 1_500_000
        agents.bulk_attempts.clear()
        over = json.dumps({'operation': 'text', 'size': 2_500_000})
        bulk = await _start(client, queue, agents.AppendWorkflow.run, 'bulk', over, execution_timeout=SAFETY_NET)
        with pytest.raises(WorkflowFailureError) as failure:
            await bulk.result()
    cause = failure.value.cause
    assert isinstance(cause, ActivityError)
    assert isinstance(cause.cause, ApplicationError)
    assert cause.cause.type == 'PayloadsTooLarge'
    assert agents.bulk_attempts == [1]
