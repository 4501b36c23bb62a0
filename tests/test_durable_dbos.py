"""Durable agentools on DBOS: pinned persisted names, transparency outside a workflow, and crash/resume.

The crash test runs the pipeline of `tests.durable_agentools` (an LLM agent scripted with the test
double, calling ledger appends and a delegating agentool) in child processes, SIGKILLs them at
seeded points — inside a step before and after its side effect commits, and at random moments —
restarts them until every workflow has finished, and checks: every workflow completes, each
ledger append's side effect happened exactly once, and the outputs equal an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.durable_exec import CapabilityOperationId
from pydantic_ai.durable_exec.dbos import DBOSDurability, DBOSOperationNamer
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import agentool.dbos as durable_dbos
from agentool import AgenToolNotFoundError, AgenToolRegistry, ConfigurationError, Route, RoutingConfig, create_agentool
from agentool.core.registry import use_registry
from agentool.durable import CAPABILITY_ID, OPERATION_NAME, AgenToolDurability, unit_key
from agentool.toolset import AgenToolToolset
from tests.agentools import ROOT
from tests.durable_agentools import KILL_ENV, LEDGER_ENV, STEPS, build, expected_entries, ledger_rows, pipeline_prompt
from tests.durable_store import CALLS, create_store

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
    command = [sys.executable, '-m', 'tests.durable_worker', database, str(outputs), *jobs, *options]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait(worker: subprocess.Popen[str], *exits: int) -> int:
    """The worker's exit status, once it ended with one of `exits` (by default 0, success)."""
    _, err = worker.communicate(timeout=300)
    assert worker.returncode in (exits or (0,)), err
    return worker.returncode


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
        killed += _wait(worker, 0, -signal.SIGKILL) == -signal.SIGKILL
    _wait(_worker(database, outputs, jobs, _env(ledger)))

    # Every workflow completed, with the output of an uninterrupted run.
    reference_ledger = tmp_path / 'reference.sqlite'
    _wait(_worker(str(tmp_path / 'reference-dbos.sqlite'), _mkdir(tmp_path / 'ref'), jobs, _env(reference_ledger)))
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
        _wait(worker, -signal.SIGKILL)
    _wait(_worker(database, outputs, jobs, _env(ledger), '--single'))
    _wait(_worker(str(tmp_path / 'ref.sqlite'), _mkdir(tmp_path / 'ref'), jobs, _env(tmp_path / 'r'), '--single'))
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


def test_capabilities_are_dbos_durability_and_agentool_durability() -> None:
    first, second = durable_dbos.capabilities()
    assert isinstance(first, DBOSDurability)
    assert isinstance(second, AgenToolDurability)
    assert second.unit_key is durable_dbos.unit_key
    assert durable_dbos.unit_key() is None  # outside a step


def test_the_database_defaults_to_the_environment_then_the_user_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(durable_dbos.DATABASE_ENV, str(tmp_path / 'env' / 'db.sqlite3'))
    assert durable_dbos.database_url() == f'sqlite:///{tmp_path}/env/db.sqlite3'
    monkeypatch.setenv(durable_dbos.DATABASE_ENV, 'postgresql://app@db.internal/agentool')
    assert durable_dbos.database_url() == 'postgresql://app@db.internal/agentool'
    monkeypatch.delenv(durable_dbos.DATABASE_ENV)
    monkeypatch.setenv('XDG_DATA_HOME', str(tmp_path / 'data'))
    if sys.platform.startswith('linux'):
        assert durable_dbos.database_url() == f'sqlite:///{tmp_path}/data/agentool/dbos.sqlite3'


@pytest.mark.parametrize('database', [5, '', '   ', 'mysql://app@db/agentool', b'db.sqlite'])
def test_a_database_that_is_no_path_and_no_supported_url_is_refused(
    database: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match='database') as raised:
        durable_dbos.database_url(database)
    assert raised.value.details['option'] == 'database'
    assert list(tmp_path.iterdir()) == []  # nothing written to the working directory


async def test_durable_with_a_registry_runs_that_registrys_agentool() -> None:
    private = AgenToolRegistry()
    with use_registry(private):
        create_store('private_store')
    agent = durable_dbos.durable('private_store', registry=private)
    assert (await agent.run('{"operation": "write", "key": "p", "data": 2}')).output == 'wrote p=2'


def test_durable_names_an_unknown_agentool() -> None:
    with pytest.raises(AgenToolNotFoundError, match="no agentool named 'no_such_store'"):
        durable_dbos.durable('no_such_store')


@pytest.mark.parametrize(
    ('kwargs', 'option'),
    [
        ({'registry': 'r'}, 'registry'),
        ({'step_config': 'retries'}, 'step_config'),
        ({'capabilities': 5}, 'capabilities'),
    ],
)
def test_durable_refuses_options_of_the_wrong_type(kwargs: dict[str, Any], option: str) -> None:
    create_store()
    with pytest.raises(ConfigurationError, match=option) as raised:
        durable_dbos.durable('store', **kwargs)
    assert raised.value.details['option'] == option


def test_capabilities_refuse_a_step_config_of_the_wrong_type() -> None:
    with pytest.raises(ConfigurationError, match='step_config') as raised:
        durable_dbos.capabilities(step_config=5)  # pyright: ignore[reportArgumentType]
    assert raised.value.details['option'] == 'step_config'


@pytest.mark.parametrize('agent', ['store', None, 5])
def test_register_refuses_what_is_not_an_agent(agent: Any) -> None:
    with pytest.raises(ConfigurationError, match='agent') as raised:
        durable_dbos.register(agent)
    assert raised.value.details['option'] == 'agent'


def test_register_refuses_an_agent_without_a_name() -> None:
    with pytest.raises(ConfigurationError, match='with a name'):
        durable_dbos.register(Agent(TestModel()))


def _agent() -> Agent[None, str]:
    return Agent(TestModel(), name='plain')


_BAD_CALLS: dict[str, tuple[Callable[[], Awaitable[object]], str]] = {
    'run-agent': (lambda: durable_dbos.run('plain', 'hi'), 'agent'),  # pyright: ignore[reportArgumentType]
    'run-prompt': (lambda: durable_dbos.run(_agent(), 5), 'prompt'),  # pyright: ignore[reportArgumentType]
    'run-id-int': (lambda: durable_dbos.run(_agent(), 'hi', workflow_id=5), 'workflow_id'),  # pyright: ignore[reportArgumentType]
    'run-id-empty': (lambda: durable_dbos.run(_agent(), 'hi', workflow_id=''), 'workflow_id'),
    'run-id-blank': (lambda: durable_dbos.run(_agent(), 'hi', workflow_id='  '), 'workflow_id'),
    'enqueue-agent': (lambda: durable_dbos.enqueue(None, 'hi'), 'agent'),  # pyright: ignore[reportArgumentType]
    'enqueue-prompt': (lambda: durable_dbos.enqueue(_agent(), b'hi'), 'prompt'),  # pyright: ignore[reportArgumentType]
    'enqueue-id-empty': (lambda: durable_dbos.enqueue(_agent(), 'hi', workflow_id=''), 'workflow_id'),
    'recover-str': (lambda: durable_dbos.recover('worker-3'), 'executor_ids'),
    'recover-int': (lambda: durable_dbos.recover(5), 'executor_ids'),  # pyright: ignore[reportArgumentType]
    'recover-ints': (lambda: durable_dbos.recover([5]), 'executor_ids'),  # pyright: ignore[reportArgumentType]
}


@pytest.mark.parametrize('case', list(_BAD_CALLS))
async def test_bad_arguments_are_refused_by_name(case: str) -> None:
    call, option = _BAD_CALLS[case]
    # Checked before DBOS is asked (it is not running in this process): a wrong argument is named.
    with pytest.raises(ConfigurationError, match=option) as raised:
        await call()
    assert raised.value.details['option'] == option


@pytest.mark.parametrize(
    ('kwargs', 'option'),
    [
        ({'worker_concurrency': 0}, 'worker_concurrency'),
        ({'worker_concurrency': '4'}, 'worker_concurrency'),
        ({'polling_interval': 0}, 'polling_interval'),
        ({'polling_interval': -1.0}, 'polling_interval'),
        ({'polling_interval': '1'}, 'polling_interval'),
        ({'executor_id': 3}, 'executor_id'),
        ({'executor_id': ''}, 'executor_id'),
        ({'app_name': None}, 'app_name'),
        ({'application_version': 1}, 'application_version'),
        ({'log_level': 'LOUD'}, 'log_level'),
        ({'log_level': ['INFO']}, 'log_level'),
    ],
)
async def test_launch_refuses_bad_options_before_starting_dbos(
    kwargs: dict[str, Any], option: str, tmp_path: Path
) -> None:
    try:
        with pytest.raises(ConfigurationError, match=option) as raised:
            await durable_dbos.launch(tmp_path / 'dbos.sqlite3', **kwargs)
    finally:
        durable_dbos.shutdown()  # should a bad option be let through, DBOS must not stay up in this process
    assert raised.value.details['option'] == option


class StepInput(BaseModel):
    operation: Literal['step']
    key: str


async def step_tool(key: str) -> str:
    CALLS.append(f'start {key}')
    await asyncio.sleep(0)  # a parallel run would start the other call here
    CALLS.append(f'end {key}')
    return key


def _two_calls_at_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) > 1:
        return ModelResponse(parts=[TextPart('done')])
    (tool,) = info.function_tools
    return ModelResponse(parts=[ToolCallPart(tool.name, {'key': key}) for key in ('a', 'b')])


async def test_tool_calls_of_a_dbos_durable_agent_run_one_at_a_time() -> None:
    # The guide: tool calls run one at a time, so a recovered workflow meets its steps in the recorded order.
    CALLS.clear()
    routing = RoutingConfig(operation_map={'step': 'step_tool'})
    create_agentool('stepper', StepInput, routing, [step_tool], output_type=str, replace=True)
    toolset = AgenToolToolset(include=['stepper'])
    parallel = Agent(FunctionModel(_two_calls_at_once), name='parallel', toolsets=[toolset])
    assert (await parallel.run('go')).output == 'done'
    assert CALLS == ['start a', 'start b', 'end a', 'end b']  # without the capabilities: in parallel
    CALLS.clear()
    model = FunctionModel(_two_calls_at_once)
    durable = Agent(model, name='sequential', toolsets=[toolset], capabilities=durable_dbos.capabilities())
    assert (await durable.run('go')).output == 'done'
    assert CALLS == ['start a', 'end a', 'start b', 'end b']


def _scene(name: str, directory: Path) -> dict[str, Any]:
    work = directory / 'cwd'
    work.mkdir(parents=True)
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    env.pop(durable_dbos.DATABASE_ENV, None)
    command = [sys.executable, '-m', 'tests.durable_store', name, str(directory)]
    child = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    results = {(line := json.loads(text))['case']: line for text in child.stdout.splitlines() if text.startswith('{')}
    results['cwd'] = {'case': 'cwd', 'files': sorted(p.name for p in work.iterdir())}
    results['files'] = {'case': 'files', 'files': sorted(p.name for p in directory.iterdir())}
    return results


@pytest.fixture(scope='module')
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _scene('runs', tmp_path_factory.mktemp('runs'))


@pytest.fixture(scope='module')
def launches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _scene('launches', tmp_path_factory.mktemp('launches'))


def test_a_durable_run_returns_the_output(runs: dict[str, Any]) -> None:
    assert runs['write']['output'] == 'wrote k=1'


def test_running_a_workflow_id_again_returns_the_recorded_output_without_running_twice(runs: dict[str, Any]) -> None:
    assert runs['write again']['output'] == 'wrote k=1'
    assert runs['write']['calls'] == ['write k']
    assert runs['write again']['calls'] == []  # not run again


def test_enqueue_runs_on_a_launched_worker(runs: dict[str, Any]) -> None:
    assert runs['enqueue']['output'] == 'wrote q=3'


def test_the_unit_key_is_the_workflow_id_and_the_step_id(runs: dict[str, Any]) -> None:
    workflow, step = runs['unit key']['output'].rsplit(':', 1)
    assert workflow == 'w-key'
    assert step.isdigit()


def test_a_call_inside_a_step_runs_in_that_step(runs: dict[str, Any]) -> None:
    outer, inner = runs['nested']['output'].split()
    assert outer == inner
    assert outer.startswith('w-nested:')


def test_invalid_input_in_a_durable_run_is_the_typed_error(runs: dict[str, Any]) -> None:
    for case in ('invalid json', 'invalid json again'):  # again: the recorded error, read back from the journal
        assert runs[case]['error'] == 'InvalidJSONError'
        assert runs[case]['details'] == {'agentool': 'store', 'position': 0, 'line': 1, 'column': 1}
    assert runs['unknown operation']['error'] == 'UnknownOperationError'
    assert runs['unknown operation']['details']['operation'] == 'nope'
    assert runs['invalid input']['error'] == 'InputValidationError'
    assert runs['invalid input']['details']['errors'][0]['loc'] == ['data']
    assert runs['unknown agentool']['error'] == 'AgenToolNotFoundError'
    assert runs['unknown agentool']['details']['name'] == 'missing'
    for case in ('invalid json', 'invalid json again', 'unknown operation', 'invalid input', 'unknown agentool'):
        assert (runs[case]['steps'], runs[case]['calls']) == ([], []), case  # no step recorded, no tool ran


def test_a_tools_exception_propagates_from_a_durable_run(runs: dict[str, Any]) -> None:
    assert runs['tool exception']['error'] == 'ConnectionError'
    assert runs['tool exception']['message'] == 'store unreachable for x'
    assert runs['tool exception']['calls'] == ['boom x']


def test_a_durable_run_gives_the_tool_the_input_as_given(runs: dict[str, Any]) -> None:
    assert runs['secret']['output'] == 's3cr3t'
    assert runs['json field']['output'] == '{"a": 1}'
    assert runs['excluded field']['output'] == 'given'


def test_a_workflow_id_of_another_run_is_refused(runs: dict[str, Any]) -> None:
    for case in ('same id, other prompt', 'same id, other agent', 'enqueue: same id, other prompt'):
        assert runs[case]['error'] == 'ConfigurationError', case
        assert runs[case]['details']['workflow_id'] == 'w-1', case
        assert 'w-1' in runs[case]['message']


def test_step_config_applies_to_the_operation_steps(runs: dict[str, Any]) -> None:
    assert runs['step retries']['output'] == 'got g'
    assert runs['step retries']['calls'] == ['get g'] * 3


def test_durable_with_a_registry_runs_in_a_workflow(runs: dict[str, Any]) -> None:
    assert runs['registry']['output'] == 'wrote p=2'


def test_recover_of_no_dead_worker_recovers_nothing(runs: dict[str, Any]) -> None:
    assert runs['recover']['output'] == []


def test_bad_arguments_after_launch_are_refused_by_name(runs: dict[str, Any]) -> None:
    for case, option in [('bad prompt', 'prompt'), ('bad workflow id', 'workflow_id'), ('bad agent', 'agent')]:
        assert runs[case]['error'] == 'ConfigurationError', case
        assert runs[case]['details']['option'] == option


def test_after_shutdown_a_run_says_to_launch_first(runs: dict[str, Any]) -> None:
    assert runs['after shutdown']['error'] == 'ConfigurationError'
    assert runs['after shutdown']['details'] == {'reason': 'not_launched'}


def test_nothing_is_written_to_the_working_directory(runs: dict[str, Any], launches: dict[str, Any]) -> None:
    assert runs['cwd']['files'] == []
    assert launches['cwd']['files'] == []


def test_launching_again_on_the_same_database_is_harmless(launches: dict[str, Any]) -> None:
    assert launches['launch again']['output'] is None
    assert launches['run after launch again']['output'] == 'wrote k=1'


def test_launching_again_on_another_database_is_refused(launches: dict[str, Any]) -> None:
    assert launches['launch elsewhere']['error'] == 'ConfigurationError'
    assert launches['launch elsewhere']['details']['reason'] == 'already_launched'


def test_a_launch_that_failed_leaves_nothing_behind(launches: dict[str, Any]) -> None:
    assert launches['unreachable']['error'] == 'ConfigurationError'
    assert launches['unreachable']['details']['reason'] == 'launch_failed'
    assert launches['launch after failure']['output'] is None
    assert launches['run after failure']['output'] == 'wrote k=1'
    assert 'good.sqlite3' in launches['files']['files']  # the database of the second launch
    assert 'other.sqlite3' not in launches['files']['files']  # a refused launch creates none
