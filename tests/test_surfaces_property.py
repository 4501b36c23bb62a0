"""A payload is accepted by one surface if and only if it is accepted by all.

For every example agentool, hypothesis draws 200 payloads (valid ones per operation, the invalid
kinds of `agentool.testing.strategies`, and near misses: a field dropped, set to null, or one the
operation does not use added) and sends each through seven surfaces: `agent.run`, the plain
model-string form, `injector.call`, the CLI's `call`, MCP, the LLM toolset and the test double.
"Refused" means the surface reports bad input (a typed `InvalidInputError`, an MCP error result
about the arguments, a toolset validation error, a double's drift on the manager tool); anything
else, a tool's own failure included, means the input got through.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from pydantic import ValidationError
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import ToolsetTool
from pydantic_ai.usage import RunUsage

from agentool import AgenToolToolset, get_injector, get_registry
from agentool.cli import main
from agentool.core.manager import MANAGER_TOOL_NAME
from agentool.errors import DriftError, InvalidInputError
from agentool.mcp import create_mcp_server
from agentool.testing import AgentDouble, Call, OutputFrom, Script
from agentool.testing.strategies import invalid_inputs, valid_inputs
from examples.calculator import create_calculator
from examples.sessions import create_sessions
from examples.storage import MEMORY, SQLiteStore, create_storage
from tests.todo_agentool import create_todo

# Sized for `make test`; `make fuzz` (AGENTOOL_FUZZ=1) runs ten times as many.
PAYLOADS = settings(
    max_examples=500 if os.environ.get('AGENTOOL_FUZZ') == '1' else 50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
CREATE: dict[str, Callable[[], Any]] = {
    'calculator': lambda: create_calculator(replace=True),
    'storage': lambda: create_storage(replace=True),
    'sessions': lambda: (create_storage(replace=True), create_sessions(replace=True)),
    'todo': lambda: create_todo(),
}
SURFACES = ('agent.run', 'model string', 'injector.call', 'cli', 'mcp', 'toolset', 'double')
_INPUT_ERRORS = ('invalid input for agentool', 'input to agentool', 'has no operation')
_NOISE: tuple[Any, ...] = (None, 'x', 0, 1.5, True, [], {'k': 1})


@pytest.fixture(autouse=True)
async def fresh_store() -> AsyncIterator[None]:
    store = SQLiteStore(MEMORY)
    get_injector().provide(SQLiteStore, instance=store, replace=True)
    yield
    await store.aclose()


def payloads(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Valid inputs, invalid ones, and near misses of valid ones, all JSON objects."""
    valid = valid_inputs(name)
    kinds = ('unknown_operation', 'missing_field', 'wrong_type', 'unknown_field')
    invalid = invalid_inputs(name, kinds=kinds).map(json.loads)
    keys = st.deferred(lambda: st.sampled_from(sorted(get_registry().get_manager(name).input_schema.model_fields)))
    dropped = st.tuples(valid, keys).map(lambda pair: {k: v for k, v in pair[0].items() if k != pair[1]})
    changed = st.tuples(valid, keys, st.sampled_from(_NOISE)).map(lambda t: {**t[0], t[1]: t[2]})
    return st.one_of(valid, invalid, dropped, changed)


@dataclass(frozen=True)
class Surfaces:
    """What the surfaces of one agentool need, built once per test."""

    name: str
    plain: Agent[Any, Any]
    server: Any
    tools: dict[str, ToolsetTool[Any]]

    @classmethod
    async def build(cls, name: str) -> Surfaces:
        output_type = get_registry().require(name).output_type
        plain = Agent(f'agentool:{name}', output_type=str if output_type is None else output_type)
        toolset: AgenToolToolset[Any] = AgenToolToolset()
        tools = await toolset.get_tools(RunContext[Any](deps=None, model=TestModel(), usage=RunUsage()))
        return cls(name=name, plain=plain, server=create_mcp_server(), tools=tools)


async def verdicts(surfaces: Surfaces, payload: dict[str, Any]) -> dict[str, bool]:
    """Whether each surface accepted `payload` for the agentool."""
    name = surfaces.name
    text = json.dumps(payload)
    operation = payload.get(get_registry().get_manager(name).operation_field)
    tool = f'{name}_{operation}' if isinstance(operation, str) else None
    agent = get_injector().get(name)
    arguments = {k: v for k, v in payload.items() if k != 'operation'}
    found: dict[str, bool] = {}
    found['agent.run'] = await _through(agent.run(text))
    found['model string'] = await _through(surfaces.plain.run(text))
    found['injector.call'] = await _through(get_injector().call(name, payload))
    found['cli'] = await anyio.to_thread.run_sync(_cli, name, text)
    found['mcp'] = await _mcp(surfaces.server, tool, arguments)
    found['toolset'] = _toolset(surfaces.tools, tool, arguments)
    found['double'] = await _double(agent, payload)
    return found


async def _through(call: Any) -> bool:
    try:
        await call
    except InvalidInputError:
        return False
    except Exception:  # the tool's own failure: the input got through
        return True
    return True


def _cli(name: str, text: str) -> bool:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(['call', name, text])
    return status == 0 or not any(marker in err.getvalue() for marker in _INPUT_ERRORS)


async def _mcp(server: Any, tool: str | None, arguments: dict[str, Any]) -> bool:
    async with Client(server) as client:
        try:
            result = await client.call_tool(tool or 'none', arguments)
        except MCPError:  # no such tool: the operation is unknown
            return False
        except RuntimeError as error:  # the client refused the tool's *output* (say infinity): the input got through
            if 'structured content' not in str(error):
                raise
            return True
    text = result.content[0].model_dump().get('text', '') if result.content else ''
    return not (result.is_error and str(text).startswith('invalid arguments'))


def _toolset(tools: dict[str, ToolsetTool[Any]], tool: str | None, arguments: dict[str, Any]) -> bool:
    if tool not in tools:
        return False
    try:
        tools[tool].args_validator.validate_python(arguments)
    except ValidationError:
        return False
    return True


async def _double(agent: Any, payload: dict[str, Any]) -> bool:
    double = AgentDouble(
        Script(Call(MANAGER_TOOL_NAME, payload), OutputFrom(lambda run: run.result(MANAGER_TOOL_NAME)))
    )
    with agent.override(model=double):
        try:
            await agent.run('go')
        except InvalidInputError:
            return False
        except DriftError as error:  # the agent's own validation refused the call (or, later, the output)
            return error.details.get('tool') != MANAGER_TOOL_NAME
        except Exception:
            return True
    return True


@pytest.mark.parametrize('name', sorted(CREATE))
def test_a_payload_is_accepted_by_one_surface_iff_by_all(name: str) -> None:
    CREATE[name]()
    surfaces = anyio.run(Surfaces.build, name)
    seen = {'accepted': 0, 'refused': 0}

    @PAYLOADS
    @given(payloads(name))
    def check(payload: dict[str, Any]) -> None:
        found = anyio.run(verdicts, surfaces, payload)
        assert len(set(found.values())) == 1, (payload, found)
        seen['accepted' if found['agent.run'] else 'refused'] += 1

    check()
    # Both sides of the property were exercised.
    assert seen['accepted'] > 0, seen
    assert seen['refused'] > 0, seen
