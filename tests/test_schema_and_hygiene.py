"""The manager tool publishes the input schema; the library keeps its hands off global state."""

from __future__ import annotations

import ast
import asyncio
import json
import operator
import pickle
import random
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from agentool import MANAGER_TOOL_NAME, AgenToolCapability, errors
from examples.calculator import CalculatorInput, create_calculator
from tests.agentools import ROOT, python_env, run_python


def _spy(offered: list[ToolDefinition]) -> FunctionModel:
    def spy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.extend(info.function_tools)
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(spy)


async def test_manager_tool_schema_is_the_input_schema() -> None:
    calculator = create_calculator()
    offered: list[ToolDefinition] = []
    with calculator.override(model=_spy(offered)):
        await calculator.run('{}', output_type=str)
    (tool,) = offered
    assert tool.name == MANAGER_TOOL_NAME
    schema = CalculatorInput.model_json_schema()
    properties = tool.parameters_json_schema['properties']
    assert list(properties) == list(schema['properties'])
    for name, field in properties.items():
        assert field == {k: v for k, v in schema['properties'][name].items() if k != 'title'}
    assert properties['operation']['enum'] == ['add', 'subtract', 'multiply', 'divide']
    assert properties['a']['description'] == 'The first operand.'
    assert tool.parameters_json_schema['required'] == ['operation', 'a', 'b']
    assert tool.parameters_json_schema['additionalProperties'] is False
    assert tool.description == 'Basic arithmetic on two numbers.'


async def test_capability_toolset_offers_the_same_schema() -> None:
    create_calculator()
    offered: list[ToolDefinition] = []
    agent = Agent(_spy(offered), capabilities=[AgenToolCapability('calculator')])
    await agent.run('hi')
    assert [t.name for t in offered] == [MANAGER_TOOL_NAME]
    assert list(offered[0].parameters_json_schema['properties']) == ['operation', 'a', 'b']


async def test_concurrent_runs_each_get_their_own_output() -> None:
    # 200 runs all in flight at once: a run reading another's input or output shows as a wrong answer.
    calculator = create_calculator()
    rng = random.Random(7)
    pairs = [(rng.randint(-1000, 1000), rng.randint(-1000, 1000)) for _ in range(200)]
    ops = ['add', 'subtract', 'multiply']
    prompts = [json.dumps({'operation': ops[i % 3], 'a': a, 'b': b}) for i, (a, b) in enumerate(pairs)]
    results = await asyncio.gather(*(calculator.run(p) for p in prompts))
    expected = [[a + b, a - b, a * b][i % 3] for i, (a, b) in enumerate(pairs)]
    assert [r.output for r in results] == expected


def test_library_code_never_prints() -> None:
    offenders: list[str] = []
    for path in (ROOT / 'agentool').rglob('*.py'):
        if 'cli' in path.relative_to(ROOT / 'agentool').parts or path.name == '__main__.py':  # the command line prints
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == 'print':
                offenders.append(f'{path.relative_to(ROOT)}:{node.lineno}')
    assert offenders == []


def _private(name: str) -> bool:
    return any(part.startswith('_') and not part.endswith('__') for part in name.split('.'))


def _private_pydantic_ai_uses(tree: ast.AST) -> list[int]:
    """Lines importing a private pydantic-ai name, or reading a private attribute of a pydantic-ai module."""
    lines: list[int] = []
    modules: set[str] = set()  # local names bound to pydantic-ai modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split('.')[0] == 'pydantic_ai':
            if _private(node.module) or any(_private(alias.name) for alias in node.names):
                lines.append(node.lineno)
            modules.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split('.')[0] == 'pydantic_ai':
                    if _private(alias.name):
                        lines.append(node.lineno)
                    modules.add(alias.asname or alias.name.split('.')[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                lines.append(node.lineno)
    return lines


def test_library_never_reaches_into_private_pydantic_ai_names() -> None:
    """Not even in agentool/_compat.py, where release differences live: public APIs only."""
    offenders = [
        f'{path.relative_to(ROOT)}:{line}'
        for path in (ROOT / 'agentool').rglob('*.py')
        for line in _private_pydantic_ai_uses(ast.parse(path.read_text()))
    ]
    assert offenders == []


def test_the_private_name_check_sees_imports_and_attributes() -> None:
    source = (
        'import pydantic_ai._run_context\n'
        'from pydantic_ai._agent_graph import x\n'
        'from pydantic_ai import _utils\n'
        'import pydantic_ai.models as m\n'
        'm._cached_async_http_client\n'
        'm.infer_model.__wrapped__\n'
    )
    assert _private_pydantic_ai_uses(ast.parse(source)) == [1, 2, 3, 5]


def test_import_has_no_side_effect_but_the_documented_hook(tmp_path: Path) -> None:
    script = (
        'import pydantic_ai.models as m, logging, sys\n'
        'original = m.infer_model\n'
        'import agentool\n'
        'from agentool import get_registry\n'
        'assert m.infer_model is not original and m.infer_model.__wrapped__ is original\n'
        'assert get_registry().list_names() == []\n'
        'assert logging.getLogger().handlers == []\n'
        "assert not any(name.startswith('examples') for name in sys.modules)\n"
    )
    run_python(script, cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_running_agentools_writes_nothing_to_the_working_directory(tmp_path: Path) -> None:
    script = (
        'import asyncio\n'
        'from pydantic_ai import Agent\n'
        'from examples.calculator import calculator\n'
        'print(calculator.run_sync(\'{"operation": "add", "a": 1, "b": 2}\').output)\n'
        'print(Agent(\'agentool:calculator\').run_sync(\'{"operation": "add", "a": 1, "b": 2}\').output)\n'
    )
    printed = run_python(script, cwd=tmp_path, env={**python_env(), 'PYTHONDONTWRITEBYTECODE': '1'})
    assert printed.split() == ['3.0', '3.0']
    assert list(tmp_path.iterdir()) == []


def _an_error(cls: type[errors.AgenToolError]) -> errors.AgenToolError:
    if cls is errors.InjectorValidationError:
        return cls('2 problems', problems=[errors.ConfigurationError('bad', option='x'), errors.DependencyError('no')])
    if issubclass(cls, errors.InputValidationError):
        return cls('invalid', agentool='a', errors=[{'loc': ['x'], 'msg': 'Field required', 'type': 'missing'}])
    return cls('went wrong', agentool='a', reason='r')


@pytest.mark.parametrize('name', [n for n in errors.__all__ if isinstance(getattr(errors, n), type)])
def test_every_error_survives_pickling(name: str) -> None:
    # Durable engines store a failed run's error by pickling it and read it back in another process.
    error = _an_error(getattr(errors, name))
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    seen = operator.attrgetter('message', 'agentool', 'details')
    assert (str(back), *seen(back), vars(back).keys()) == (str(error), *seen(error), vars(error).keys())
