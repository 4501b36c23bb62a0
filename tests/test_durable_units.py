"""Every form of agentool run on DBOS journals each operation as one step, and nothing else of its own.

The forms: `durable(name)` (first run and a lean one), the model string, `AgenToolCapability`, the
`AgenToolToolset` tools of an LLM agent, and `injector.call` from an orchestrating operation. Also: a
failed workflow's id re-raises its recorded error, and a rejected input is not logged as an ERROR.
One child process (`python -m tests.test_durable_units DIRECTORY`) runs them, one JSON line per case.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

import agentool.dbos as durable_dbos
import agentool.durable
from agentool import AgenToolCapability, Route, RoutingConfig, create_agentool, get_injector
from agentool.toolset import AgenToolToolset
from tests.agentools import python_env

STEP = '__capability__agentool.operation'

KEYS: list[tuple[str | None, str | None]] = []  # both unit keys, as each operation saw them


class CalcInput(BaseModel):
    operation: Literal['add', 'boom']
    a: int = 0
    b: int = 0


async def calc_add(a: int, b: int) -> int:
    KEYS.append((durable_dbos.unit_key(), agentool.durable.unit_key()))
    return a + b


async def calc_boom() -> int:
    KEYS.append((durable_dbos.unit_key(), agentool.durable.unit_key()))
    raise ValueError('boom')


class SumInput(BaseModel):
    operation: Literal['sum']
    values: list[int]


async def sum_all(values: list[int]) -> int:
    total = 0
    for value in values:  # each call: a step of its own
        total = await get_injector().call('calc', {'operation': 'add', 'a': total, 'b': value})
    return total


def _create() -> None:
    create_agentool(
        name='calc',
        input_schema=CalcInput,
        routing_config=RoutingConfig(operation_map={'add': 'calc_add', 'boom': 'calc_boom'}),
        tools=[calc_add, calc_boom],
        output_type=int,
        replace=True,
    )
    create_agentool(
        name='summer',
        input_schema=SumInput,
        routing_config=RoutingConfig(operation_map={'sum': Route(tool='sum_all', durable=False)}),
        tools=[sum_all],
        output_type=int,
        dependencies=['calc'],
        replace=True,
    )


async def _scene(directory: Path) -> None:
    from dbos import DBOS

    _create()
    caps = durable_dbos.capabilities
    agents = {
        'durable': durable_dbos.durable('calc'),
        'model string': durable_dbos.register(Agent('agentool:calc', name='calc_string', capabilities=caps())),
        'capability': durable_dbos.register(
            Agent('agentool:calc', name='calc_cap', capabilities=[AgenToolCapability('calc'), *caps()])
        ),
        'toolset': durable_dbos.register(
            Agent(
                TestModel(call_tools=['calc_add']),
                name='llm',
                toolsets=[AgenToolToolset(include=['calc.add'], id='agentools')],
                capabilities=caps(),
            )
        ),
        'injector': durable_dbos.durable('summer'),
    }
    prompts = {
        'durable': '{"operation": "add", "a": 2, "b": 3}',
        'durable again': '{"operation": "add", "a": 4, "b": 5}',  # a lean run
        'injector': '{"operation": "sum", "values": [1, 2, 3]}',
        'toolset': 'add',
    }
    await durable_dbos.launch(directory / 'dbos.sqlite3')
    try:
        for case in ('durable', 'durable again', 'model string', 'capability', 'toolset', 'injector'):
            KEYS.clear()
            agent = agents[case.removesuffix(' again')]
            output = await durable_dbos.run(agent, prompts.get(case, prompts['durable']), workflow_id=f'w-{case}')
            steps = [step['function_name'] for step in await DBOS.list_workflow_steps_async(f'w-{case}')]
            _print(case=case, output=output, steps=steps, keys=KEYS)
        for case, prompt in (('bad input', '{"operation": "add", "a": "x"}'), ('boom', '{"operation": "boom"}')):
            for attempt in ('first', 'again'):
                KEYS.clear()
                try:
                    await durable_dbos.run(agents['durable'], prompt, workflow_id=f'w-{case}')
                except Exception as error:
                    _print(case=f'{case} {attempt}', error=type(error).__name__, message=str(error), keys=KEYS)
    finally:
        durable_dbos.shutdown()


def _print(**line: Any) -> None:
    sys.stdout.write(json.dumps(line, default=repr) + '\n')
    sys.stdout.flush()


@pytest.fixture(scope='module')
def scene(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp('units')
    child = subprocess.run(
        [sys.executable, '-m', 'tests.test_durable_units', str(directory)],
        cwd=directory,
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    cases: dict[str, Any] = {(line := json.loads(text))['case']: line for text in child.stdout.splitlines()}
    cases['stderr'] = child.stderr
    return cases


@pytest.mark.parametrize(
    ('case', 'agent', 'output'),
    [
        ('durable', 'calc', 5),
        ('durable again', 'calc', 9),
        ('model string', 'calc_string', '5'),  # an Agent without output_type: the JSON text
        ('capability', 'calc_cap', '5'),
    ],
)
def test_each_form_journals_its_operation_as_the_one_step(
    scene: dict[str, Any], case: str, agent: str, output: object
) -> None:
    assert scene[case]['output'] == output
    assert scene[case]['steps'] == [agent + STEP]  # no model-request steps
    workflow = f'w-{case}'
    assert scene[case]['keys'] == [[f'{workflow}:1', f'{workflow}:1']]  # both unit keys, the same


def test_an_llm_agents_tool_call_is_one_step_next_to_its_model_requests(scene: dict[str, Any]) -> None:
    steps = scene['toolset']['steps']
    assert steps.count('llm' + STEP) == 1
    assert all(step == 'llm' + STEP or step.startswith('llm__model.request') for step in steps), steps
    position = steps.index('llm' + STEP) + 1
    assert scene['toolset']['keys'] == [[f'w-toolset:{position}'] * 2]


def test_injector_calls_from_workflow_code_are_a_step_each(scene: dict[str, Any]) -> None:
    assert scene['injector']['output'] == 6
    assert scene['injector']['steps'] == ['summer' + STEP] * 3  # the orchestrating operation is no step
    assert scene['injector']['keys'] == [[f'w-injector:{n}'] * 2 for n in (1, 2, 3)]


def test_running_a_failed_workflow_again_re_raises_its_recorded_error(scene: dict[str, Any]) -> None:
    for case, error in (('bad input', 'InputValidationError'), ('boom', 'ValueError')):
        first, again = scene[f'{case} first'], scene[f'{case} again']
        assert (again['error'], again['message']) == (first['error'], first['message'])
        assert first['error'] == error
        assert again['keys'] == []  # recorded: nothing ran again
    assert scene['boom first']['keys'] == [['w-boom:1', 'w-boom:1']]


def test_a_rejected_input_is_not_logged_as_an_error(scene: dict[str, Any]) -> None:
    stderr = scene['stderr']
    assert 'InputValidationError' not in stderr  # not at the default WARNING level
    assert 'ValueError: boom' in stderr  # a tool's exception still is, with its traceback


if __name__ == '__main__':
    asyncio.run(_scene(Path(sys.argv[1])))
