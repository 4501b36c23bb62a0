"""`AgenToolToolset`: agentool operations as tools of an LLM agent, driven by a scripted `FunctionModel`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, cast

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

from agentool.errors import ConfigurationError, InvalidToolNameError
from agentool.toolset import METADATA_KEY, AgenToolToolset
from examples.calculator import create_calculator
from tests.notes_agentool import Notes, create_notes

Script = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


def scripted(*steps: Sequence[ToolCallPart] | str) -> tuple[Script, list[list[ModelMessage]]]:
    """A model that answers each request with the next step: tool calls, or final text."""
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = steps[len(seen)]
        seen.append(list(messages))
        return ModelResponse(parts=[TextPart(step)] if isinstance(step, str) else list(step))

    return model, seen


def errors(part: ToolReturnPart) -> list[dict[str, Any]]:
    """The validation errors a retried return carries."""
    assert part.outcome == 'retried'
    assert isinstance(part.content, list)
    return cast('list[dict[str, Any]]', part.content)


def returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return [part for part in last.parts if isinstance(part, ToolReturnPart)]


async def offered_tools(toolset: AbstractToolset[Any]) -> dict[str, ToolDefinition]:
    offered: dict[str, ToolDefinition] = {}

    def spy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.update((tool.name, tool) for tool in info.function_tools)
        return ModelResponse(parts=[TextPart('done')])

    await Agent(FunctionModel(spy), toolsets=[toolset]).run('hi', deps={})
    return offered


async def test_one_tool_per_operation_with_exactly_its_arguments() -> None:
    create_notes()
    tools = await offered_tools(AgenToolToolset())
    assert list(tools) == ['notes_get', 'notes_put', 'notes_dump', 'notes_check']  # deprecated 'old' left out
    get_schema = tools['notes_get'].parameters_json_schema
    # Required by the operation (the tool cannot do without it, though the schema field is optional):
    # published without the schema's `"default": null`, and without `null` among its types.
    assert get_schema['properties'] == {'key': {'type': 'string', 'title': 'Key', 'description': 'The note key.'}}
    assert get_schema['properties']['key']['description'] == 'The note key.'
    assert get_schema['required'] == ['key']  # the tool cannot do without it, though the schema field is optional
    assert get_schema['additionalProperties'] is False
    put_schema = tools['notes_put'].parameters_json_schema
    assert list(put_schema['properties']) == ['key', 'text', 'copies']
    assert put_schema['required'] == ['key', 'text']
    assert put_schema['properties']['copies']['minimum'] == 1
    assert 'required' not in tools['notes_dump'].parameters_json_schema
    assert tools['notes_get'].description == 'Read a note.'


async def test_metadata_maps_to_sequential_and_tool_metadata() -> None:
    create_notes()
    tools = await offered_tools(AgenToolToolset())
    assert tools['notes_put'].sequential is True
    assert tools['notes_get'].sequential is False
    assert tools['notes_get'].metadata == {
        METADATA_KEY: {
            'agentool': 'notes',
            'operation': 'get',
            'read_only': True,
            'idempotent': True,
            'destructive': False,
            'concurrent_safe': True,
            'max_output_chars': None,
            'tags': ['reader'],
            'deprecated': False,
        }
    }
    assert tools['notes_put'].metadata is not None
    assert tools['notes_put'].metadata[METADATA_KEY]['destructive'] is True


async def test_an_llm_style_run_writes_then_reads() -> None:
    create_notes()
    model, seen = scripted(
        [ToolCallPart('notes_put', {'key': 'a', 'text': 'hi', 'copies': 2})],
        [ToolCallPart('notes_get', '{"key": "a"}')],
        'the note says hihi',
    )
    notes: Notes = {}
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset()], deps_type=dict)
    result = await agent.run('remember hi twice', deps=notes)
    assert result.output == 'the note says hihi'
    assert notes == {'a': 'hihi'}
    assert [(p.tool_name, p.content) for p in returns(seen[1])] == [('notes_put', 'stored a')]
    assert [(p.tool_name, p.content) for p in returns(seen[2])] == [('notes_get', 'hihi')]


async def test_a_validation_failure_goes_back_as_a_retry_and_the_model_recovers() -> None:
    create_notes()
    model, seen = scripted(
        [ToolCallPart('notes_put', {'key': 'a', 'copies': 0, 'operation': 'get'})],
        [ToolCallPart('notes_put', {'key': 'a', 'text': 'fixed'})],
        'ok',
    )
    notes: Notes = {}
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset()], deps_type=dict)
    assert (await agent.run('go', deps=notes)).output == 'ok'
    (retry,) = returns(seen[1])
    assert retry.outcome == 'retried'
    assert retry.tool_name == 'notes_put'
    # Shape problems of this operation come first: the operation field is the toolset's to set.
    # Every failing field at once: the surface's own (the operation), then the input's in field order.
    assert [(e['type'], e['loc']) for e in errors(retry)] == [
        ('extra_forbidden', ['operation']),
        ('missing', ['text']),
        ('greater_than_equal', ['copies']),
    ]
    message = retry.model_response_str()
    assert 'Extra inputs are not permitted' in message
    assert 'Field required' in message
    assert notes == {'a': 'fixed'}


async def test_a_schema_constraint_failure_names_the_field() -> None:
    create_notes()
    model, seen = scripted(
        [ToolCallPart('notes_put', {'key': 'a', 'text': 't', 'copies': 0})],
        [ToolCallPart('notes_put', {'key': 'a', 'text': 't'})],
        'ok',
    )
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset()], deps_type=dict)
    await agent.run('go', deps={})
    (retry,) = returns(seen[1])
    assert retry.outcome == 'retried'
    assert [(e['type'], e['loc'], e['msg']) for e in errors(retry)] == [
        ('greater_than_equal', ['copies'], 'Input should be greater than or equal to 1')
    ]


async def test_invalid_json_arguments_are_a_retry_too() -> None:
    create_notes()
    model, seen = scripted([ToolCallPart('notes_get', '{"key": ')], [ToolCallPart('notes_dump', {})], 'ok')
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset()], deps_type=dict)
    await agent.run('go', deps={})
    (retry,) = returns(seen[1])
    assert retry.outcome == 'retried'
    assert errors(retry)[0]['type'] == 'json_invalid'


async def test_retries_are_bounded_by_pydantic_ai() -> None:
    create_notes()
    bad = [ToolCallPart('notes_get', {})]
    model, _ = scripted(bad, bad, bad, 'never')
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset(max_retries=1)], deps_type=dict)
    with pytest.raises(UnexpectedModelBehavior, match="Tool 'notes_get' exceeded max retries count of 1"):
        await agent.run('go', deps={})


async def test_a_tool_exception_propagates_out_of_the_run() -> None:
    create_notes()
    model, _ = scripted([ToolCallPart('notes_get', {'key': 'missing'})], 'never')
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset()], deps_type=dict)
    with pytest.raises(KeyError, match='missing'):
        await agent.run('go', deps={})


async def test_model_retry_raised_by_a_tool_follows_pydantic_ai() -> None:
    create_notes()
    model, seen = scripted(
        [ToolCallPart('notes_check', {'key': 'a'})],
        [ToolCallPart('notes_put', {'key': 'a', 'text': 'x'})],
        [ToolCallPart('notes_check', {'key': 'a'})],
        'ok',
    )
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset()], deps_type=dict)
    await agent.run('go', deps={})
    (retry,) = returns(seen[1])
    assert (retry.outcome, retry.content) == ('retried', "no note 'a' yet; write it first")
    assert [(p.outcome, p.content) for p in returns(seen[3])] == [('success', 'exists')]


async def test_long_output_is_truncated_with_a_visible_marker() -> None:
    create_notes()
    notes = {'alpha': 'x' * 40}
    model, seen = scripted([ToolCallPart('notes_dump', {})], 'ok')
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset()], deps_type=dict)
    await agent.run('go', deps=notes)
    (part,) = returns(seen[1])
    full = json.dumps(notes, sort_keys=True)
    assert part.content == f'{full[:20]}\n[... truncated: showing 20 of {len(full)} characters (max_output_chars=20)]'


async def test_short_output_is_returned_unchanged() -> None:
    create_notes()
    model, seen = scripted([ToolCallPart('notes_dump', {})], 'ok')
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset()], deps_type=dict)
    await agent.run('go', deps={'a': 'b'})
    assert returns(seen[1])[0].content == '{"a": "b"}'


async def test_prefix_and_separator_shape_tool_names() -> None:
    create_notes()
    tools = await offered_tools(AgenToolToolset('notes.get', prefix='kb_', separator='__'))
    assert list(tools) == ['kb_notes__get']


@pytest.mark.parametrize(
    ('options', 'option'),
    [
        ({'include': 5}, 'include'),
        ({'include': [1]}, 'include'),
        ({'exclude': [None]}, 'exclude'),
        ({'exclude': b'notes'}, 'exclude'),
        ({'registry': 'reg'}, 'registry'),
        ({'prefix': None}, 'prefix'),
        ({'separator': 3}, 'separator'),
        ({'deps': 'x'}, 'deps'),
        ({'max_retries': '3'}, 'max_retries'),
        ({'max_retries': -1}, 'max_retries'),
        ({'max_retries': True}, 'max_retries'),
        ({'id': 7}, 'id'),
    ],
)
def test_bad_options_are_refused_at_construction_naming_the_option(options: dict[str, Any], option: str) -> None:
    create_notes()
    with pytest.raises(ConfigurationError, match=option) as caught:
        AgenToolToolset(**options)
    assert caught.value.details['option'] == option
    assert caught.value.details['value'] == repr(options[option])


def test_a_prefix_making_invalid_tool_names_is_refused_at_construction() -> None:
    create_notes()
    with pytest.raises(
        InvalidToolNameError, match=r"tool name 'my tool notes_get' .* must match \^\[a-zA-Z0-9_-\]\{1,64\}\$"
    ):
        AgenToolToolset('notes.get', prefix='my tool ')


def test_zero_retries_and_an_empty_separator_are_valid_options() -> None:
    create_notes()
    toolset = AgenToolToolset('notes.get', separator='', max_retries=0, deps=None, id='t')
    assert [op.name for op in toolset.operations] == ['notesget']
    assert toolset.max_retries == 0


async def test_include_and_exclude_select_tools_and_exclude_wins() -> None:
    create_notes()
    toolset = AgenToolToolset(['notes.old', 'tag:reader', 'notes.put'], exclude='notes.put')
    assert [t.name for t in toolset.operations] == ['notes_get', 'notes_old']
    tools = await offered_tools(toolset)
    assert tools['notes_old'].description == '(Deprecated) The old reader.'


async def test_deps_function_gives_each_agentool_its_own_deps() -> None:
    create_notes()
    notes: Notes = {'k': 'from the notes deps'}
    model, seen = scripted([ToolCallPart('notes_get', {'key': 'k'})], 'ok')
    toolset = AgenToolToolset[int](deps=lambda ctx, name: notes if name == 'notes' else None)
    agent = Agent(FunctionModel(model), toolsets=[toolset], deps_type=int)
    await agent.run('go', deps=42)
    assert returns(seen[1])[0].content == 'from the notes deps'


async def test_a_route_with_a_transform_offers_every_field_it_reads() -> None:
    create_calculator()
    model, seen = scripted([ToolCallPart('calculator_divide', {'a': 1, 'b': 4})], 'ok')
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset('calculator')])
    await agent.run('go')
    assert returns(seen[1])[0].content == 0.25
    tools = await offered_tools(AgenToolToolset('calculator.divide'))
    schema = tools['calculator_divide'].parameters_json_schema
    assert (list(schema['properties']), schema['required']) == (['a', 'b'], ['a', 'b'])


async def test_the_toolset_works_with_pydantic_ai_wrappers() -> None:
    create_notes()
    toolset = AgenToolToolset().filtered(
        lambda ctx, tool: bool(tool.metadata and tool.metadata[METADATA_KEY]['read_only'])
    )
    model, seen = scripted([ToolCallPart('notes_get', {'key': 'k'})], 'ok')
    agent = Agent(FunctionModel(model), toolsets=[toolset], deps_type=dict)
    await agent.run('go', deps={'k': 'v'})
    assert returns(seen[1])[0].content == 'v'
    assert sorted(await offered_tools(toolset)) == ['notes_check', 'notes_dump', 'notes_get']


async def test_the_retry_prompt_quotes_only_what_the_model_sent() -> None:
    # The toolset fills in the operation field; the retry quoted `{'key': 'a', 'operation': 'put'}`.
    create_notes()
    model, seen = scripted(
        [ToolCallPart('notes_put', {'key': 'a'})],
        [ToolCallPart('notes_put', {'key': 'a', 'text': 't', 'operation': 'get'})],
        'ok',
    )
    agent = Agent(FunctionModel(model), toolsets=[AgenToolToolset(max_retries=2)], deps_type=dict)
    await agent.run('go', deps={})
    (first,) = returns(seen[1])
    assert [(e['loc'], e['input']) for e in errors(first)] == [(['text'], {'key': 'a'})]
    assert 'operation' not in first.model_response_str()
    (second,) = returns(seen[2])  # an operation key the model did send is quoted as sent
    assert [(e['type'], e['input']) for e in errors(second)] == [('extra_forbidden', 'get')]


async def test_the_deps_function_is_asked_only_for_a_tool_that_takes_a_context() -> None:
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel

    create_notes()
    asked: list[str] = []

    def failing(ctx: RunContext[Any], name: str) -> Notes:
        asked.append(name)
        raise RuntimeError('the store is down')

    toolset = AgenToolToolset(include=['notes'], deps=failing)
    result = await Agent(TestModel(call_tools=['notes_old']), toolsets=[toolset]).run('go')  # `old` takes no context
    returns = [part for message in result.all_messages() for part in message.parts if isinstance(part, ToolReturnPart)]
    assert [part.tool_name for part in returns] == ['notes_old']
    assert asked == []
    with pytest.raises(RuntimeError, match='the store is down'):
        await Agent(TestModel(call_tools=['notes_get']), toolsets=[toolset]).run('go')
    assert asked == ['notes']


def test_a_deps_function_that_cannot_take_the_context_and_the_agentool_is_refused_when_built() -> None:
    with pytest.raises(ConfigurationError, match=r'deps must be a function called as deps\(ctx, agentool\)') as caught:
        AgenToolToolset(deps=lambda agentool: None)  # pyright: ignore[reportArgumentType]  # the MCP server's form
    assert caught.value.details['option'] == 'deps'
    AgenToolToolset(deps=lambda ctx, agentool: None)
