"""Second-pass audit of the injector, the LLM toolset and the MCP server: held-out tests from the docs.

Each test goes through the public API only (`injector.run/call`, handles, `AgenToolToolset`,
`create_mcp_server`) and checks a claim of `docs/concepts/injector.md`, `docs/guides/llm-toolset.md`
or `docs/guides/mcp.md`, or an edge the library's standard covers (typed errors, never a foreign one).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.core.handle import AgenToolHandle, Uses
from agentool.core.injector import AgenToolInjector, get_injector, use_injector
from agentool.errors import ConfigurationError, MissingDepsError
from agentool.mcp import create_mcp_server
from agentool.toolset import AgenToolToolset


@pytest.fixture
def injector() -> Iterator[AgenToolInjector]:
    with use_injector() as fresh:
        yield fresh


# --- a small system: a greeter reading a resource and calling a kv agentool through a handle ------

MADE: list[str] = []


class Greeting:
    """A resource: provided by type, made once per run, closed when the run ends."""

    def __init__(self) -> None:
        self.word = 'hello'
        MADE.append('make')

    def close(self) -> None:
        MADE.append('close')


@dataclass
class GreeterDeps:
    kv: AgenToolHandle[str | None]
    greeting: Greeting


class KVInput(BaseOperationInput):
    operation: Literal['get']
    key: str


class GreetInput(BaseOperationInput):
    operation: Literal['greet']
    user: str


async def kv_get(key: str) -> str | None:
    """Read a value."""
    return {'u1': 'Ada'}.get(key)


async def greet(ctx: RunContext[GreeterDeps], user: str) -> str:
    """Greet a user by their stored name."""
    name = await ctx.deps.kv({'operation': 'get', 'key': user})
    return f'{ctx.deps.greeting.word} {name or user}'


def make_greeter(*, provide: bool = True) -> None:
    MADE.clear()
    create_agentool('kv', KVInput, RoutingConfig(operation_map={'get': 'kv_get'}), [kv_get])
    create_agentool(
        'greeter',
        GreetInput,
        RoutingConfig(operation_map={'greet': 'greet'}),
        [greet],
        deps_type=GreeterDeps,
        dependencies=['kv'],
    )
    if provide:
        get_injector().provide(Greeting, Greeting)


def call_then_answer(tool: str, args: dict[str, Any]) -> FunctionModel:
    """A model calling `tool` once, then answering with what it returned."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[ToolCallPart(tool, args)])
        return ModelResponse(parts=[TextPart(str(returned[0].content))])

    return FunctionModel(model)


# --- deps on every surface: the LLM toolset too ---------------------------------------------------


async def test_the_toolset_builds_deps_for_a_run_given_none(injector: AgenToolInjector) -> None:
    # "an agentool that declares a deps_type gets the same deps on every surface that is not given
    # any"; "a tool that declared a deps type is never handed None". Before the fix, the tool got
    # the run's `None` and failed with AttributeError: 'NoneType' object has no attribute 'greeting'.
    make_greeter()
    agent = Agent(call_then_answer('greeter_greet', {'user': 'u1'}), toolsets=[AgenToolToolset()])
    assert (await agent.run('hi')).output == 'hello Ada'
    assert MADE == ['make', 'close']  # made for the call, closed when it ended
    # Given deps still win (the run's own, or the toolset's `deps=` function).
    given = GreeterDeps(kv=injector.handle('kv'), greeting=Greeting())
    model = call_then_answer('greeter_greet', {'user': 'u1'})
    agent = Agent(model, toolsets=[AgenToolToolset()], deps_type=GreeterDeps)
    assert (await agent.run('hi', deps=given)).output == 'hello Ada'


async def test_the_toolset_reports_deps_it_cannot_build_as_missing_deps(injector: AgenToolInjector) -> None:
    make_greeter(provide=False)  # nothing provides Greeting
    agent = Agent(call_then_answer('greeter_greet', {'user': 'u1'}), toolsets=[AgenToolToolset()])
    with pytest.raises(MissingDepsError) as caught:
        await agent.run('hi')
    assert caught.value.details['deps_type'] == 'GreeterDeps'
    assert 'Greeting' in caught.value.details['reason']


# --- options of the wrong type are refused where they are given ------------------------------------


def test_an_injector_refuses_a_registry_that_is_not_one() -> None:
    with pytest.raises(ConfigurationError) as caught:
        AgenToolInjector(registry=3)  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'registry'


def test_replace_must_be_a_flag(injector: AgenToolInjector) -> None:
    make_greeter()
    with pytest.raises(ConfigurationError) as caught:
        injector.provide(Greeting, Greeting, replace='no')  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'replace'
    with pytest.raises(ConfigurationError) as caught:
        injector.register('kv', injector.get('kv'), replace='no')  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'replace'


def test_a_resource_type_that_cannot_be_a_key_is_a_configuration_error(injector: AgenToolInjector) -> None:
    # Before the fix: TypeError: unhashable type: 'list'.
    with pytest.raises(ConfigurationError) as caught:
        injector.provide([Greeting], Greeting)  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'type_'
    assert [1] not in injector  # a membership test never raises


# --- MCP ---------------------------------------------------------------------------------------------


async def test_an_unknown_mcp_tool_is_a_protocol_error_with_suggestions(injector: AgenToolInjector) -> None:
    make_greeter()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        with pytest.raises(MCPError) as caught:
            await client.call_tool('greeter_gret', {'user': 'u1'})
    assert caught.value.error.code == INVALID_PARAMS
    assert "unknown tool 'greeter_gret'; did you mean 'greeter_greet'?" in caught.value.error.message
    assert caught.value.error.data == {'tool': 'greeter_gret', 'suggestions': ['greeter_greet']}


async def test_mcp_builds_deps_per_call_and_closes_them(injector: AgenToolInjector) -> None:
    make_greeter()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('greeter_greet', {'user': 'u1'})
        assert not result.is_error
        assert result.structured_content == {'result': 'hello Ada'}
        assert MADE == ['make', 'close']
        result = await client.call_tool('greeter_greet', {'user': 'u2'})
    assert result.structured_content == {'result': 'hello u2'}
    assert MADE == ['make', 'close'] * 2  # one run scope per call


# --- handles on agentools named by anything but a name ------------------------------------------------


def test_uses_refuses_a_name_that_is_not_one() -> None:
    # Before the fix, `Uses(3)` was accepted and the first run (or `validate()`) failed with
    # TypeError: 'int' object is not iterable.
    with pytest.raises(ConfigurationError) as caught:
        Uses(3)  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'name'
    with pytest.raises(ConfigurationError):
        Uses('')


@pytest.mark.parametrize('name', [3, None, [1], '', '  '])
def test_a_handle_on_a_name_that_is_not_one_is_refused(injector: AgenToolInjector, name: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        injector.handle(name)
    assert caught.value.details['option'] == 'name'
