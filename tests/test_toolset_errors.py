"""What a call that goes wrong gives back through the LLM toolset and over MCP.

A long output reaches the model cut (and the injector whole), a tool's exception propagates
unchanged, both surfaces publish the route's metadata (sequential calls, hints, no output schema
where the output may be cut), the toolset's validator refuses what no run's input can be, and a
field's message is shown as written. Bad and oversized arguments, refused alike on every surface,
are the matrix in tests/test_hostile_input.py.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from mcp import Client
from pydantic import Field, ValidationError, field_validator
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from agentool import BaseOperationInput, InvalidInputError, Route, RoutingConfig, create_agentool
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


async def test_after_a_refused_call_the_corrected_call_runs(injector: AgenToolInjector) -> None:
    # The refusal itself, alike on every surface, is the matrix's; here the run goes on, through
    # the serial gate of a route that is not concurrent-safe.
    make_notes()
    model, returned = scripted(('notes_put', {'key': 'k', 'text': 'x' * 200}), ('notes_put', {'key': 'k', 'text': 'x'}))
    assert (await Agent(model, toolsets=[AgenToolToolset()]).run('go')).output == 'done'
    assert [(part.outcome, part.content) for part in returned][1:] == [('success', 'stored k')]
    assert returned[0].outcome == 'retried'


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
        result = await client.call_tool('kb_notes_get', {'key': 'ab'})
        assert not result.is_error
        assert result.structured_content is None
        assert result.content[0].model_dump()['text'].startswith('ababababab\n[... truncated')


async def validators() -> dict[str, Any]:
    """Each tool's argument validator, as the toolset gives them to pydantic-ai."""
    tools = await AgenToolToolset[Any]().get_tools(RunContext[Any](deps=None, model=TestModel(), usage=RunUsage()))
    return {name: tool.args_validator for name, tool in tools.items()}


async def test_tens_of_megabytes_of_arguments_are_refused_by_size_before_parsing() -> None:
    make_notes()
    nested = '{"key": "k", "text": ' + '[' * 15_000_000 + ']' * 15_000_000 + '}'  # parsed: a depth error
    with pytest.raises(ValidationError) as caught:
        (await validators())['notes_put'].validate_json(nested)
    assert [e['type'] for e in caught.value.errors()] == ['input_too_large']


async def test_arguments_json_cannot_carry_are_refused_as_a_run_refuses_them(injector: AgenToolInjector) -> None:
    # A model's arguments given as a dict may hold a lone surrogate, which no JSON text (so no run's
    # input) can: `injector.run` refuses that dict with a typed error, and so does the toolset.
    make_notes()
    arguments = {'key': 'k', 'text': '\ud800'}
    with pytest.raises(InvalidInputError) as caught:
        await injector.run('notes', {**arguments, 'operation': 'put'})
    with pytest.raises(ValidationError) as refused:
        (await validators())['notes_put'].validate_python(arguments)
    (detail,) = refused.value.errors()
    assert (detail['type'], detail['msg']) == ('invalid_input', caught.value.message)


class BracedInput(BaseOperationInput):
    operation: Literal['echo']
    text: str

    @field_validator('text')
    @classmethod
    def _no_x(cls, value: str) -> str:
        if value == 'x':
            raise ValueError('use {a} template like {this}')
        return value


async def echo(text: str) -> str:
    return text


async def test_a_field_message_with_braces_is_shown_as_written() -> None:
    create_agentool('braced', BracedInput, RoutingConfig(operation_map={'echo': 'echo'}), [echo])
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('braced_echo', {'text': 'x'})
    assert result.is_error
    text = result.content[0].model_dump()['text']
    assert 'use {a} template like {this}' in text
    assert '{{' not in text
    with pytest.raises(ValidationError) as raised:
        # With a second problem (the operation given again), the errors are merged into a new list.
        (await validators())['braced_echo'].validate_python({'text': 'x', 'operation': 'echo'})
    messages = [error['msg'] for error in raised.value.errors()]
    assert 'Value error, use {a} template like {this}' in messages
