"""Values agentool cannot use are refused where they are given, with a `ConfigurationError` naming them.

Each was once accepted (or failed with a foreign exception) and broke something unrelated later:
every catalog listing, every injector lookup, or routing with a misleading message.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

import pytest
from pydantic import BaseModel, Field
from pydantic_ai import Agent, NativeOutput, RunContext, TextOutput, ToolOutput
from pydantic_ai.models.test import TestModel

from agentool import (
    AgenToolCapability,
    AgenToolConfig,
    AgenToolInjector,
    AgenToolManager,
    AgenToolModel,
    AgenToolNotFoundError,
    AgenToolRegistry,
    BaseOperationInput,
    ConfigurationError,
    RoutingConfig,
    ToolMetadata,
    Uses,
    create_agentool,
    extract_tool_metadata,
    get_registry,
    infer_output_type,
    use_injector,
)
from tests.agentools import EchoInput, Greeting, echo, echo_routing, make_greeter


class GoInput(BaseOperationInput):
    operation: Literal['go']
    x: int = 0


class Result(BaseModel):
    value: int


def go(x: int) -> int:
    """Return x."""
    return x


def _routing() -> RoutingConfig:
    return RoutingConfig(operation_map={'go': 'go'})


# --- AgenToolConfig and ToolMetadata: every listing reads them -----------------------------------


@pytest.mark.parametrize(
    ('kwargs', 'option'),
    [
        ({'tools_metadata': ['x']}, 'tools_metadata'),
        ({'tools_metadata': [go]}, 'tools_metadata'),
        ({'tools_metadata': extract_tool_metadata(go)}, 'tools_metadata'),  # one, not a list of them
        ({'output_type': 5}, 'output_type'),
        ({'output_type': 'int'}, 'output_type'),  # a forward reference pydantic-ai cannot use
        ({'output_type': []}, 'output_type'),
        ({'output_type': [int, 5]}, 'output_type'),
    ],
)
def test_a_config_refuses_values_no_listing_could_read(kwargs: dict[str, Any], option: str) -> None:
    with pytest.raises(ConfigurationError, match=f'^{option} must be') as caught:
        AgenToolConfig(GoInput, _routing(), **kwargs)
    assert caught.value.details == {'option': option, 'value': repr(kwargs[option])}


def _upper(text: str) -> str:
    return text.upper()


@pytest.mark.parametrize(
    'output_type',
    [
        None,
        int,
        Result,
        list[int],
        int | None,
        Union[Result, int],  # noqa: UP007
        Literal['a', 'b'],
        Annotated[int, Field(gt=0)],
        Any,
        ToolOutput(Result),
        NativeOutput([Result]),
        TextOutput(_upper),
        [str, Result],
        _upper,
    ],
)
def test_a_config_accepts_every_output_type_and_spec(registry: AgenToolRegistry, output_type: Any) -> None:
    config = AgenToolConfig(GoInput, _routing(), output_type=output_type, tools=[go])
    registry.register('go', config)
    assert registry.export_catalog()['agentools'][0]['name'] == 'go'


@pytest.mark.parametrize(
    ('kwargs', 'option'),
    [
        ({'name': 5}, 'name'),
        ({'name': 'go', 'description': 5}, 'description'),
        ({'name': 'go', 'is_async': 'yes'}, 'is_async'),
        ({'name': 'go', 'parameters': 'xy'}, 'parameters'),
        ({'name': 'go', 'parameters': [1]}, 'parameters'),
        ({'name': 'go', 'parameter_types': {'x': int}}, 'parameter_types'),
        ({'name': 'go', 'parameter_types': ['x']}, 'parameter_types'),
        ({'name': 'go', 'return_type': int}, 'return_type'),
        ({'name': 'go', 'docstring': ['a']}, 'docstring'),
    ],
)
def test_tool_metadata_fields_are_type_checked(kwargs: dict[str, Any], option: str) -> None:
    with pytest.raises(ConfigurationError, match=f'^{option} must be') as caught:
        ToolMetadata(**kwargs)
    assert caught.value.details == {'option': option, 'value': repr(kwargs[option])}


def test_tool_metadata_built_by_hand_is_listed(registry: AgenToolRegistry) -> None:
    meta = ToolMetadata(name='go', parameters=('x',), parameter_types={'x': 'int'}, return_type='int')  # pyright: ignore[reportArgumentType]
    assert meta.parameters == ['x']
    registry.register('go', AgenToolConfig(GoInput, _routing(), tools=[go], tools_metadata=[meta]))
    assert '`go`' in registry.generate_markdown_docs()


def test_infer_output_type_takes_tool_metadata_not_functions() -> None:
    with pytest.raises(ConfigurationError, match=r'^tools_metadata must be a list of ToolMetadata') as caught:
        infer_output_type([go])  # type: ignore[list-item]
    assert caught.value.details['option'] == 'tools_metadata'


# --- the injector: a name every lookup can compare, an agent it can run ----------------------------


@pytest.mark.parametrize('name', [5, '', None])
def test_the_injector_refuses_a_name_that_is_not_a_non_empty_string(name: Any) -> None:
    with use_injector() as injector:
        with pytest.raises(ConfigurationError, match='an agentool name must be a non-empty string') as caught:
            injector.register(name, Agent(TestModel()))
        assert caught.value.details == {'option': 'name', 'value': repr(name)}
        assert injector.list_names() == []  # nothing stored, so every lookup still works
        with pytest.raises(AgenToolNotFoundError):
            injector.get('nope')


@pytest.mark.parametrize('name', ['   ', '\t', '\n '])
def test_a_blank_name_is_refused_wherever_a_name_is_given(name: str, registry: AgenToolRegistry) -> None:
    # A blank name renders as nothing (an empty Markdown heading, an invisible CLI row).
    config = AgenToolConfig(GoInput, _routing(), tools=[go])
    refusals = [
        lambda: create_agentool(name, GoInput, _routing(), [go]),
        lambda: registry.register(name, config),
        lambda: AgenToolManager(name, config, [go]),
        lambda: AgenToolInjector().register(name, Agent(TestModel())),
        lambda: AgenToolModel(name),
    ]
    for refuse in refusals:
        with pytest.raises(ConfigurationError, match='not only whitespace') as caught:
            refuse()
        assert caught.value.details == {'option': 'name', 'value': repr(name)}
    assert registry.list_names() == []
    create_agentool(' padded ', GoInput, _routing(), [go])  # only a name with nothing but whitespace is blank
    assert registry.list_names() == [' padded ']


def test_the_injector_refuses_what_is_not_an_agent() -> None:
    with pytest.raises(
        ConfigurationError, match=r"^agentool 'x': agent must be an AbstractAgent; got 'not an agent'"
    ) as caught:
        AgenToolInjector().register('x', 'not an agent')  # type: ignore[arg-type]
    assert caught.value.details == {'agentool': 'x', 'option': 'agent', 'value': "'not an agent'"}


# --- the manager, built by hand as the guide does -------------------------------------------------


def test_the_manager_refuses_a_config_that_is_not_an_agentool_config() -> None:
    with pytest.raises(ConfigurationError, match='config must be an AgenToolConfig') as caught:
        AgenToolManager('go', {'input_schema': GoInput}, [go])  # type: ignore[arg-type]
    assert caught.value.details['option'] == 'config'
    config = AgenToolConfig(GoInput, _routing())
    with pytest.raises(ConfigurationError, match='an agentool name must be a non-empty string'):
        AgenToolManager(5, config, [go])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match='tools must be a list of tool functions') as caught:
        AgenToolManager('go', config, 5)  # type: ignore[arg-type]
    assert caught.value.details['option'] == 'tools'


# --- tools: partials are tools, anything without a name is not ------------------------------------


class ScaleInput(BaseOperationInput):
    operation: Literal['scale']
    x: int


async def scaled(x: int, factor: int) -> int:
    """Multiply x by a factor."""
    return x * factor


def test_a_partial_is_described_as_its_function() -> None:
    meta = extract_tool_metadata(functools.partial(scaled, factor=3))
    assert (meta.name, meta.description, meta.is_async) == ('scaled', 'Multiply x by a factor.', True)
    assert (meta.parameters, meta.return_type) == (['x', 'factor'], 'int')
    assert meta.parameter_types == {'x': 'int', 'factor': 'int'}


async def test_a_partial_is_routed_by_its_functions_name(registry: AgenToolRegistry) -> None:
    routing = RoutingConfig(operation_map={'scale': 'scaled'})
    agent = create_agentool('scale', ScaleInput, routing, [functools.partial(scaled, factor=3)])
    assert (await agent.run('{"operation": "scale", "x": 2}')).output == 6
    tools = registry.get_tools_info('scale')
    assert tools is not None
    assert [(tool['name'], tool['description']) for tool in tools] == [('scaled', 'Multiply x by a factor.')]


class Doubler:
    def __call__(self, x: int) -> int:
        return 2 * x


@pytest.mark.parametrize('tool', [42, Doubler()])
def test_a_tool_without_a_name_is_refused(tool: Any) -> None:
    with pytest.raises(ConfigurationError, match=r'^a tool must be a function') as caught:
        extract_tool_metadata(tool)
    assert caught.value.details == {'option': 'tools', 'value': repr(tool)}


def test_create_agentool_refuses_a_callable_without_a_name(registry: AgenToolRegistry) -> None:
    with pytest.raises(ConfigurationError, match=r'^a tool must be a function'):
        create_agentool('double', GoInput, _routing(), [Doubler()])
    assert 'double' not in registry


# --- annotations that cannot be resolved are named -------------------------------------------------


def _tool_with_local_deps() -> Any:
    @dataclass
    class Deps:  # local: `RunContext[Deps]`, a string under `from __future__ import annotations`, names nothing
        offset: int

    def go(ctx: RunContext[Deps], x: int) -> int:
        return x + ctx.deps.offset

    return go


def test_an_unresolvable_context_annotation_is_named(registry: AgenToolRegistry) -> None:
    with pytest.raises(
        ConfigurationError, match=r"annotation 'RunContext\[Deps\]' of its first parameter 'ctx'"
    ) as caught:
        create_agentool('local', GoInput, _routing(), [_tool_with_local_deps()])
    assert caught.value.details == {
        'tool': 'go',
        'parameter': 'ctx',
        'annotation': 'RunContext[Deps]',
        'reason': "NameError: name 'Deps' is not defined",
    }
    assert 'not a field' not in caught.value.message  # the old, misleading reading of it
    assert 'local' not in registry


def _tool_with_local_result() -> tuple[Any, type[BaseModel]]:
    class Later(BaseModel):
        value: int

    def go(ctx: RunContext[Any], x: int) -> Later:
        return Later(value=x)

    return go, Later


async def test_an_unresolvable_return_annotation_leaves_the_context_recognised(registry: AgenToolRegistry) -> None:
    tool, later = _tool_with_local_result()
    meta = extract_tool_metadata(tool)
    assert (meta.parameters, meta.parameter_types, meta.return_type) == (['x'], {'x': 'int'}, 'Later')
    with pytest.raises(ConfigurationError, match=r"tool 'go' returns 'Later', an annotation that cannot be resolved"):
        create_agentool('later', GoInput, _routing(), [tool])
    agent = create_agentool('later', GoInput, _routing(), [tool], output_type=later)
    assert (await agent.run('{"operation": "go", "x": 4}')).output == later(value=4)


def test_capability_refuses_a_bad_name_or_registry() -> None:
    with pytest.raises(ConfigurationError, match='registry'):
        AgenToolCapability('echo', registry=5)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match='name'):
        AgenToolCapability(5)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match='name'):
        AgenToolCapability('   ')
    registry = AgenToolRegistry()
    assert AgenToolCapability('echo', registry=registry).registry is registry


def test_create_agentool_names_a_bad_system_prompt() -> None:
    with pytest.raises(ConfigurationError, match='system_prompt') as raised:
        create_agentool('prompted', EchoInput, echo_routing(), [echo], system_prompt=1)  # type: ignore[arg-type]
    assert 'output type' not in str(raised.value)
    assert get_registry().get('prompted') is None
    agent = create_agentool('prompted', EchoInput, echo_routing(), [echo], system_prompt=['a', 'b'])
    assert agent.run_sync('{"operation": "echo", "text": "t"}').output == 't'


@pytest.mark.parametrize('option', ['replace', 'lean'])
def test_create_agentool_refuses_flags_that_are_not_bool(option: str) -> None:
    options: dict[str, Any] = {option: 'no'}
    with pytest.raises(ConfigurationError, match=option):
        create_agentool('flagged', EchoInput, echo_routing(), [echo], **options)
    assert get_registry().get('flagged') is None


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
