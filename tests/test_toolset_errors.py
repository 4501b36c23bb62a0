"""What a call that goes wrong gives back through the LLM toolset and over MCP.

Arguments over `max_input_bytes` are a retry carrying `input_too_large`, a long output reaches the model
cut (and the injector whole), a tool's exception propagates unchanged, and both surfaces publish the
route's metadata (sequential calls, hints, no output schema where the output may be cut).
"""

from __future__ import annotations

from typing import Any, Literal, cast

import pytest
from mcp import Client
from pydantic import Field
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import BaseOperationInput, Route, RoutingConfig, create_agentool
from agentool.core.injector import AgenToolInjector
from agentool.mcp import create_mcp_server
from agentool.toolset import AgenToolToolset


class NoteInput(BaseOperationInput):
    operation: Literal['put', 'get', 'boom']
    key: str = Field(default='', max_length=20)
    text: str | None = None


async def note_put(key: str, text: str) -> str:
    """Store a note."""
    return f'stored {key}'


async def note_get(key: str) -> str:
    """Read a note, long."""
    return key * 50


async def note_boom(key: str) -> str:
    raise ZeroDivisionError('tool bug')


def make_notes() -> None:
    create_agentool(
        'notes',
        NoteInput,
        RoutingConfig(
            operation_map={
                'put': Route(tool='note_put', concurrent_safe=False),
                'get': Route(tool='note_get', max_output_chars=10),
                'boom': 'note_boom',
            }
        ),
        [note_put, note_get, note_boom],
        max_input_bytes=120,
    )


def scripted(*calls: tuple[str, dict[str, Any]]) -> tuple[FunctionModel, list[ToolReturnPart]]:
    """A model making `calls` one per turn, then answering 'done'; what each call returned is kept."""
    returned: list[ToolReturnPart] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned.extend(p for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        turn = sum(1 for m in messages if isinstance(m, ModelResponse))
        if turn < len(calls):
            return ModelResponse(parts=[ToolCallPart(*calls[turn])])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(model), returned


async def test_arguments_over_max_input_bytes_are_a_retry_carrying_input_too_large(injector: AgenToolInjector) -> None:
    make_notes()
    model, returned = scripted(('notes_put', {'key': 'k', 'text': 'x' * 200}), ('notes_put', {'key': 'k', 'text': 'x'}))
    assert (await Agent(model, toolsets=[AgenToolToolset()]).run('go')).output == 'done'
    first, second = returned
    assert first.outcome == 'retried'
    assert isinstance(first.content, list)
    (error,) = cast('list[dict[str, Any]]', first.content)
    assert error['type'] == 'input_too_large'
    assert "input to agentool 'notes' is" in error['msg']
    assert second.content == 'stored k'


async def test_a_long_output_reaches_the_model_cut_and_the_injector_whole(injector: AgenToolInjector) -> None:
    make_notes()
    model, returned = scripted(('notes_get', {'key': 'ab'}))
    await Agent(model, toolsets=[AgenToolToolset()]).run('go')
    assert returned[0].content == 'ababababab\n[... truncated: showing 10 of 100 characters (max_output_chars=10)]'
    assert await injector.call('notes', {'operation': 'get', 'key': 'ab'}) == 'ab' * 50


async def test_a_tool_exception_propagates_out_of_the_llm_run_unchanged(injector: AgenToolInjector) -> None:
    make_notes()
    model, _ = scripted(('notes_boom', {'key': 'k'}))
    with pytest.raises(ZeroDivisionError, match='tool bug'):
        await Agent(model, toolsets=[AgenToolToolset()]).run('go')


async def test_tool_definitions_carry_the_route_metadata(injector: AgenToolInjector) -> None:
    make_notes()
    offered: dict[str, Any] = {}

    def spy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.update((tool.name, tool) for tool in info.function_tools)
        return ModelResponse(parts=[TextPart('done')])

    await Agent(FunctionModel(spy), toolsets=[AgenToolToolset(prefix='kb_')]).run('hi')
    assert sorted(offered) == ['kb_notes_boom', 'kb_notes_get', 'kb_notes_put']
    put = offered['kb_notes_put']
    assert put.sequential is True
    assert put.parameters_json_schema['required'] == ['text']  # the schema gives key a real default
    assert put.metadata['agentool']['agentool'] == 'notes'
    assert offered['kb_notes_get'].return_schema is None  # its output may be truncated


async def test_mcp_lists_hints_and_reports_errors_as_results(injector: AgenToolInjector) -> None:
    make_notes()
    async with Client(create_mcp_server(prefix='kb_')) as client:  # pyright: ignore[reportArgumentType]
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert sorted(tools) == ['kb_notes_boom', 'kb_notes_get', 'kb_notes_put']
        hints = tools['kb_notes_put'].annotations
        assert hints is not None
        assert hints.destructive_hint is False  # always sent: MCP's default would be true
        assert tools['kb_notes_get'].output_schema is None  # max_output_chars: no output schema
        assert tools['kb_notes_put'].meta == {
            'agentool': {
                'agentool': 'notes',
                'operation': 'put',
                'concurrent_safe': False,
                'max_output_chars': None,
                'tags': [],
                'deprecated': False,
            }
        }
        cases = {
            'kb_notes_put': ({'key': 'k'}, "field 'text': Field required"),
            'kb_notes_get': ({'key': 'k' * 21}, "field 'key': String should have at most 20 characters"),
            'kb_notes_boom': ({'key': 'k'}, 'failed: ZeroDivisionError: tool bug'),
        }
        for tool, (arguments, message) in cases.items():
            result = await client.call_tool(tool, arguments)
            assert result.is_error
            assert message in result.content[0].model_dump()['text']
        result = await client.call_tool('kb_notes_put', {'key': 'k', 'text': 'x' * 200})
        assert result.is_error
        assert (
            "operation 'put'): InputTooLargeError: input to agentool 'notes' is"
            in result.content[0].model_dump()['text']
        )
        result = await client.call_tool('kb_notes_get', {'key': 'ab'})
        assert not result.is_error
        assert result.structured_content is None
        assert result.content[0].model_dump()['text'].startswith('ababababab\n[... truncated')
