"""Held-out tests of durable execution, from `docs/guides/scaling-out.md` and the docstrings of
`agentool.durable` and `agentool.dbos`: each documented behaviour, and misuse of the public API.

Durable agents outside a workflow run their units inline, so those tests need no engine. The DBOS
scenes launch DBOS in a child process (`python -m tests.test_durable_audit SCENE DIRECTORY`), as the
other DBOS tests do, and read back what it printed: one JSON object per case.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, Json, SecretStr
from pydantic_ai import Agent, ApprovalRequired, CallDeferred
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import agentool.dbos as durable_dbos
from agentool import (
    AgenToolNotFoundError,
    AgenToolRegistry,
    ConfigurationError,
    Route,
    RoutingConfig,
    create_agentool,
    get_injector,
)
from agentool.core.registry import use_registry
from agentool.durable import AgenToolDurability, typed_result, unit_key
from agentool.toolset import AgenToolToolset

ROOT = Path(__file__).resolve().parent.parent

# --- agentools used here ---------------------------------------------------------------------------

CALLS: list[str] = []


class StoreInput(BaseModel):
    operation: Literal['write', 'boom', 'key', 'nested', 'secret', 'parse', 'hidden', 'ask', 'defer']
    key: str = ''
    data: int = 0
    token: SecretStr = SecretStr('')
    payload: Json[dict[str, int]] = Field(default_factory=dict)
    note: str = Field(default='default', exclude=True)


async def store_write(key: str, data: int) -> str:
    CALLS.append(f'write {key}')
    return f'wrote {key}={data}'


async def store_boom(key: str) -> str:
    CALLS.append(f'boom {key}')
    raise ConnectionError(f'store unreachable for {key}')


async def store_key() -> str:
    return str(unit_key())


async def store_nested() -> str:
    """A unit calling another operation: that call runs directly, inside this unit."""
    inner = await get_injector().call('store', {'operation': 'key'})
    return f'{unit_key()} {inner}'


async def store_secret(token: SecretStr) -> str:
    return token.get_secret_value()


async def store_parse(payload: dict[str, int]) -> str:
    return json.dumps(payload)


async def store_hidden(note: str) -> str:
    return note


async def store_ask(key: str) -> str:
    CALLS.append(f'ask {key}')
    raise ApprovalRequired()


async def store_defer(key: str) -> str:
    CALLS.append(f'defer {key}')
    raise CallDeferred()


def _retried(tool: str) -> Route:
    return Route(tool=tool, idempotent=True, retries=2)


def create_store(name: str = 'store', *, durable: bool = False) -> Agent[Any, Any]:
    """An agentool with a side effect, a failing tool, and inputs whose JSON form is not the value."""
    return create_agentool(
        name=name,
        input_schema=StoreInput,
        routing_config=RoutingConfig(
            operation_map={
                'write': 'store_write',
                'boom': 'store_boom',
                'key': 'store_key',
                'nested': 'store_nested',
                'secret': 'store_secret',
                'parse': 'store_parse',
                'hidden': 'store_hidden',
                'ask': _retried('store_ask'),
                'defer': _retried('store_defer'),
            }
        ),
        tools=[
            *(store_write, store_boom, store_key, store_nested),
            *(store_secret, store_parse, store_hidden, store_ask, store_defer),
        ],
        output_type=str,
        capabilities=[AgenToolDurability()] if durable else [],
        replace=True,
    )


class FlakyInput(BaseModel):
    operation: Literal['get']
    key: str


async def flaky_get(key: str) -> str:
    CALLS.append(f'get {key}')
    if CALLS.count(f'get {key}') < 3:
        raise ConnectionError(f'attempt {CALLS.count(f"get {key}")} failed')
    return f'got {key}'


def create_flaky() -> None:
    create_agentool(
        name='flaky',
        input_schema=FlakyInput,
        routing_config=RoutingConfig(operation_map={'get': 'flaky_get'}),
        tools=[flaky_get],
        output_type=str,
        replace=True,
    )


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


# --- the guide's claims, checked in this process ----------------------------------------------------


def test_the_guides_route_example() -> None:
    assert (Route(tool='storage_read').durable, Route(tool='order_place', durable=False).durable, unit_key()) == (
        True,
        False,
        None,
    )


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


@pytest.mark.parametrize(
    ('prompt', 'output'),
    [
        ({'operation': 'write', 'key': 'k', 'data': 1}, 'wrote k=1'),
        ({'operation': 'secret', 'token': 's3cr3t'}, 's3cr3t'),
        ({'operation': 'parse', 'payload': '{"a": 1}'}, '{"a": 1}'),
        ({'operation': 'hidden', 'note': 'given'}, 'given'),
    ],
    ids=['plain', 'secret', 'json-field', 'excluded-field'],
)
async def test_a_durable_unit_gets_the_input_the_plain_agentool_gets(prompt: dict[str, Any], output: str) -> None:
    # The unit's input travels as JSON text; the tool must still see the value the caller gave.
    create_store('plain_store')
    create_store('durable_store', durable=True)
    assert (await get_injector().run('plain_store', prompt)).output == output
    assert (await get_injector().run('durable_store', prompt)).output == output


@pytest.mark.parametrize(('operation', 'raised'), [('ask', ApprovalRequired), ('defer', CallDeferred)])
async def test_a_deferral_is_not_retried_as_a_failure(operation: str, raised: type[Exception]) -> None:
    # `Route(retries=...)` retries unexpected exceptions; asking for approval or deferring is not one.
    create_store('durable_store', durable=True)
    with pytest.raises(raised):
        await get_injector().run('durable_store', {'operation': operation, 'key': 'x'})
    assert [f'{operation} x'] == CALLS


class RelayInput(BaseModel):
    operation: Literal['relay']
    key: str
    deps: bool = False


async def relay_get(key: str, deps: bool) -> str:
    """Orchestration (`durable=False`): the flaky call is the unit, unless it is given deps."""
    data = {'operation': 'get', 'key': key}
    return await (get_injector().call('flaky', data, deps={}) if deps else get_injector().call('flaky', data))


@pytest.mark.parametrize('deps', [False, True])
async def test_an_injector_call_with_explicit_deps_is_not_a_unit(deps: bool) -> None:
    # The guide: `injector.call` made by workflow code is a unit (here: retried by its route), except with `deps=`.
    create_agentool(
        name='flaky',
        input_schema=FlakyInput,
        routing_config=RoutingConfig(operation_map={'get': Route(tool='flaky_get', idempotent=True, retries=2)}),
        tools=[flaky_get],
        output_type=str,
        replace=True,
    )
    create_agentool(
        name='relay',
        input_schema=RelayInput,
        routing_config=RoutingConfig(operation_map={'relay': Route(tool='relay_get', durable=False)}),
        tools=[relay_get],
        output_type=str,
        dependencies=['flaky'],
        capabilities=[AgenToolDurability()],
        replace=True,
    )
    relay = get_injector().run('relay', {'operation': 'relay', 'key': 'r', 'deps': deps})
    if deps:
        with pytest.raises(ConnectionError, match='attempt 1 failed'):
            await relay
        assert CALLS == ['get r']
    else:
        assert (await relay).output == 'got r'
        assert CALLS == ['get r'] * 3


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


@pytest.mark.parametrize(
    ('call', 'option'),
    [
        (lambda: durable_dbos.run('plain', 'hi'), 'agent'),  # pyright: ignore[reportArgumentType]
        (lambda: durable_dbos.run(_agent(), 5), 'prompt'),  # pyright: ignore[reportArgumentType]
        (lambda: durable_dbos.run(_agent(), 'hi', workflow_id=5), 'workflow_id'),  # pyright: ignore[reportArgumentType]
        (lambda: durable_dbos.run(_agent(), 'hi', workflow_id=''), 'workflow_id'),
        (lambda: durable_dbos.run(_agent(), 'hi', workflow_id='  '), 'workflow_id'),
        (lambda: durable_dbos.enqueue(None, 'hi'), 'agent'),  # pyright: ignore[reportArgumentType]
        (lambda: durable_dbos.enqueue(_agent(), b'hi'), 'prompt'),  # pyright: ignore[reportArgumentType]
        (lambda: durable_dbos.enqueue(_agent(), 'hi', workflow_id=''), 'workflow_id'),
        (lambda: durable_dbos.recover('worker-3'), 'executor_ids'),
        (lambda: durable_dbos.recover(5), 'executor_ids'),  # pyright: ignore[reportArgumentType]
        (lambda: durable_dbos.recover([5]), 'executor_ids'),  # pyright: ignore[reportArgumentType]
    ],
    ids=[
        'run-agent',
        'run-prompt',
        'run-id-int',
        'run-id-empty',
        'run-id-blank',
        'enqueue-agent',
        'enqueue-prompt',
        'enqueue-id-empty',
        'recover-str',
        'recover-int',
        'recover-ints',
    ],
)
async def test_bad_arguments_are_refused_by_name(call: Callable[[], Awaitable[object]], option: str) -> None:
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
    create_agentool(
        name='stepper',
        input_schema=StepInput,
        routing_config=RoutingConfig(operation_map={'step': 'step_tool'}),
        tools=[step_tool],
        output_type=str,
        replace=True,
    )
    toolset = AgenToolToolset(include=['stepper'])
    parallel = Agent(FunctionModel(_two_calls_at_once), name='parallel', toolsets=[toolset])
    assert (await parallel.run('go')).output == 'done'
    assert CALLS == ['start a', 'start b', 'end a', 'end b']  # without the capabilities: in parallel
    CALLS.clear()
    model = FunctionModel(_two_calls_at_once)
    durable = Agent(model, name='sequential', toolsets=[toolset], capabilities=durable_dbos.capabilities())
    assert (await durable.run('go')).output == 'done'
    assert CALLS == ['start a', 'end a', 'start b', 'end b']


def test_typed_result_passes_an_in_process_result_as_it_is() -> None:
    create_store()
    from agentool import get_registry

    manager = get_registry().get_manager('store')
    input = manager.validate_python({'operation': 'write', 'key': 'k'})
    assert typed_result(manager, input, 'wrote k=0') == 'wrote k=0'


# --- DBOS scenes, in a child process ------------------------------------------------------------------


def _scene(name: str, directory: Path) -> dict[str, Any]:
    work = directory / 'cwd'
    work.mkdir(parents=True)
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    env.pop(durable_dbos.DATABASE_ENV, None)
    child = subprocess.run(
        [sys.executable, '-m', 'tests.test_durable_audit', name, str(directory)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
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


# --- the child process ------------------------------------------------------------------------------


async def _case(case: str, call: Callable[[], Awaitable[Any]], **extra: Any) -> None:
    CALLS.clear()
    line: dict[str, Any] = {'case': case}
    try:
        line['output'] = await call()
    except Exception as error:
        line.update(error=type(error).__name__, message=str(error), details=getattr(error, 'details', None))
    line.update(calls=list(CALLS), **extra)
    sys.stdout.write(json.dumps(line, default=repr) + '\n')
    sys.stdout.flush()


async def _runs(directory: Path) -> None:
    create_store()
    create_flaky()
    private = AgenToolRegistry()
    with use_registry(private):
        create_store('private_store')
    store = durable_dbos.durable('store')
    other = durable_dbos.register(Agent(TestModel(custom_output_text='other'), name='other'))
    flaky = durable_dbos.durable(
        'flaky', step_config={'retries_allowed': True, 'max_attempts': 3, 'interval_seconds': 0.01}
    )
    mine = durable_dbos.durable('private_store', registry=private)
    await durable_dbos.launch(directory / 'dbos.sqlite3', polling_interval=0.05)
    run, enqueue = durable_dbos.run, durable_dbos.enqueue
    write = '{"operation": "write", "key": "k", "data": 1}'
    try:
        await _case('write', lambda: run(store, write, workflow_id='w-1'))
        await _case('write again', lambda: run(store, write, workflow_id='w-1'))
        await _case('same id, other prompt', lambda: run(store, write.replace('"k"', '"j"'), workflow_id='w-1'))
        await _case('same id, other agent', lambda: run(other, write, workflow_id='w-1'))
        await _case('enqueue: same id, other prompt', lambda: _result(enqueue(store, '{}', workflow_id='w-1')))
        await _case('enqueue', lambda: _result(enqueue(store, '{"operation": "write", "key": "q", "data": 3}')))
        await _case('unit key', lambda: run(store, '{"operation": "key"}', workflow_id='w-key'))
        await _case('nested', lambda: run(store, '{"operation": "nested"}', workflow_id='w-nested'))
        await _case('invalid json', lambda: run(store, 'not json', workflow_id='w-bad'))
        await _case('invalid json again', lambda: run(store, 'not json', workflow_id='w-bad'))
        await _case('unknown operation', lambda: run(store, '{"operation": "nope"}'))
        await _case('tool exception', lambda: run(store, '{"operation": "boom", "key": "x"}'))
        await _case('secret', lambda: run(store, '{"operation": "secret", "token": "s3cr3t"}'))
        await _case('json field', lambda: run(store, json.dumps({'operation': 'parse', 'payload': '{"a": 1}'})))
        await _case('excluded field', lambda: run(store, '{"operation": "hidden", "note": "given"}'))
        await _case('step retries', lambda: run(flaky, '{"operation": "get", "key": "g"}'))
        await _case('registry', lambda: run(mine, '{"operation": "write", "key": "p", "data": 2}'))
        await _case('recover', lambda: durable_dbos.recover(['nobody']))
        await _case('bad prompt', lambda: run(store, 5))  # pyright: ignore[reportArgumentType]
        await _case('bad workflow id', lambda: run(store, write, workflow_id=''))
        await _case('bad agent', lambda: run('store', write))  # pyright: ignore[reportArgumentType]
    finally:
        durable_dbos.shutdown()
    await _case('after shutdown', lambda: run(store, write))


async def _result(handle: Awaitable[Any]) -> Any:
    return await (await handle).get_result()


async def _launches(directory: Path) -> None:
    create_store()
    store = durable_dbos.durable('store')
    write = '{"operation": "write", "key": "k", "data": 1}'
    await _case('unreachable', lambda: durable_dbos.launch('postgresql://nobody@127.0.0.1:1/none'))
    await _case('launch after failure', lambda: durable_dbos.launch(directory / 'good.sqlite3'))
    try:
        await _case('run after failure', lambda: durable_dbos.run(store, write, workflow_id='w-1'))
        await _case('launch again', lambda: durable_dbos.launch(directory / 'good.sqlite3'))
        await _case('run after launch again', lambda: durable_dbos.run(store, write, workflow_id='w-1'))
        await _case('launch elsewhere', lambda: durable_dbos.launch(directory / 'other.sqlite3'))
    finally:
        durable_dbos.shutdown()


SCENES: dict[str, Callable[[Path], Coroutine[Any, Any, None]]] = {'runs': _runs, 'launches': _launches}

if __name__ == '__main__':
    asyncio.run(SCENES[sys.argv[1]](Path(sys.argv[2])))
