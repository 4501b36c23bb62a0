"""Every unknown name says "did you mean ...", on every surface.

A mistyped operation (`serch`), agentool (`note`), tool (`notes_serch`) or selector (`notes.serch`)
is answered with the close names, in the message and in `details['suggestions']`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import BaseOperationInput, RoutingConfig, create_agentool, get_registry
from agentool.cli import main
from agentool.core.injector import AgenToolInjector, get_injector
from agentool.dispatch import DispatchCapability, JsonRule
from agentool.errors import AgenToolNotFoundError, SelectorError, UnknownOperationError, did_you_mean, suggest
from agentool.mcp import create_mcp_server
from agentool.toolset import AgenToolToolset
from tests.agentools import make_greeter

MISTYPED = {'operation': 'serch', 'query': 'milk'}
MESSAGE = "agentool 'notes' has no operation 'serch'; known operations: 'search', 'write'; did you mean 'search'?"


class NotesInput(BaseOperationInput):
    operation: Literal['search', 'write']
    query: str = ''


async def search(query: str) -> list[str]:
    return [query]


async def write(query: str) -> list[str]:
    return []


def create_notes() -> Any:
    routes = RoutingConfig(operation_map={'search': 'search', 'write': 'write'})
    return create_agentool('notes', NotesInput, routes, [search, write])


def test_suggest_finds_close_spellings_and_names_containing_the_word() -> None:
    assert suggest('serch', ['search', 'write']) == ['search']
    assert suggest('note', ['notes', 'calculator']) == ['notes']
    assert suggest('zzz', ['search']) == []
    assert suggest('s' * 1_000_000, ['search']) == []  # no comparison at all
    assert did_you_mean(['a', 'b']) == "; did you mean 'a' or 'b'?"
    assert did_you_mean([]) == ''


@pytest.mark.parametrize('lean', [True, False], ids=['lean', 'graph'])
async def test_agent_run(lean: bool) -> None:
    agent = create_notes()
    agent.lean = lean
    for _ in range(2):  # a first run may take the graph to learn the agent's shape
        with pytest.raises(UnknownOperationError) as caught:
            await agent.run(json.dumps(MISTYPED))
        assert str(caught.value) == MESSAGE
        assert caught.value.details['suggestions'] == ['search']


async def test_a_model_string() -> None:
    create_notes()
    with pytest.raises(UnknownOperationError, match="did you mean 'search'"):
        await Agent('agentool:notes').run(json.dumps(MISTYPED))


async def test_injector_call() -> None:
    create_notes()
    with pytest.raises(UnknownOperationError) as caught:
        await get_injector().call('notes', MISTYPED)
    assert str(caught.value) == MESSAGE
    assert caught.value.details['suggestions'] == ['search']


@pytest.mark.parametrize(
    ('argv', 'expected'),
    [
        (['call', 'notes', json.dumps(MISTYPED)], f'agentool: error: {MESSAGE}\n'),
        (
            ['call', 'note', '{}'],
            "agentool: error: no agentool named 'note' is registered; did you mean 'notes'?\n",
        ),
        (
            ['schema', 'notes', '--operation', 'serch'],
            "agentool: error: agentool 'notes' has no operation 'serch'; did you mean 'search'?\n",
        ),
    ],
    ids=['operation', 'agentool', 'schema-operation'],
)
def test_the_cli_says_it_once(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    create_notes()
    assert main(argv) == 1
    assert capsys.readouterr().err == expected


async def test_mcp_unknown_tool() -> None:
    create_notes()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        with pytest.raises(MCPError, match="unknown tool 'notes_serch'; did you mean 'notes_search'") as caught:
            await client.call_tool('notes_serch', {})
    assert caught.value.error.data is not None
    assert caught.value.error.data['tool'] == 'notes_serch'
    assert caught.value.error.data['suggestions'][0] == 'notes_search'  # the closest first


def test_toolset_and_mcp_selectors() -> None:
    create_notes()
    with pytest.raises(SelectorError, match=r"did you mean 'notes\.search'") as caught:
        AgenToolToolset(include=['notes.serch'])
    assert caught.value.details['suggestions'][0] == 'notes.search'
    with pytest.raises(SelectorError, match=r"did you mean 'notes\.search'"):
        create_mcp_server(include=['notes.serch'])


async def test_dispatch() -> None:
    create_notes()

    def never(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise AssertionError('a dispatched turn makes no model call')

    agent = Agent(FunctionModel(never), capabilities=[DispatchCapability([JsonRule(agentool='notes')])])
    with pytest.raises(UnknownOperationError) as caught:
        await agent.run(json.dumps(MISTYPED))
    assert str(caught.value).startswith(MESSAGE)
    assert caught.value.details['suggestions'] == ['search']


async def test_an_unknown_agentool_is_one_error_with_one_details_shape_on_every_surface() -> None:
    create_notes()
    injector = get_injector()
    errors: list[AgenToolNotFoundError] = []
    for attempt in (
        lambda: get_registry().require('note'),
        lambda: injector.get('note'),
        lambda: injector.unregister('note'),
    ):
        with pytest.raises(AgenToolNotFoundError) as caught:
            attempt()
        errors.append(caught.value)
    for run in (lambda: injector.call('note', MISTYPED), lambda: Agent('agentool:note').run(json.dumps(MISTYPED))):
        with pytest.raises(AgenToolNotFoundError) as caught:
            await run()
        errors.append(caught.value)
    for error in errors:
        assert error.details == {'agentool': 'note', 'name': 'note', 'suggestions': ['notes']}
        assert str(error).endswith("; did you mean 'notes'?")


@pytest.mark.parametrize('name', [5, None, ['notes']])
async def test_a_name_that_is_not_a_string_names_nothing_with_the_same_details_keys(name: Any) -> None:
    create_notes()
    injector = get_injector()
    for attempt in (lambda: get_registry().require(name), lambda: injector.get(name)):
        with pytest.raises(AgenToolNotFoundError, match='names are strings') as caught:
            attempt()
        assert caught.value.details == {'name': repr(name), 'suggestions': []}
    with pytest.raises(AgenToolNotFoundError, match='names are strings') as caught:
        await injector.call(name, MISTYPED)
    assert caught.value.details == {'name': repr(name), 'suggestions': []}


async def test_an_unknown_mcp_tool_is_a_protocol_error_with_suggestions(injector: AgenToolInjector) -> None:
    make_greeter()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        with pytest.raises(MCPError) as caught:
            await client.call_tool('greeter_gret', {'user': 'u1'})
    assert caught.value.error.code == INVALID_PARAMS
    assert "unknown tool 'greeter_gret'; did you mean 'greeter_greet'?" in caught.value.error.message
    assert caught.value.error.data == {'tool': 'greeter_gret', 'suggestions': ['greeter_greet']}
