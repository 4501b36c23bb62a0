"""Canaries: one test per seam where agentool meets pydantic-ai, each naming the release that broke it,
and the supported range (which releases the import check accepts, and pyproject declaring it).

`.ci/matrix.py` runs the whole suite against the lowest and the newest supported release; these
tests are the first to read when a leg fails, since their message names the pydantic-ai version
and the seam. `agentool._compat` is where a fix for a release difference goes.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import tomllib
from collections.abc import Generator
from contextlib import contextmanager
from importlib.metadata import packages_distributions
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import pydantic_ai
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput, PromptedOutput, TextOutput, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import (
    MANAGER_TOOL_NAME,
    AgenToolCapability,
    AgenToolModel,
    BaseOperationInput,
    PydanticAIVersionError,
    RoutingConfig,
    create_agentool,
    manager_toolset,
    model_strings,
)
from agentool._compat import BELOW, MINIMUM, PYDANTIC_AI_VERSION, SUPPORTED, check_pydantic_ai, parse_version
from agentool.core.registry import get_registry
from agentool.toolset import AgenToolToolset
from tests.agentools import ROOT, run_python


@contextmanager
def seam(name: str) -> Generator[None]:
    """Turn any failure inside into one that names the seam and the installed pydantic-ai."""
    try:
        yield
    except Exception as error:
        pytest.fail(f'pydantic-ai {PYDANTIC_AI_VERSION}: the {name} seam broke: {type(error).__name__}: {error}')


class Point(BaseModel):
    x: int
    y: int


class CalcInput(BaseOperationInput):
    operation: Literal['add', 'point']
    a: int = 0
    b: int = 0


async def add(a: int, b: int) -> int:
    return a + b


async def point(a: int, b: int) -> Point:
    return Point(x=a, y=b)


def parse_point(text: str) -> Point:
    return Point.model_validate_json(text)


def calc(**agent_kwargs: Any) -> Agent[Any, Any]:
    config = RoutingConfig(operation_map={'add': 'add', 'point': 'point'})
    return create_agentool('calc', CalcInput, config, [add, point], **agent_kwargs)


ADD = '{"operation": "add", "a": 5, "b": 3}'


def test_the_installed_release_is_the_one_pydantic_ai_reports() -> None:
    assert pydantic_ai.__version__ == PYDANTIC_AI_VERSION
    parsed = parse_version(PYDANTIC_AI_VERSION)
    assert parsed is not None
    assert MINIMUM <= parsed < BELOW, f'pydantic-ai {PYDANTIC_AI_VERSION} is outside {SUPPORTED}'


# pyproject.toml declares `>=2.60.0`, which a pre-release or dev release of 2.60.0 does not satisfy.
PRE_RELEASES = ['2.60.0a1', '2.60.0b1', '2.60.0rc1', '2.60.0.dev3', '2.60.0rc1.dev2+g0']


@pytest.mark.parametrize('version', ['2.59.0', '2.59.9', '1.107.10', '3.0.0', '3.0.0b1', 'unknown', '', *PRE_RELEASES])
def test_an_unsupported_release_is_a_typed_error_naming_both_versions(version: str) -> None:
    with pytest.raises(PydanticAIVersionError) as caught:
        check_pydantic_ai(version)
    assert caught.value.details == {'installed': version, 'supported': SUPPORTED}
    assert f'pydantic-ai {version} is installed' in caught.value.message
    assert SUPPORTED in caught.value.message
    assert isinstance(caught.value, ImportError)


# Each a release `>=2.60.0,<3` admits: post-releases and pre-releases above the floor included.
INSIDE = '2.60.0 2.60.0.post1 2.60.1 2.60.1b1 2.61.0.dev0 2.62.0 2.68.0 2.69.1.dev3+g0abc 2.99.0 2.99.99rc1'


@pytest.mark.parametrize('version', INSIDE.split())
def test_a_supported_release_passes_the_check(version: str) -> None:
    check_pydantic_ai(version)


def test_pyproject_declares_the_range_the_check_enforces() -> None:
    dependencies = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['dependencies']
    assert SUPPORTED in [re.sub(r'\s', '', requirement) for requirement in dependencies]


def _matrix() -> ModuleType:
    spec = importlib.util.spec_from_file_location('agentool_ci_matrix', ROOT / '.ci' / 'matrix.py')
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_the_matrix_tests_the_declared_floor_and_every_classified_python() -> None:
    matrix = _matrix()
    assert matrix.floor_version() == '.'.join(map(str, MINIMUM))
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    classified = {
        classifier.rsplit(' :: ', 1)[1]
        for classifier in project['classifiers']
        if re.fullmatch(r'Programming Language :: Python :: 3\.\d+', classifier)
    }
    tested = {f'{major}.{minor}' for major, minor in (matrix.FLOOR_PYTHON, *matrix.NEWER_PYTHONS)}
    assert classified == tested
    assert project['requires-python'] == '>={}.{}'.format(*matrix.FLOOR_PYTHON)


def test_the_readme_table_lists_what_the_matrix_runs() -> None:
    matrix = _matrix()
    readme = (ROOT / 'README.md').read_text()
    section = readme[readme.index('## Compatibility') : readme.index('## More')]
    rows = {
        (leg.spec, '{}.{}'.format(*version))
        for leg, version in zip(matrix.legs(), [matrix.FLOOR_PYTHON, *matrix.NEWER_PYTHONS], strict=True)
    }
    assert rows == set(re.findall(r'`(pydantic-ai[\w-]*==[\d.]+)`[^|]*\| (3\.\d+) \|', section))


def test_every_seam_module_exists_and_the_legs_run_each() -> None:
    # A renamed test file must not silently drop out of the legs (`pytest -m seam` on these files).
    from tests.conftest import SEAM_MODULES

    assert sorted(name for name in SEAM_MODULES if not (ROOT / 'tests' / name).exists()) == []
    files = _matrix().seam_files()
    assert {f'tests/{name}' for name in SEAM_MODULES} <= set(files)
    assert {'tests/test_compat.py', 'tests/test_docs.py'} <= set(files)  # the canaries and the docs' examples


def test_ci_runs_the_readme_test_command_and_nothing_else() -> None:
    run = (ROOT / '.ci' / 'run').read_text().splitlines()
    commands = [line for line in run if line.strip() and not line.startswith(('#', 'set ', 'cd '))]
    assert commands == ['make test']
    assert 'make test   # every check' in (ROOT / 'README.md').read_text()


# --- the seams -------------------------------------------------------------------------------------


async def test_canary_model_request() -> None:
    with seam('model request (Model.request, prepare_request, tool call and return)'):
        result = await calc().run(ADD)
        assert result.output == 8
        returns = [
            (part.tool_name, part.content, part.outcome)
            for message in result.all_messages()
            for part in message.parts
            if isinstance(part, ToolReturnPart) and part.tool_name == MANAGER_TOOL_NAME
        ]
        assert returns == [(MANAGER_TOOL_NAME, 8, 'success')]


async def test_canary_model_stream() -> None:
    with seam('model stream (run_stream over CompletedStreamedResponse)'):
        async with calc().run_stream(ADD) as stream:
            assert await stream.get_output() == 8


async def test_canary_tool_registration() -> None:
    with seam('tool registration (manager tool schema, FunctionToolset)'):
        calc()
        offered: list[str] = []

        def spy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            offered.extend(tool.name for tool in info.function_tools)
            schema = info.function_tools[0].parameters_json_schema
            assert set(schema['properties']) >= {'operation', 'a', 'b'}, schema
            return ModelResponse(parts=[TextPart('done')])

        toolset = manager_toolset(get_registry().get_manager('calc'))
        await Agent(FunctionModel(spy), toolsets=[toolset]).run('hi')
        assert len(offered) == 1


def test_canary_model_string_resolution_through_the_hook() -> None:
    with seam('model-string resolution (pydantic_ai.models.infer_model hook)'):
        calc()
        agent = Agent('agentool:calc', output_type=int)
        assert isinstance(agent.model, AgenToolModel)
        assert agent.run_sync(ADD).output == 8


async def test_canary_capability_hooks() -> None:
    with seam('capability hooks (resolve_model_id, toolset contribution, deps)'):
        calc()
        model_strings.uninstall()
        try:
            agent = Agent('agentool:calc', capabilities=[AgenToolCapability('calc')], output_type=int)
            assert (await agent.run(ADD)).output == 8
        finally:
            model_strings.install()


@pytest.mark.parametrize('mode', ['tool', 'native', 'prompted', 'text'])
async def test_canary_output_modes(mode: str) -> None:
    shapes: dict[str, Any] = {
        'tool': ToolOutput(Point),
        'native': NativeOutput(Point),
        'prompted': PromptedOutput(Point),
        'text': TextOutput(parse_point),
    }
    with seam(f'output modes ({mode})'):
        agent = Agent(AgenToolModel('calc'), output_type=shapes[mode])
        calc()
        result = await agent.run('{"operation": "point", "a": 1, "b": 2}', toolsets=[AgenToolToolset()])
        assert result.output == Point(x=1, y=2)


async def test_canary_toolset_and_retried_returns() -> None:
    """The floor: a rejected tool call comes back as `ToolReturnPart(outcome='retried')`."""
    with seam("toolset (AbstractToolset, retried tool returns with outcome='retried')"):
        calc()
        seen: list[list[ModelMessage]] = []

        def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append(list(messages))
            if len(seen) == 1:
                return ModelResponse(parts=[ToolCallPart('calc_add', {'a': 'x', 'b': 1}, tool_call_id='bad')])
            if len(seen) == 2:
                return ModelResponse(parts=[ToolCallPart('calc_add', {'a': 2, 'b': 1}, tool_call_id='good')])
            return ModelResponse(parts=[TextPart('done')])

        result = await Agent(FunctionModel(script), toolsets=[AgenToolToolset()]).run('go')
        assert result.output == 'done'
        outcomes: list[tuple[str | None, str]] = []
        for messages in seen[1:]:
            last = messages[-1]
            assert isinstance(last, ModelRequest)
            outcomes += [(p.tool_call_id, p.outcome) for p in last.parts if isinstance(p, ToolReturnPart)]
        assert outcomes == [('bad', 'retried'), ('good', 'success')]


async def test_canary_mcp() -> None:
    pytest.importorskip('mcp')
    from mcp import Client

    from agentool.mcp import create_mcp_server

    with seam('MCP (server built from the registry, called by an in-memory client)'):
        calc()
        async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names == ['calc_add', 'calc_point']
            called = await client.call_tool('calc_add', {'a': 5, 'b': 3})
            assert not called.is_error
            assert called.structured_content == {'result': 8}


async def test_canary_durability() -> None:
    pytest.importorskip('dbos')
    from pydantic_ai.capabilities import durable_operation
    from pydantic_ai.durable_exec.dbos import DBOSDurability

    from agentool.durable import CAPABILITY_ID, OPERATION_NAME, AgenToolDurability

    with seam('durability (@durable_operation on a capability method; without an engine it calls through)'):
        assert callable(durable_operation)
        assert isinstance(DBOSDurability, type)
        capability = AgenToolDurability()
        assert (capability.id, OPERATION_NAME) == (CAPABILITY_ID, 'operation')
        agent = calc(capabilities=[capability])
        result = await agent.run('{"operation": "add", "a": 2, "b": 3}')
        assert result.output == 5


def test_every_package_import_agentool_uses_directly_is_declared() -> None:
    # A package reached only through pydantic-ai's own requirements could vanish with a pydantic-ai release.
    imported = run_python('import agentool, sys; print(*(m for m in sys.modules if m.startswith("agentool")))')
    roots: set[str] = set()
    for module in imported.split():
        spec = importlib.util.find_spec(module)
        assert spec is not None
        assert spec.origin is not None
        for node in ast.walk(ast.parse(Path(spec.origin).read_text())):
            if isinstance(node, ast.Import):
                roots.update(alias.name.split('.')[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots.add(node.module.split('.')[0])
    # pydantic-core is pydantic's own engine, pinned to one exact release by pydantic.
    third_party = roots - set(sys.stdlib_module_names) - {'agentool', '__future__', 'pydantic_core'}
    declared = {
        re.split(r'[\[<>=!~ ;]', requirement)[0].lower().replace('_', '-')
        for requirement in tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['dependencies']
    }
    distributions = packages_distributions()
    missing = {
        root: names
        for root in sorted(third_party)
        if not (names := {d.lower().replace('_', '-') for d in distributions.get(root, [])}) & declared
    }
    assert not missing, f'imported by `import agentool` but not declared in [project] dependencies: {missing}'


def test_import_agentool_on_an_unsupported_release_is_the_typed_error() -> None:
    script = (
        'import pydantic_ai\n'
        "pydantic_ai.__version__ = '2.59.3'\n"
        'try:\n'
        '    import agentool\n'
        'except ImportError as error:\n'
        '    print(type(error).__name__, error.details)\n'
    )
    out = run_python(script)
    assert out.strip() == ("PydanticAIVersionError {'installed': '2.59.3', 'supported': 'pydantic-ai-slim>=2.60.0,<3'}")


def test_every_pydantic_ai_requirement_in_pyproject_declares_the_supported_range() -> None:
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    requirements = [
        *project['dependencies'],
        *(r for extra in project['optional-dependencies'].values() for r in extra),
    ]
    ranges = {
        re.sub(r'\[[^\]]*\]', '', re.sub(r'\s', '', requirement))
        for requirement in requirements
        if re.match(r'pydantic-ai\b', requirement)
    }
    assert ranges == {SUPPORTED}
