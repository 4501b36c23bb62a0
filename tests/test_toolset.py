"""`AgenToolToolset`: agentool operations as tools of an LLM agent, driven by a scripted `FunctionModel`.

Also: the one selection rule every exposing surface uses (exclude wins, include is an allowlist, else
the default); and what a call that goes wrong gives back through the toolset and over MCP (a long
output reaches the model cut and the injector whole, a tool's exception propagates unchanged, both
surfaces publish the route's metadata, the validator refuses what no run's input can be). Bad and
oversized arguments, refused alike on every surface, are the matrix in tests/test_hostile_input.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

import pytest
from mcp import Client
from pydantic import Field, ValidationError, field_validator
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import RunUsage

from agentool import BaseOperationInput, InvalidInputError, Route, RoutingConfig, create_agentool
from agentool.core.injector import AgenToolInjector
from agentool.errors import ConfigurationError, InvalidToolNameError, SelectorError, ToolNameConflictError
from agentool.filters import TOOL_NAME_PATTERN, is_exposed, select_operations
from agentool.mcp import create_mcp_server
from agentool.toolset import METADATA_KEY, AgenToolToolset
from examples.calculator import create_calculator
from tests.agentools import agentool
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


async def run_notes(
    *steps: Sequence[ToolCallPart] | str, deps: Notes | None = None, toolset: AbstractToolset[Any] | None = None
) -> list[list[ModelMessage]]:
    """Run `steps` as the model with `toolset` (all of notes by default): the messages each request saw."""
    if toolset is None:
        create_notes()
        toolset = AgenToolToolset()
    model, seen = scripted(*steps)
    await Agent(FunctionModel(model), toolsets=[toolset], deps_type=dict).run('go', deps={} if deps is None else deps)
    return seen


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
    notes: Notes = {}
    seen = await run_notes(
        [ToolCallPart('notes_put', {'key': 'a', 'copies': 0, 'operation': 'get'})],
        [ToolCallPart('notes_put', {'key': 'a', 'text': 'fixed'})],
        'ok',
        deps=notes,
    )
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
    seen = await run_notes(
        [ToolCallPart('notes_put', {'key': 'a', 'text': 't', 'copies': 0})],
        [ToolCallPart('notes_put', {'key': 'a', 'text': 't'})],
        'ok',
    )
    (retry,) = returns(seen[1])
    assert retry.outcome == 'retried'
    assert [(e['type'], e['loc'], e['msg']) for e in errors(retry)] == [
        ('greater_than_equal', ['copies'], 'Input should be greater than or equal to 1')
    ]


async def test_invalid_json_arguments_are_a_retry_too() -> None:
    seen = await run_notes([ToolCallPart('notes_get', '{"key": ')], [ToolCallPart('notes_dump', {})], 'ok')
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
    seen = await run_notes(
        [ToolCallPart('notes_check', {'key': 'a'})],
        [ToolCallPart('notes_put', {'key': 'a', 'text': 'x'})],
        [ToolCallPart('notes_check', {'key': 'a'})],
        'ok',
    )
    (retry,) = returns(seen[1])
    assert (retry.outcome, retry.content) == ('retried', "no note 'a' yet; write it first")
    assert [(p.outcome, p.content) for p in returns(seen[3])] == [('success', 'exists')]


@pytest.mark.parametrize('text', ['x' * 40, 'b'], ids=['long: truncated with a visible marker', 'short: unchanged'])
async def test_long_output_is_truncated_with_a_visible_marker(text: str) -> None:
    notes = {'alpha': text}
    (part,) = returns((await run_notes([ToolCallPart('notes_dump', {})], 'ok', deps=notes))[1])
    full = json.dumps(notes, sort_keys=True)
    marker = f'\n[... truncated: showing 20 of {len(full)} characters (max_output_chars=20)]'
    assert part.content == (full if len(full) <= 20 else full[:20] + marker)


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
    refused = r"tool name 'my tool notes_get' .* must match \^\[a-zA-Z0-9_-\]\{1,64\}\$"
    with pytest.raises(InvalidToolNameError, match=refused):
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
    seen = await run_notes([ToolCallPart('notes_get', {'key': 'k'})], 'ok', deps={'k': 'v'}, toolset=toolset)
    assert returns(seen[1])[0].content == 'v'
    assert sorted(await offered_tools(toolset)) == ['notes_check', 'notes_dump', 'notes_get']


async def test_the_retry_prompt_quotes_only_what_the_model_sent() -> None:
    # The toolset fills in the operation field; the retry quoted `{'key': 'a', 'operation': 'put'}`.
    create_notes()
    seen = await run_notes(
        [ToolCallPart('notes_put', {'key': 'a'})],
        [ToolCallPart('notes_put', {'key': 'a', 'text': 't', 'operation': 'get'})],
        'ok',
        toolset=AgenToolToolset(max_retries=2),
    )
    (first,) = returns(seen[1])
    assert [(e['loc'], e['input']) for e in errors(first)] == [(['text'], {'key': 'a'})]
    assert 'operation' not in first.model_response_str()
    (second,) = returns(seen[2])  # an operation key the model did send is quoted as sent
    assert [(e['type'], e['input']) for e in errors(second)] == [('extra_forbidden', 'get')]


async def test_the_deps_function_is_asked_only_for_a_tool_that_takes_a_context() -> None:
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


NOTE_ROUTES = {
    'put': Route(tool='note_put', concurrent_safe=False),
    'get': Route(tool='note_get', max_output_chars=10),
    'boom': 'note_boom',
}


def make_notes() -> None:
    routes = RoutingConfig(operation_map=NOTE_ROUTES)
    create_agentool('notes', NoteInput, routes, [note_put, note_get, note_boom], max_input_bytes=120)


def calling(*calls: tuple[str, dict[str, Any]]) -> tuple[FunctionModel, list[ToolReturnPart]]:
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
    model, returned = calling(('notes_put', {'key': 'k', 'text': 'x' * 200}), ('notes_put', {'key': 'k', 'text': 'x'}))
    assert (await Agent(model, toolsets=[AgenToolToolset()]).run('go')).output == 'done'
    assert [(part.outcome, part.content) for part in returned][1:] == [('success', 'stored k')]
    assert returned[0].outcome == 'retried'


async def test_a_long_output_reaches_the_model_cut_and_the_injector_whole(injector: AgenToolInjector) -> None:
    make_notes()
    model, returned = calling(('notes_get', {'key': 'ab'}))
    await Agent(model, toolsets=[AgenToolToolset()]).run('go')
    assert returned[0].content == 'ababababab\n[... truncated: showing 10 of 100 characters (max_output_chars=10)]'
    assert await injector.call('notes', {'operation': 'get', 'key': 'ab'}) == 'ab' * 50


async def test_a_tool_exception_propagates_out_of_the_llm_run_unchanged(injector: AgenToolInjector) -> None:
    make_notes()
    model, _ = calling(('notes_boom', {'key': 'k'}))
    with pytest.raises(ZeroDivisionError, match='tool bug'):
        await Agent(model, toolsets=[AgenToolToolset()]).run('go')


async def test_tool_definitions_carry_the_route_metadata(injector: AgenToolInjector) -> None:
    make_notes()
    offered = await offered_tools(AgenToolToolset(prefix='kb_'))
    assert sorted(offered) == ['kb_notes_boom', 'kb_notes_get', 'kb_notes_put']
    put = offered['kb_notes_put']
    assert put.sequential is True
    assert put.parameters_json_schema['required'] == ['text']  # the schema gives key a real default
    assert put.metadata is not None
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


class Input(BaseOperationInput):
    operation: Literal['read', 'write', 'purge', 'old'] = Field(description='What to do.')


def read() -> str:
    return 'r'


def write() -> str:
    return 'w'


def purge() -> str:
    return 'p'


def old() -> str:
    return 'o'


ROUTES = {
    'read': Route(tool='read', read_only=True, tags=('safe',)),
    'write': 'write',
    'purge': Route(tool='purge', destructive=True),
    'old': Route(tool='old', deprecated=True),
}


def make(name: str, *, tags: list[str] | None = None) -> None:
    create_agentool(name, Input, RoutingConfig(operation_map=ROUTES), [read, write, purge, old], tags=tags)


def names(**kwargs: object) -> list[str]:
    return [f'{op.agentool}.{op.operation}' for op in select_operations(**kwargs)]  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ('include', 'exclude', 'deprecated', 'expected'),
    [
        (None, (), False, True),  # default: exposed
        (None, (), True, False),  # default: deprecated is not
        (['kv'], (), True, True),  # include is an allowlist, whatever the default
        (['other'], (), False, False),  # not on the allowlist
        (['kv'], ['kv.read'], False, False),  # exclude wins over include
        (['kv.read'], ['kv'], False, False),  # ... however specific the include
        (None, ['tag:safe'], False, False),
        (['tag:safe'], (), True, True),
    ],
)
def test_the_rule(include: list[str] | None, exclude: list[str], deprecated: bool, expected: bool) -> None:
    route = Route(tool='read', tags=('safe',), deprecated=deprecated)
    assert is_exposed('kv', 'read', route, include=include, exclude=exclude) is expected


def test_default_exposes_everything_but_deprecated_in_a_stable_order() -> None:
    make('b')
    make('a')
    assert names() == ['a.read', 'a.write', 'a.purge', 'b.read', 'b.write', 'b.purge']


def test_selectors_by_name_operation_tag_and_wildcard() -> None:
    make('kv', tags=['storage'])
    make('cache')
    assert names(include='kv') == ['kv.read', 'kv.write', 'kv.purge', 'kv.old']  # a str is one selector
    assert names(include=['cache.read', 'kv.old']) == ['cache.read', 'kv.old']
    assert names(include=['tag:safe']) == ['cache.read', 'kv.read']  # route tag
    assert names(include=['tag:storage'], exclude=['kv.old']) == ['kv.read', 'kv.write', 'kv.purge']  # agentool tag
    assert names(exclude=['*.purge', 'c*']) == ['kv.read', 'kv.write']
    assert names(include=['tag:sa*']) == ['cache.read', 'kv.read']
    assert names(include=['*.nothing-matches', 'tag:nothing-*']) == []  # a wildcard may match nothing


@pytest.mark.parametrize('option', ['include', 'exclude'])
def test_a_selector_that_matches_nothing_is_an_error_with_suggestions(option: str) -> None:
    make('storage')
    with pytest.raises(SelectorError, match=r"selector 'storgae' matches no .*did you mean 'storage'") as caught:
        select_operations(**{option: ['storgae']})  # pyright: ignore[reportArgumentType]
    assert (caught.value.details['selector'], caught.value.details['option']) == ('storgae', option)
    assert caught.value.details['suggestions'][0] == 'storage'
    with pytest.raises(SelectorError, match=r"'storage\.raed'"):
        select_operations(**{option: ['storage.raed']})  # pyright: ignore[reportArgumentType]
    with pytest.raises(SelectorError, match=r"'tag:sfe'.*did you mean 'tag:safe'"):
        select_operations(**{option: ['tag:sfe']})  # pyright: ignore[reportArgumentType]


def test_tool_names_that_collide_are_an_error_not_shadowing() -> None:
    make('kv_read')  # 'kv_read' + '_' + 'write'

    class Other(BaseOperationInput):
        operation: Literal['read_write']

    agentool('kv', Other, {'read_write': read})  # 'kv' + '_' + 'read_write'
    with pytest.raises(ToolNameConflictError, match="tool name 'kv_read_write' would expose both") as caught:
        select_operations()
    assert isinstance(caught.value, ConfigurationError)
    assert caught.value.details['operations'] == ['kv.read_write', 'kv_read.write']
    assert len(select_operations(separator='-')) == 4  # another separator resolves it
    assert len(select_operations(exclude=['kv'])) == 3  # and so does leaving one out


def test_prefix_and_separator() -> None:
    make('kv')
    assert [op.name for op in select_operations(include=['kv.read'], prefix='x_', separator='-')] == ['x_kv-read']


@pytest.mark.parametrize(
    ('options', 'option'),
    [({'include': 5}, 'include'), ({'exclude': [None]}, 'exclude'), ({'registry': 'reg'}, 'registry')],
)
def test_options_of_the_wrong_type_are_a_configuration_error(options: dict[str, object], option: str) -> None:
    make('kv')
    with pytest.raises(ConfigurationError, match=option) as caught:
        select_operations(**options)  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == option
    with pytest.raises(ConfigurationError, match='include'):
        is_exposed('kv', 'read', Route(tool='read'), include=[3])  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ('prefix', 'separator', 'tool_name'),
    [
        ('my tool ', '_', 'my tool kv_read'),
        ('', '.', 'kv.read'),
        ('', '/', 'kv/read'),
        ('x' * 58, '_', 'x' * 58 + 'kv_read'),  # 65 characters
    ],
)
def test_a_tool_name_outside_the_shared_rule_is_refused_naming_it(prefix: str, separator: str, tool_name: str) -> None:
    make('kv')
    with pytest.raises(InvalidToolNameError, match=re.escape(f'tool name {tool_name!r}')) as caught:
        select_operations(include=['kv.read'], prefix=prefix, separator=separator)
    assert isinstance(caught.value, ConfigurationError)
    assert caught.value.details['tool_name'] == tool_name
    assert caught.value.details['rule'] == TOOL_NAME_PATTERN == '^[a-zA-Z0-9_-]{1,64}$'
    assert TOOL_NAME_PATTERN in str(caught.value)


def test_an_agentool_name_outside_the_rule_can_be_left_out() -> None:
    make('kv')
    make('my.kv')
    with pytest.raises(InvalidToolNameError, match=re.escape("tool name 'my.kv_read'")):
        select_operations()
    assert {op.agentool for op in select_operations(exclude=['my.kv'])} == {'kv'}
    (longest,) = select_operations(include=['kv.read'], prefix='x' * 58, separator='')
    assert longest.name == 'x' * 58 + 'kvread'  # 64 characters: the longest allowed


@pytest.mark.parametrize(
    ('arguments', 'options', 'option'),
    [
        (('notes', 'get', Route(tool='get')), {'tags': 'ab', 'include': 'tag:a'}, 'tags'),  # not tags 'a' and 'b'
        (('notes', 'get', Route(tool='get')), {'tags': 3}, 'tags'),
        ((3, 'get', Route(tool='get')), {'include': 'n*'}, 'agentool'),
        (('notes', None, Route(tool='get')), {'include': 'notes.*'}, 'operation'),
        (('notes', 'get', 'get'), {}, 'route'),
    ],
)
def test_is_exposed_refuses_arguments_of_the_wrong_type(
    arguments: tuple[Any, ...], options: dict[str, Any], option: str
) -> None:
    # Before the fix: a lone string of tags was read as its characters (exposed by 'tag:a'), and the
    # others failed with TypeError or AttributeError.
    with pytest.raises(ConfigurationError) as caught:
        is_exposed(*arguments, **options)
    assert caught.value.details['option'] == option


def test_is_exposed_follows_the_documented_rule() -> None:
    old = Route(tool='get', deprecated=True, tags=('reader',))
    assert not is_exposed('notes', 'old_get', old)  # deprecated: not by default
    assert is_exposed('notes', 'old_get', old, include=['notes.old_get'])  # an allowlist, deprecated included
    assert is_exposed('notes', 'old_get', old, include='tag:read*')
    assert not is_exposed('notes', 'old_get', old, include='notes', exclude='*.old_*')  # exclude wins
    assert is_exposed('notes', 'get', Route(tool='get'), tags=['admin'], include='tag:admin')  # the agentool's tags
