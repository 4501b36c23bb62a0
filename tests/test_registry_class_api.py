"""The registry as the architecture guide calls it: on the class, a store that accepts any configuration."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, computed_field

from agentool import (
    AgenToolConfig,
    AgenToolNotFoundError,
    AgenToolRegistry,
    ConfigurationError,
    RoutingConfig,
    create_agentool,
    get_injector,
    get_registry,
    use_injector,
    use_registry,
)
from agentool.core.manager import AgenToolManager

_READS: dict[str, tuple[Any, ...]] = {
    'get': ('echo',),
    'require': ('echo',),
    'exists': ('echo',),
    'list_names': (),
    'list_detailed': (),
    'get_schema': ('echo',),
    'get_operations': ('echo',),
    'get_tools_info': ('echo',),
    'search': (),
    'generate_markdown_docs': (),
    'generate_dependency_graph': (),
    'generate_mermaid_graph': (),
    'generate_api_spec': (),
    'validate_config': ('echo',),
}
"""Every reading method of the guide (and its neighbours), with arguments that find the agentool 'echo'."""


class EchoInput(BaseModel):
    operation: Literal['echo']
    text: str


async def echo(text: str) -> str:
    """Say it back."""
    return text


def _echo_config() -> AgenToolConfig:
    return AgenToolConfig(
        input_schema=EchoInput, routing_config=RoutingConfig(operation_map={'echo': 'echo'}), tools=[echo]
    )


def test_class_calls_act_on_the_registry_in_effect(registry: AgenToolRegistry) -> None:
    AgenToolRegistry.register('echo', _echo_config())
    assert registry.exists('echo')
    assert AgenToolRegistry.get('echo') is registry.get('echo')
    assert AgenToolRegistry.list_names() == ['echo']
    with use_registry() as inner:
        assert AgenToolRegistry.list_names() == []
        AgenToolRegistry.register('echo', _echo_config())
        assert inner.list_names() == ['echo']
        AgenToolRegistry.clear()
        assert len(inner) == 0
    assert AgenToolRegistry.exists('echo')  # the outer registry is untouched
    assert AgenToolRegistry.get('missing') is None


def test_instance_calls_act_on_that_instance(registry: AgenToolRegistry) -> None:
    other = AgenToolRegistry()
    other.register('echo', _echo_config())
    assert other.list_names() == ['echo']
    assert registry.list_names() == []
    assert AgenToolRegistry.list_names() == []


@pytest.mark.parametrize('method', sorted(_READS))
def test_every_reading_method_on_the_class_acts_on_the_registry_in_effect(method: str) -> None:
    on_class = getattr(AgenToolRegistry, method)
    assert on_class.__doc__  # the method's own docstring, for help() and the API reference
    args = _READS[method]
    with use_registry() as first:
        first.register('echo', _echo_config())
        assert on_class(*args) == getattr(first, method)(*args)
        with use_registry() as empty:
            # The same function object, called in another scope, reads that scope's registry.
            try:
                inner = on_class(*args)
            except AgenToolNotFoundError:
                inner = 'not found'
            assert inner != getattr(first, method)(*args)
            assert not empty.exists('echo')
    assert getattr(first, method).__self__ is first


def test_export_catalog_on_the_class_reads_the_registry_in_effect() -> None:
    with use_registry() as first:
        first.register('echo', _echo_config())
        assert [e['name'] for e in AgenToolRegistry.export_catalog()['agentools']] == ['echo']
        with use_registry():
            assert AgenToolRegistry.export_catalog()['agentools'] == []


def test_every_changing_method_on_the_class_acts_on_the_registry_in_effect() -> None:
    with use_registry() as outer:
        outer.register('echo', _echo_config())
        with use_registry() as inner:
            AgenToolRegistry.register('echo', _echo_config())
            assert AgenToolRegistry.update('echo', description='Inner.') is True
            assert (inner.require('echo').description, outer.require('echo').description) == ('Inner.', None)
            assert AgenToolRegistry.unregister('echo') is True
            assert AgenToolRegistry.unregister('echo') is False
            AgenToolRegistry.register('other', _echo_config())
            AgenToolRegistry.clear()
            assert len(inner) == 0
        assert outer.list_names() == ['echo']


def test_configs_is_a_live_view_of_the_registry_in_effect() -> None:
    configs = AgenToolRegistry._configs  # pyright: ignore[reportPrivateUsage]  # the guide's name
    with use_registry() as first:
        config = _echo_config()
        configs['echo'] = config  # the guide's `cls._configs[name] = config`
        assert first.get('echo') is not None
        assert 'echo' in configs
        assert len(configs) == 1
        assert configs.get('echo') is first.get('echo')
        assert dict(configs.items()) == {'echo': first.get('echo')}
        assert configs.get('missing') is None
        with pytest.raises(KeyError):
            configs['missing']
        with use_registry():
            assert 'echo' not in configs
        own = AgenToolRegistry()
        own.register('mine', _echo_config())
        assert list(own._configs) == ['mine']  # pyright: ignore[reportPrivateUsage]
        del configs['echo']
        assert not first.exists('echo')
        configs['echo'] = config
        configs.clear()
        assert len(first) == 0


def test_the_class_form_follows_the_scope_of_each_call() -> None:
    list_names = AgenToolRegistry.list_names
    with use_registry() as first:
        first.register('echo', _echo_config())
        assert list_names() == ['echo']
        with use_registry():
            assert list_names() == []


async def test_register_stores_a_config_that_cannot_run() -> None:
    class Plain(BaseModel):
        value: str

    AgenToolRegistry.register(
        'described', AgenToolConfig(input_schema=Plain, routing_config=RoutingConfig(), tags=['x'])
    )
    assert AgenToolRegistry.list_names() == ['described']
    assert AgenToolRegistry.search(tags=['x']) == ['described']
    assert [entry['name'] for entry in AgenToolRegistry.export_catalog()['agentools']] == ['described']
    schema = AgenToolRegistry.get_schema('described')
    assert schema is not None
    assert schema['properties'].keys() == {'value'}
    kinds = [problem.kind for problem in AgenToolRegistry.validate_config('described')]
    assert kinds == ['no_operation_field', 'empty_operation_map']
    with pytest.raises(ConfigurationError, match="agentool 'described' has 2 configuration problems") as caught:
        get_registry().get_manager('described')
    assert [p['kind'] for p in caught.value.details['problems']] == kinds


async def test_running_a_stored_config_that_cannot_run_raises_the_problems() -> None:
    from pydantic_ai import Agent

    config = AgenToolConfig(input_schema=EchoInput, routing_config=RoutingConfig(operation_map={'echo': 'echo'}))
    AgenToolRegistry.register('toolless', config)
    with pytest.raises(ConfigurationError, match="routes to tool 'echo', which is not among the tools given"):
        await Agent('agentool:toolless').run('{"operation": "echo", "text": "hi"}')


def test_validate_config_reports_every_problem_at_once() -> None:
    class Ops(BaseModel):
        operation: Literal['a', 'b', 'c']
        x: int = 0

    async def needs_y(y: int) -> int:
        return y

    async def needs_yz(y: int, z: int) -> int:
        return y + z

    config = AgenToolConfig(
        input_schema=Ops,
        routing_config=RoutingConfig(operation_map={'a': 'needs_y', 'b': 'gone', 'd': 'needs_yz'}),
        tools=[needs_y, needs_yz],
    )
    problems = AgenToolRegistry.validate_config(config)
    assert [(p.kind, p.operation, p.tool, p.parameter) for p in problems] == [
        ('unrouted_operation', 'c', None, None),
        ('unproducible_operation', 'd', None, None),
        ('unfillable_parameter', 'a', 'needs_y', 'y'),
        ('missing_tool', 'b', 'gone', None),
        ('unfillable_parameter', 'd', 'needs_yz', 'y'),
        ('unfillable_parameter', 'd', 'needs_yz', 'z'),
    ]
    with pytest.raises(ConfigurationError, match='has 6 configuration problems') as caught:
        create_agentool('ops', Ops, config.routing_config, [needs_y, needs_yz])
    assert len(caught.value.details['problems']) == 6
    assert not AgenToolRegistry.exists('ops')  # create_agentool is the gate


def test_a_valid_config_has_no_problems() -> None:
    assert AgenToolRegistry.validate_config(_echo_config()) == []


def test_operation_map_is_read_only() -> None:
    routing = RoutingConfig(operation_map={'echo': ('echo', lambda x: {'text': x.text})})
    with pytest.raises(ConfigurationError, match=r"operation_map is read-only \(tried to change 'div'\)"):
        routing.operation_map['div'] = ('no_such_tool', echo)  # type: ignore[index]
    with pytest.raises(ConfigurationError, match='read-only'):
        del routing.operation_map['echo']  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match=r"RoutingConfig is read-only \(tried to change 'operation_map'\)"):
        routing.operation_map = {}  # type: ignore[assignment]
    with pytest.raises(ConfigurationError, match='read-only') as caught:
        routing.operation_field = 'kind'
    assert caught.value.details == {'option': 'operation_field'}
    with pytest.raises(ConfigurationError, match='read-only'):
        del routing.operation_map
    assert routing.operation_field == 'operation'
    tool_name, transform = routing.operation_map['echo']  # the guide's unpacking
    assert tool_name == 'echo'
    assert transform is not None
    assert routing.operation_map['echo'][0] == 'echo'


def test_manager_as_the_guide_constructs_it() -> None:
    config = AgenToolConfig(input_schema=EchoInput, routing_config=RoutingConfig(operation_map={'echo': 'echo'}))
    manager = AgenToolManager('echo', config, [echo])
    assert manager.operations == ['echo']
    assert manager.config.tools == (echo,)


async def test_manager_call_validates_keyword_arguments() -> None:
    from agentool import InputValidationError

    manager = AgenToolManager('echo', _echo_config())
    ctx: Any = None
    assert await manager(ctx, operation='echo', text='hi') == 'hi'
    with pytest.raises(InputValidationError, match="field 'text'"):
        await manager(ctx, operation='echo')


class _Fetch(BaseModel):
    source: Literal['weather', 'news']
    action: Literal['fetch']
    city: str = 'here'

    @computed_field
    @property
    def route(self) -> Literal['fetch:weather', 'fetch:news']:
        return f'{self.action}:{self.source}'  # type: ignore[return-value]


class _Prop(BaseModel):
    verb: str
    target: str

    @property
    def op(self) -> str:
        return f'{self.verb}_{self.target}'


async def weather(city: str) -> str:
    return f'sunny in {city}'


async def news(city: str) -> str:
    return f'quiet in {city}'


async def test_operation_from_a_computed_field() -> None:
    routing = RoutingConfig(operation_field='route', operation_map={'fetch:weather': 'weather', 'fetch:news': 'news'})
    agent = create_agentool('fetch', _Fetch, routing, [weather, news])
    result = await agent.run('{"source": "news", "action": "fetch", "city": "Oslo"}')
    assert result.output == 'quiet in Oslo'
    with pytest.raises(ConfigurationError, match=r"operation 'fetch:news' of _Fetch\.route has no route"):
        create_agentool(
            'fetch2',
            _Fetch,
            RoutingConfig(operation_field='route', operation_map={'fetch:weather': 'weather'}),
            [weather],
        )


async def test_operation_from_a_property() -> None:
    routing = RoutingConfig(
        operation_field='op', operation_map={'get_weather': ('weather', lambda x: {'city': 'Rome'})}
    )
    agent = create_agentool('prop', _Prop, routing, [weather])
    assert (await agent.run('{"verb": "get", "target": "weather"}')).output == 'sunny in Rome'
    from agentool import UnknownOperationError

    with pytest.raises(UnknownOperationError, match="no operation 'get_news'"):
        await agent.run('{"verb": "get", "target": "news"}')


async def test_a_manager_built_from_a_config_that_cannot_run_can_be_inspected_but_not_run() -> None:
    class Bare(BaseModel):
        value: str = 'x'

    config = AgenToolConfig(input_schema=Bare, routing_config=RoutingConfig())
    manager = AgenToolManager('bare', config, {})
    assert [problem.kind for problem in manager.problems] == ['no_operation_field', 'empty_operation_map']
    assert manager.get_tool_schema()['properties'].keys() == {'value'}
    assert manager.get_tool_schema()['required'] == []
    ctx: Any = None
    with pytest.raises(ConfigurationError, match="agentool 'bare' has 2 configuration problems") as caught:
        await manager(ctx, value='y')
    assert len(caught.value.details['problems']) == 2
    with pytest.raises(ConfigurationError):
        manager.validate_json('{"value": "y"}')


def test_a_schema_that_is_not_a_model_is_refused_with_a_typed_error() -> None:
    class NotAModel:
        @classmethod
        def model_json_schema(cls) -> dict[str, Any]:
            return {'type': 'object', 'properties': {'value': {'type': 'string'}}}

    class Nothing:
        pass

    describable = AgenToolConfig(input_schema=NotAModel, routing_config=RoutingConfig())  # pyright: ignore[reportArgumentType]
    manager = AgenToolManager('odd', describable, {})
    assert manager.get_tool_schema() == {'type': 'object', 'properties': {'value': {'type': 'string'}}, 'required': []}
    with pytest.raises(ConfigurationError, match='is not a pydantic model'):
        manager.validate_json('{}')
    bare = AgenToolConfig(input_schema=Nothing, routing_config=RoutingConfig())  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match='is not a pydantic model'):
        AgenToolManager('nothing', bare, {}).get_tool_schema()
    with pytest.raises(ConfigurationError, match='is not a pydantic model'):
        AgenToolRegistry.register('odd', describable)
    assert not AgenToolRegistry.exists('odd')


def test_tool_functions_as_a_dict_must_be_keyed_by_name() -> None:
    config = AgenToolConfig(input_schema=EchoInput, routing_config=RoutingConfig(operation_map={'echo': 'echo'}))
    assert AgenToolManager('echo', config, {'echo': echo}).operations == ['echo']
    with pytest.raises(ConfigurationError, match="tool_functions key 'say' is not the name of its function 'echo'"):
        AgenToolManager('echo', config, {'say': echo})


def test_naive_timestamps_are_read_as_local_time() -> None:
    naive = datetime(2024, 5, 6, 7, 8, 9)
    config = AgenToolConfig(
        input_schema=EchoInput,
        routing_config=RoutingConfig(operation_map={'echo': 'echo'}),
        tools=[echo],
        created_at=naive,
        updated_at=datetime.now(),
    )
    assert config.created_at == naive.astimezone()
    assert config.created_at.utcoffset() is not None
    assert config.updated_at.utcoffset() is not None
    AgenToolRegistry.register('echo', config)
    assert AgenToolRegistry.require('echo').created_at == naive.astimezone()
    with pytest.raises(ConfigurationError, match='created_at must be a datetime') as caught:
        AgenToolConfig(EchoInput, RoutingConfig(operation_map={'echo': 'echo'}), created_at='2024-05-06')  # type: ignore[arg-type]
    assert caught.value.details['option'] == 'created_at'


def test_register_refuses_what_is_not_a_configuration(registry: AgenToolRegistry) -> None:
    with pytest.raises(ConfigurationError, match='config must be an AgenToolConfig') as caught:
        AgenToolRegistry.register('echo', {'input_schema': EchoInput})  # type: ignore[arg-type]
    assert caught.value.details['option'] == 'config'
    assert registry.list_names() == []


@pytest.mark.parametrize('name', [None, ['echo'], 5, {'echo': 1}])
@pytest.mark.parametrize('on_class', [True, False])
def test_a_name_that_is_not_a_string_is_looked_up_like_an_unknown_one(
    registry: AgenToolRegistry, name: Any, on_class: bool
) -> None:
    registry.register('echo', _echo_config())
    target: Any = AgenToolRegistry if on_class else registry
    for method in ('get', 'get_schema', 'get_operations', 'get_tools_info'):
        assert getattr(target, method)(name) is None, method
    assert target.exists(name) is False
    assert name not in registry
    assert target.update(name, version='1') is False
    assert target.unregister(name) is False
    for method in ('require', 'get_manager', 'validate_config'):
        with pytest.raises(AgenToolNotFoundError, match='agentool names are strings') as caught:
            getattr(target, method)(name)
        assert caught.value.details['suggestions'] == []
    assert registry.list_names() == ['echo']  # nothing was changed or removed


@pytest.mark.parametrize(
    ('options', 'option'),
    [({'tags': 5}, 'tags'), ({'tags': [1]}, 'tags'), ({'name_pattern': 5}, 'name_pattern')],
)
def test_search_refuses_options_of_the_wrong_type(
    registry: AgenToolRegistry, options: dict[str, Any], option: str
) -> None:
    registry.register('echo', _echo_config())
    for search in (registry.search, AgenToolRegistry.search):
        with pytest.raises(ConfigurationError, match=option) as caught:
            search(**options)
        assert caught.value.details == {'option': option, 'value': repr(options[option])}
    assert registry.search(tags=('nope', 'other')) == []
    assert registry.search(name_pattern='ech') == ['echo']


def test_use_registry_refuses_what_is_not_a_registry() -> None:
    scope = use_registry('not a registry')  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match='registry must be an AgenToolRegistry or None') as caught:
        scope.__enter__()
    assert caught.value.details['option'] == 'registry'


def test_use_injector_refuses_what_is_not_an_injector() -> None:
    before = get_injector()
    scope = use_injector('not an injector')  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match='injector must be an AgenToolInjector or None') as caught:
        scope.__enter__()
    assert caught.value.details == {'option': 'injector', 'value': "'not an injector'"}
    assert get_injector() is before  # nothing was put in effect


ROOT = Path(__file__).resolve().parent.parent


def test_tool_metadata_is_built_by_keyword_as_the_coming_from_the_guide_page_says() -> None:
    from agentool.core.registry import ToolMetadata

    meta = ToolMetadata(name='read', description='Read.', is_async=True, parameters=['key'])
    assert (meta.parameter_types, meta.return_type) == ({}, None)
    with pytest.raises(TypeError):
        ToolMetadata('read')  # pyright: ignore[reportCallIssue]
    page = (ROOT / 'docs/guides/coming-from-the-guide.md').read_text()
    assert 'Works by keyword' in page
