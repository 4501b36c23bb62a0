"""pydantic-ai's own stdio MCP client (`MCPToolset` running `agentool mcp`), recorded with its server and
replayed with none; skipped, saying why, where its extra is not installed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import AbstractToolset

from agentool.errors import CassetteMismatchError
from agentool.testing import CassetteModel, CassetteToolset, trajectory
from tests._cassette_stable import stable
from tests.agentools import ROOT

_NO_CLIENT = "pydantic-ai's MCP client is not installed: pip install 'pydantic-ai-slim[mcp]' (fastmcp-slim 4)"
pydantic_ai_mcp = pytest.importorskip('pydantic_ai.mcp', reason=_NO_CLIENT, exc_type=ImportError)
transports = pytest.importorskip('fastmcp.client.transports', reason=_NO_CLIENT)

# MCPToolset's default start timeout (5 s) is about what importing agentool takes on a loaded 2-core machine.
START_SECONDS = 120


def _server(include: str, cwd: Path) -> AbstractToolset[None]:
    """agentool's own MCP server over stdio, serving the calculator operations `include` names."""
    args = ['-m', 'agentool', '--import', 'examples.calculator', 'mcp', '--include', include]
    env = {**os.environ, 'PYTHONPATH': str(ROOT), 'PYTHONDONTWRITEBYTECODE': '1'}
    transport = transports.StdioTransport(command=sys.executable, args=args, env=env, cwd=str(cwd))
    return pydantic_ai_mcp.MCPToolset(transport, id='calculator', init_timeout=START_SECONDS)


def _nowhere(tmp_path: Path) -> AbstractToolset[None]:
    """A stdio toolset whose command does not exist: starting it would fail the run."""
    missing = tmp_path / 'no-such-mcp-server'
    return pydantic_ai_mcp.MCPToolset(transports.StdioTransport(command=str(missing), args=[]), id='calculator')


def _adds(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    assert [tool.name for tool in info.function_tools] == ['calculator_add']
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('calculator_add', {'a': 2, 'b': 3})])
    (answer,) = messages[-1].parts
    assert isinstance(answer, ToolReturnPart)
    return ModelResponse(parts=[TextPart(f'2 + 3 = {answer.content}')])


async def test_an_mcp_toolset_over_stdio_recorded_with_its_server_replays_with_none(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    model = CassetteModel(FunctionModel(_adds), cassette=path, mode='once')
    recording = CassetteToolset(_server('calculator.add', tmp_path), model)
    recorded = await Agent(output_type=str).run('2 + 3?', model=model, toolsets=[recording])
    assert recorded.output == '2 + 3 = 5.0'  # the server's answer, not the model's
    assert [tool['name'] for tool in json.loads(path.read_text())['toolsets']['calculator']] == ['calculator_add']

    offline = CassetteToolset(_nowhere(tmp_path), replay := CassetteModel(None, cassette=path))
    with override_allow_model_requests(False):
        replayed = await Agent(output_type=str).run('2 + 3?', model=replay, toolsets=[offline])
    assert replayed.output == recorded.output
    assert stable(replayed.all_messages()) == stable(recorded.all_messages())
    offline.calls.assert_called('calculator_add', {'a': 2, 'b': 3})
    assert offline.calls[0].result == 5.0  # what MCPToolset made of the server's structured result
    trajectory(replayed).assert_order('calculator_add')
    assert replay.unused_exchanges() == []


async def test_an_mcp_toolset_that_cannot_start_fails_a_run_that_needs_it(tmp_path: Path) -> None:
    # The counterpart of the replay above: the same toolset, recording, does try to start its command.
    model = CassetteModel(FunctionModel(_adds), cassette=tmp_path / 'c.json', mode='once')
    with pytest.raises((RuntimeError, OSError), match='no-such-mcp-server'):  # fastmcp's "failed to connect"
        await Agent(output_type=str).run('2 + 3?', model=model, toolsets=[CassetteToolset(_nowhere(tmp_path), model)])
    assert not (tmp_path / 'c.json').exists()


async def test_a_changed_stdio_server_tool_list_is_a_mismatch_naming_the_tool(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    server = _server('calculator.*', tmp_path)
    async with server:  # one server start, shared by the recording and the verified replay
        model = CassetteModel(FunctionModel(_adds_of_four), cassette=path, mode='once')
        await Agent(output_type=str).run('2 + 3?', model=model, toolsets=[CassetteToolset(server, model)])
        # As if recorded before the server gained `multiply`: the live list now has one tool more.
        data = json.loads(path.read_text())
        data['toolsets']['calculator'] = [
            t for t in data['toolsets']['calculator'] if t['name'] != 'calculator_multiply'
        ]
        path.write_text(json.dumps(data))
        replay = CassetteModel(None, cassette=path)
        verified = CassetteToolset(server, replay, verify=True)
        with pytest.raises(CassetteMismatchError, match="tool 'calculator_multiply' added") as caught:
            await Agent(output_type=str).run('2 + 3?', model=replay, toolsets=[verified])
    assert 'calculator_add' not in str(caught.value)
    assert caught.value.details['toolset'] == 'calculator'


def _adds_of_four(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    names = sorted(tool.name for tool in info.function_tools)
    assert names == ['calculator_add', 'calculator_divide', 'calculator_multiply', 'calculator_subtract']
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('calculator_add', {'a': 2, 'b': 3})])
    return ModelResponse(parts=[TextPart('5')])
