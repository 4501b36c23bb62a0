"""Toolsets without their backend: an MCP server recorded once, replayed with none; toolset doubles; output tools."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from agentool import AgenToolToolset
from agentool.errors import CassetteError, CassetteMismatchError, ConfigurationError, DriftError, UnrecordedCallError
from agentool.testing import (
    AgentDouble,
    Cassette,
    CassetteModel,
    CassetteToolset,
    Output,
    Script,
    ToolsetDouble,
    trajectory,
)
from examples.calculator import create_calculator
from tests.agentools import ROOT

mcp = pytest.importorskip('mcp')


class StdioServer(AbstractToolset[Any]):
    """A minimal MCP client toolset over stdio, counting starts (tests/test_cassette_mcp_stdio.py uses `MCPToolset`)."""

    def __init__(self, include: str, cwd: Path) -> None:
        self.include, self.cwd, self.started = include, cwd, 0
        self._client: Any = None

    @property
    def id(self) -> str | None:
        return 'calculator'

    async def __aenter__(self) -> StdioServer:
        args = ['-m', 'agentool', '--import', 'examples.calculator', 'mcp', '--include', self.include]
        env = {**os.environ, 'PYTHONPATH': str(ROOT), 'PYTHONDONTWRITEBYTECODE': '1'}
        params = mcp.StdioServerParameters(command=sys.executable, args=args, env=env, cwd=self.cwd)
        self._client = mcp.Client(params)
        await self._client.__aenter__()
        self.started += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        await self._client.__aexit__(*args)
        return None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        listed = (await self._client.list_tools()).tools
        validator = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))
        return {
            t.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(name=t.name, description=t.description, parameters_json_schema=t.input_schema),
                max_retries=1,
                args_validator=validator,
            )
            for t in listed
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        return (await self._client.call_tool(name, tool_args)).structured_content


def _real(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    assert [tool.name for tool in info.function_tools] == ['calculator_add']
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('calculator_add', {'a': 2, 'b': 3})])
    return ModelResponse(parts=[TextPart('2 + 3 = 5')])


async def test_an_mcp_server_recorded_once_replays_with_no_server(tmp_path: Path) -> None:
    path, server = tmp_path / 'c.json', StdioServer('calculator.add', tmp_path)
    model = CassetteModel(FunctionModel(_real), cassette=path, mode='once')
    recorded = await Agent(output_type=str).run('2 + 3?', model=model, toolsets=[CassetteToolset(server, model)])
    assert server.started == 1
    gone = StdioServer('calculator.add', tmp_path / 'missing')  # would fail to start: no such directory
    with override_allow_model_requests(False):
        replay = CassetteModel(None, cassette=path)
        toolset = CassetteToolset(gone, replay)
        replayed = await Agent(output_type=str).run('2 + 3?', model=replay, toolsets=[toolset])
    assert gone.started == 0
    assert replayed.output == recorded.output == '2 + 3 = 5'
    toolset.calls.assert_called('calculator_add', {'a': 2, 'b': 3})
    assert toolset.calls[0].result == {'result': 5.0}
    trajectory(replayed).assert_called('calculator_add', {'a': 2})


async def test_a_changed_server_tool_list_is_a_mismatch_naming_the_tool(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    model = CassetteModel(FunctionModel(_real), cassette=path, mode='once')
    await Agent(output_type=str).run(
        '2 + 3?', model=model, toolsets=[CassetteToolset(StdioServer('calculator.add', tmp_path), model)]
    )
    wider = StdioServer('calculator.*', tmp_path)
    replay = CassetteModel(None, cassette=path)
    with pytest.raises(CassetteMismatchError, match="tool 'calculator_multiply' added") as caught:
        await Agent(output_type=str).run('2 + 3?', model=replay, toolsets=[CassetteToolset(wider, replay, verify=True)])
    assert "tool 'calculator_subtract' added" in caught.value.details['changes']


def _hello(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart('hi')])


async def test_a_replay_without_recorded_tools_says_so(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    await Agent(output_type=str).run('hi', model=CassetteModel(FunctionModel(_hello), cassette=path, mode='once'))
    replay = CassetteModel(None, cassette=path)
    toolset = CassetteToolset(StdioServer('x', tmp_path), replay)
    with pytest.raises(CassetteError, match="holds no tools of toolset 'calculator'"):
        await Agent(output_type=str).run('hi', model=replay, toolsets=[toolset])


def _calls_forecast(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('forecast', {'city': 'Oslo'})])
    (answer,) = messages[-1].parts
    assert isinstance(answer, ToolReturnPart)
    return ModelResponse(parts=[TextPart(str(answer.content))])


async def test_a_toolset_double_from_schemas_answers_from_a_script() -> None:
    double = ToolsetDouble(
        {'forecast': {'type': 'object', 'properties': {'city': {'type': 'string'}}}},
        answers={'forecast': lambda args: f'snow in {args["city"]}'},
    )
    result = await Agent(output_type=str).run('Oslo?', model=FunctionModel(_calls_forecast), toolsets=[double])
    assert result.output == 'snow in Oslo'
    double.calls.assert_called('forecast', {'city': 'Oslo'})


async def test_a_toolset_double_from_a_real_toolsets_definitions(tmp_path: Path) -> None:
    double = await ToolsetDouble.from_toolset(StdioServer('calculator.add', tmp_path), answer=lambda name, args: 99)
    assert [d.name for d in double.definitions] == ['calculator_add']
    result = await Agent(output_type=str).run('2 + 3?', model=FunctionModel(_real), toolsets=[double])
    assert result.output == '2 + 3 = 5'
    assert double.calls[0].result == 99


async def test_a_toolset_double_refuses_what_it_cannot_answer() -> None:
    with pytest.raises(ConfigurationError, match="answers tool 'nope', which it does not offer"):
        ToolsetDouble({'forecast': {'type': 'object'}}, answers={'nope': 1})
    double = ToolsetDouble({'forecast': {'type': 'object'}})
    with pytest.raises(UnrecordedCallError, match="no answer for tool 'forecast'"):
        await Agent(output_type=str).run('Oslo?', model=FunctionModel(_calls_forecast), toolsets=[double])


class Refund(BaseModel):
    amount: float


class Escalate(BaseModel):
    reason: str


async def test_a_double_can_be_told_which_output_tool_to_call() -> None:
    agent = Agent(output_type=[Refund, Escalate])
    both = {'amount': 5.0, 'reason': 'x'}  # fits either type: the script says which
    double = AgentDouble(Script(Output({'reason': 'angry'}, tool='final_result_Escalate')))
    assert (await agent.run('help', model=double)).output == Escalate(reason='angry')
    double = AgentDouble(Script(Output(both, tool='final_result_Refund')))
    assert isinstance((await agent.run('help', model=double)).output, Refund)
    double = AgentDouble(Script(Output(both, tool='final_result_Nope')))
    with pytest.raises(DriftError, match="output tool 'final_result_Nope', which the agent does not offer"):
        await agent.run('help', model=double)


async def test_a_toolset_double_answered_by_an_agentool(tmp_path: Path, agentool_registry: object) -> None:
    create_calculator()
    double = await ToolsetDouble.from_toolset(StdioServer('calculator.add', tmp_path), answer=AgenToolToolset())
    result = await Agent(output_type=str).run('2 + 3?', model=FunctionModel(_real), toolsets=[double])
    assert result.output == '2 + 3 = 5'
    double.calls.assert_called('calculator_add', {'a': 2, 'b': 3})
    assert double.calls[0].result == 5.0


async def test_a_recorded_tool_pydantic_ai_cannot_read_is_a_cassette_error(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    await Agent(output_type=str).run('hi', model=CassetteModel(FunctionModel(_hello), cassette=path, mode='once'))
    cassette = Cassette.load(path)
    cassette.toolsets['calculator'] = [{'name': 'add', 'colour': 'blue'}]
    cassette.save(path)
    replay = CassetteModel(None, cassette=path)
    with pytest.raises(CassetteError, match="holds a tool of toolset 'calculator' pydantic-ai cannot read"):
        await Agent(output_type=str).run(
            'hi', model=replay, toolsets=[CassetteToolset(StdioServer('x', tmp_path), replay)]
        )


@pytest.mark.parametrize(
    ('tools', 'match'),
    [
        (5, 'ToolDefinitions or a name-to-schema mapping; got 5'),
        ('add', "ToolDefinitions or a name-to-schema mapping; got 'add'"),
        ({'a\nb': {}}, 'a tool name must not contain control'),
        ({'  ': {}}, 'a tool name must be a non-empty string'),
        ([ToolDefinition(name='x\u202ey')], 'a tool name must not contain control'),
    ],
)
def test_tools_a_toolset_double_cannot_offer_are_refused_naming_the_option(tools: Any, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match) as caught:
        ToolsetDouble(tools)
    assert caught.value.details['option'] == 'tools'
