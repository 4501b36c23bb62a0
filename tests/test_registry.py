"""The registry (`agentool/core/registry.py`): the guide's class API, introspection, `use_registry()` scopes
(fresh, task-local, restored on exit) and changes (atomic update, unregister, clear).
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from typing import Any, Literal, TypeVar

import jsonschema
import pytest
from pydantic import BaseModel, Field, computed_field
from pydantic_ai import Agent

from agentool import (
    AgenToolConfig,
    AgenToolNotFoundError,
    AgenToolRegistry,
    BaseOperationInput,
    ConfigurationError,
    InputValidationError,
    InvalidUpdateError,
    Route,
    RoutingConfig,
    UnknownOperationError,
    create_agentool,
    get_injector,
    get_registry,
    use_injector,
    use_registry,
)
from agentool.core.manager import AgenToolManager
from agentool.core.registry import ToolMetadata
from examples.calculator import CalculatorInput, create_calculator
from tests import agentools as shared
from tests.agentools import ROOT, create_storage, echo_routing, run_python

T = TypeVar('T')

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


ECHO = RoutingConfig(operation_map={'echo': 'echo'})


def _echo_config(**options: Any) -> AgenToolConfig:
    return AgenToolConfig(input_schema=EchoInput, routing_config=ECHO, tools=[echo], **options)


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

    config = AgenToolConfig(input_schema=Plain, routing_config=RoutingConfig(), tags=['x'])
    AgenToolRegistry.register('described', config)
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
    config = AgenToolConfig(input_schema=EchoInput, routing_config=ECHO)
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
    config = AgenToolConfig(input_schema=EchoInput, routing_config=ECHO)
    manager = AgenToolManager('echo', config, [echo])
    assert manager.operations == ['echo']
    assert manager.config.tools == (echo,)


async def test_manager_call_validates_keyword_arguments() -> None:
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
    routing = RoutingConfig(operation_field='route', operation_map={'fetch:weather': 'weather'})
    with pytest.raises(ConfigurationError, match=r"operation 'fetch:news' of _Fetch\.route has no route"):
        create_agentool('fetch2', _Fetch, routing, [weather])


async def test_operation_from_a_property() -> None:
    operation_map = {'get_weather': ('weather', lambda x: {'city': 'Rome'})}
    routing = RoutingConfig(operation_field='op', operation_map=operation_map)
    agent = create_agentool('prop', _Prop, routing, [weather])
    assert (await agent.run('{"verb": "get", "target": "weather"}')).output == 'sunny in Rome'
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
    config = AgenToolConfig(input_schema=EchoInput, routing_config=ECHO)
    assert AgenToolManager('echo', config, {'echo': echo}).operations == ['echo']
    with pytest.raises(ConfigurationError, match="tool_functions key 'say' is not the name of its function 'echo'"):
        AgenToolManager('echo', config, {'say': echo})


def test_naive_timestamps_are_read_as_local_time() -> None:
    naive = datetime(2024, 5, 6, 7, 8, 9)
    config = _echo_config(created_at=naive, updated_at=datetime.now())
    assert config.created_at == naive.astimezone()
    assert config.created_at.utcoffset() is not None
    assert config.updated_at.utcoffset() is not None
    AgenToolRegistry.register('echo', config)
    assert AgenToolRegistry.require('echo').created_at == naive.astimezone()
    with pytest.raises(ConfigurationError, match='created_at must be a datetime') as caught:
        AgenToolConfig(EchoInput, ECHO, created_at='2024-05-06')  # type: ignore[arg-type]
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


@pytest.mark.parametrize(('use', 'option'), [(use_registry, 'registry'), (use_injector, 'injector')])
def test_a_scope_refuses_what_it_cannot_put_in_effect(use: Any, option: str) -> None:
    before = (get_registry(), get_injector())
    scope = use(f'not a {option}')
    with pytest.raises(ConfigurationError, match=f'{option} must be an AgenTool{option.title()} or None') as caught:
        scope.__enter__()
    assert caught.value.details == {'option': option, 'value': f"'not a {option}'"}
    assert get_registry() is before[0]  # nothing was put in effect
    assert get_injector() is before[1]


def test_tool_metadata_is_built_by_keyword_as_the_coming_from_the_guide_page_says() -> None:
    meta = ToolMetadata(name='read', description='Read.', is_async=True, parameters=['key'])
    assert (meta.parameter_types, meta.return_type) == ({}, None)
    with pytest.raises(TypeError):
        ToolMetadata('read')  # pyright: ignore[reportCallIssue]
    page = (ROOT / 'docs/guides/coming-from-the-guide.md').read_text()
    assert 'Works by keyword' in page


class ShopInput(BaseOperationInput):
    """Input of the shop agentool."""

    operation: Literal['price', 'buy', 'audit', 'dump']
    item: str = Field(description='The item.')
    qty: int = Field(default=1, description='How many.')
    coupon: str | None = Field(default=None, description='A coupon code.')
    note: str | None = Field(default=None, alias='shopNote', description='A note.')


class Receipt(BaseModel):
    total: float


async def price(item: str, qty: int = 1) -> float:
    """Price of some items."""
    return 2.0 * qty


async def buy(item: str, count: int, code: str | None) -> Receipt:
    """Buy some items."""
    return Receipt(total=2.0 * count)


async def audit(item: str) -> float:
    """Audit an item."""
    return 0.0


async def dump(**everything: Any) -> float:
    """Dump everything."""
    return 0.0


def _found(value: T | None) -> T:
    assert value is not None
    return value


def create_shop() -> None:
    def raising(x: Any) -> dict[str, Any]:
        raise RuntimeError('cannot be probed')

    create_agentool(
        'shop',
        ShopInput,
        RoutingConfig(
            operation_map={
                'price': Route(tool='price', read_only=True, idempotent=True, tags=('pricing',)),
                'buy': Route(
                    tool='buy',
                    transform=lambda x: {'item': x.item, 'count': x.qty, 'code': x.coupon},
                    destructive=True,
                    concurrent_safe=False,
                    max_output_chars=100,
                    description='Buy, for real.',
                ),
                'audit': ('audit', raising),
                'dump': ('dump', lambda x: x.model_dump()),
            }
        ),
        [price, buy, audit, dump],
        output_type=float | Receipt,
        tags=['retail'],
        dependencies=['calculator', 'ledger'],
        examples=[{'input': {'operation': 'price', 'item': 'tea'}, 'at': datetime(2024, 1, 2, 3, 4, 5)}],
        version='0.3.0',
    )


def test_get_list_names_and_membership(registry: AgenToolRegistry) -> None:
    create_storage()
    create_calculator()
    assert registry.list_names() == ['calculator', 'storage']
    config = registry.get('calculator')
    assert config is not None
    assert config.description == 'Basic arithmetic on two numbers.'
    assert registry.get('nope') is None
    assert 'storage' in registry
    assert len(registry) == 2


def test_list_detailed_adds_timestamps_to_catalog_entries(registry: AgenToolRegistry) -> None:
    create_storage()
    create_calculator()
    detailed = registry.list_detailed()
    assert [d['name'] for d in detailed] == ['calculator', 'storage']
    calculator = detailed[0]
    assert datetime.fromisoformat(calculator['created_at']) == registry.require('calculator').created_at
    assert datetime.fromisoformat(calculator['updated_at']).tzinfo is not None
    entry = registry.export_catalog()['agentools'][0]
    assert calculator['operations'] == [operation['name'] for operation in entry['operations']]
    assert calculator['tools'][0] == {
        'name': 'add',
        'async': True,
        'params': ['a', 'b'],
        'description': entry['tools'][0]['description'],
    }
    for key in ('description', 'version', 'tags', 'input_schema', 'output_type'):
        assert calculator[key] == entry[key], key
    assert calculator.get('examples') == entry['examples']
    assert 'examples' not in detailed[1]  # storage has none: the key is left out, as in the guide
    json.dumps(detailed)


def test_search_by_tags_name_pattern_and_both(registry: AgenToolRegistry) -> None:
    create_calculator()
    create_storage()
    create_shop()
    assert registry.search() == ['calculator', 'shop', 'storage']
    assert registry.search(tags=['math']) == ['calculator']
    assert registry.search(tags=['retail', 'math']) == ['calculator', 'shop']
    assert registry.search(tags=['pricing']) == ['shop']  # a route's tag
    assert registry.search(tags='math') == ['calculator']  # a lone string is one tag, not letters
    assert registry.search(name_pattern='TOR') == ['calculator', 'storage']
    assert registry.search(name_pattern='Stor') == ['storage']
    assert registry.search(name_pattern='s*') == ['shop', 'storage']
    assert registry.search(name_pattern='?ho?') == ['shop']
    assert registry.search(tags=['retail'], name_pattern='calc') == []
    assert registry.search(tags=['unknown']) == []


def test_get_schema_is_the_input_json_schema(registry: AgenToolRegistry) -> None:
    create_calculator()
    assert _found(registry.get_schema('calculator')) == CalculatorInput.model_json_schema()


@pytest.mark.parametrize('method', ['require', 'get_manager', 'validate_config'])
def test_unknown_names_raise_not_found_with_suggestions(registry: AgenToolRegistry, method: str) -> None:
    create_calculator()
    with pytest.raises(AgenToolNotFoundError, match="did you mean 'calculator'") as caught:
        getattr(registry, method)('calculater')
    assert caught.value.details['suggestions'] == ['calculator']


@pytest.mark.parametrize(
    ('method', 'absent'),
    [('get', None), ('get_schema', None), ('get_operations', None), ('get_tools_info', None), ('unregister', False)],
)
def test_lookups_of_unknown_names_answer_none_as_the_guide_does(
    registry: AgenToolRegistry, method: str, absent: object
) -> None:
    create_calculator()
    assert getattr(registry, method)('calculater') is absent
    assert registry.update('calculater', description='x') is False
    assert registry.list_names() == ['calculator']


def test_operations_without_transform_list_the_matched_fields(registry: AgenToolRegistry) -> None:
    create_shop()
    price_op = _found(registry.get_operations('shop'))['price']
    assert price_op['tool'] == 'price'
    assert price_op['fields_source'] == 'matched'
    assert price_op['description'] == price_op['tool_description'] == 'Price of some items.'
    assert price_op['returns'] == 'float'
    assert [(f['name'], f['type'], f['required'], f['default']) for f in price_op['fields']] == [
        ('item', 'str', True, None),
        ('qty', 'int', False, 1),
    ]
    assert price_op['fields'][1]['description'] == 'How many.'
    assert (price_op['read_only'], price_op['idempotent'], price_op['destructive']) == (True, True, False)
    assert (price_op['concurrent_safe'], price_op['tags'], price_op['deprecated']) == (True, ['pricing'], False)


class ReadInput(BaseOperationInput):
    operation: Literal['read']
    key: str | None = None


async def read(key: str) -> str:
    """Read."""
    return key


def test_matched_field_required_by_the_tool(registry: AgenToolRegistry) -> None:
    create_agentool('reader', ReadInput, RoutingConfig(operation_map={'read': 'read'}), [read])
    (field,) = _found(registry.get_operations('reader'))['read']['fields']
    # Typed as the operation takes it: `read(key: str)` refuses null, as the request schema says.
    assert (field['name'], field['required'], field['type']) == ('key', True, 'str')
    key_schema = _found(registry.get_operations('reader'))['read']['request_schema']['properties']['key']
    assert key_schema == {'type': 'string', 'title': 'Key'}


def test_transform_fields_are_found_by_probing(registry: AgenToolRegistry) -> None:
    create_shop()
    operations = _found(registry.get_operations('shop'))
    buy_op = operations['buy']
    assert buy_op['fields_source'] == 'transform'
    assert [f['name'] for f in buy_op['fields']] == ['item', 'qty', 'coupon']
    assert buy_op['description'] == 'Buy, for real.'
    assert buy_op['tool_description'] == 'Buy some items.'
    assert buy_op['returns'] == 'Receipt'
    assert (buy_op['destructive'], buy_op['concurrent_safe'], buy_op['max_output_chars']) == (True, False, 100)


def test_transforms_that_cannot_be_probed_list_every_field(registry: AgenToolRegistry) -> None:
    create_shop()
    operations = _found(registry.get_operations('shop'))
    for name in ('audit', 'dump'):  # one raises, one reads model_dump (not a field)
        assert operations[name]['fields_source'] == 'schema'
        assert [f['name'] for f in operations[name]['fields']] == ['item', 'qty', 'coupon', 'shopNote']


def test_transform_probe_sees_the_operation_and_survives_computation(registry: AgenToolRegistry) -> None:
    class CalcInput(BaseOperationInput):
        operation: Literal['mix', 'other']
        a: float = 0
        b: float = 0
        c: float = 0
        label: str = ''

    async def mix(total: float, text: str) -> float:
        """Mix."""
        return total

    def transform(x: Any) -> dict[str, Any]:
        total = (x.a + x.b * 2) / 3 if x.operation == 'mix' else x.c
        return {'total': float(total), 'text': f'{x.label.upper():>5}' + str(len(x.label))}

    routes = RoutingConfig(operation_map={'mix': ('mix', transform), 'other': ('mix', transform)})
    create_agentool('mixer', CalcInput, routes, [mix])
    mix_op = _found(registry.get_operations('mixer'))['mix']
    assert mix_op['fields_source'] == 'transform'
    assert [f['name'] for f in mix_op['fields']] == ['a', 'b', 'label']  # `c` is only read for 'other'
    other_op = _found(registry.get_operations('mixer'))['other']
    assert [f['name'] for f in other_op['fields']] == ['c', 'label']


def test_aliased_fields_use_their_json_key(registry: AgenToolRegistry) -> None:
    create_shop()
    dump_fields = _found(registry.get_operations('shop'))['dump']['fields']
    assert dump_fields[-1]['name'] == 'shopNote'
    assert 'shopNote' in _found(registry.get_schema('shop'))['properties']


def test_request_schema_accepts_exactly_the_operations_inputs(registry: AgenToolRegistry) -> None:
    create_shop()
    schema = _found(registry.get_operations('shop'))['price']['request_schema']
    jsonschema.validate({'operation': 'price', 'item': 'tea', 'qty': 2}, schema)
    for bad in (
        {'operation': 'buy', 'item': 'tea'},  # another operation
        {'operation': 'price'},  # a required field missing
        {'operation': 'price', 'item': 'tea', 'coupon': 'X'},  # a field price does not use
        {'operation': 'price', 'item': 'tea', 'qty': 'two'},  # a wrong type
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    ShopInput.model_validate({'operation': 'price', 'item': 'tea', 'qty': 2})  # and the agentool agrees


def test_tools_info(registry: AgenToolRegistry) -> None:
    create_shop()
    tools = _found(registry.get_tools_info('shop'))
    assert [t['name'] for t in tools] == ['price', 'buy', 'audit', 'dump']
    buy_tool = tools[1]
    assert buy_tool['description'] == 'Buy some items.'
    assert buy_tool['is_async'] is True
    assert buy_tool['parameters'] == ['item', 'count', 'code']
    assert buy_tool['parameter_types']['count'] == 'int'
    assert buy_tool['return_type'] == 'Receipt'
    assert buy_tool['operations'] == ['buy']


def test_catalog_entry_content(registry: AgenToolRegistry) -> None:
    create_shop()
    (entry,) = registry.export_catalog()['agentools']
    assert entry['name'] == 'shop'
    assert (entry['version'], entry['tags'], entry['dependencies']) == ('0.3.0', ['retail'], ['calculator', 'ledger'])
    assert entry['examples'] == [{'input': {'operation': 'price', 'item': 'tea'}, 'at': '2024-01-02T03:04:05'}]
    assert entry['operation_field'] == 'operation'
    assert entry['input_schema'] == _found(registry.get_schema('shop'))
    assert entry['output_type'] == 'float | Receipt'
    assert entry['output_schema'] is not None
    assert 'anyOf' in entry['output_schema']
    assert [op['name'] for op in entry['operations']] == ['price', 'buy', 'audit', 'dump']
    assert entry['tools'] == _found(registry.get_tools_info('shop'))
    json.dumps(entry)


def test_untyped_output_has_no_output_schema(registry: AgenToolRegistry) -> None:
    async def anything(key: str) -> Any:
        return {'key': key}

    create_agentool('loose', ReadInput, RoutingConfig(operation_map={'read': 'anything'}), [anything])
    (entry,) = registry.export_catalog()['agentools']
    assert (entry['output_type'], entry['output_schema']) == (None, None)
    assert entry['operations'][0]['returns'] == 'Any'


def _fail_in_a_fresh_scope() -> None:
    with use_registry() as innermost:
        assert get_registry() is innermost
        raise RuntimeError('boom')


def test_scope_is_fresh_nested_and_restored_even_on_error(registry: AgenToolRegistry) -> None:
    create_calculator()
    with use_registry() as inner:
        assert get_registry() is inner
        assert inner.list_names() == []
        with pytest.raises(RuntimeError):
            _fail_in_a_fresh_scope()
        assert get_registry() is inner
    assert get_registry() is registry
    assert registry.list_names() == ['calculator']


def test_an_explicit_registry_can_be_reused(registry: AgenToolRegistry) -> None:
    kept = AgenToolRegistry()
    with use_registry(kept):
        create_calculator()
    with use_registry(kept) as again:
        assert again is kept
        assert kept.list_names() == ['calculator']
    assert registry.list_names() == []


async def test_concurrent_tasks_see_only_their_own_registry(registry: AgenToolRegistry) -> None:
    started = asyncio.Event()
    both_registered = asyncio.Barrier(2)

    async def worker(description: str) -> tuple[list[str], str | None, AgenToolRegistry]:
        with use_registry() as mine:
            calculator = create_calculator()  # the same name in both tasks: no DuplicateNameError
            mine.update('calculator', description=description)
            started.set()
            await both_registered.wait()  # both tasks are inside their scopes now
            output = (await calculator.run('{"operation": "add", "a": 1, "b": 1}')).output
            assert output == 2.0
            config = get_registry().require('calculator')
            return get_registry().list_names(), config.description, mine

    (names_a, desc_a, reg_a), (names_b, desc_b, reg_b) = await asyncio.gather(worker('a'), worker('b'))
    assert (names_a, desc_a) == (['calculator'], 'a')
    assert (names_b, desc_b) == (['calculator'], 'b')
    assert reg_a is not reg_b
    assert get_registry() is registry
    assert registry.list_names() == []


async def test_tasks_inherit_the_scope_they_were_created_in(registry: AgenToolRegistry) -> None:
    create_calculator()

    async def look() -> list[str]:
        return get_registry().list_names()

    assert await asyncio.create_task(look()) == ['calculator']


def test_code_that_never_asks_uses_the_default_registry() -> None:
    code = (
        'from agentool import get_registry, use_registry\n'
        'default = get_registry()\n'
        'import examples.calculator  # registers at import\n'
        'with use_registry() as fresh:\n'
        '    assert fresh.list_names() == []\n'
        'assert get_registry() is default and default.list_names() == ["calculator"]\n'
        'print("ok")\n'
    )
    assert run_python(code).strip() == 'ok'


async def test_agent_keeps_its_registry_outside_the_scope_and_across_tasks() -> None:
    with use_registry() as inner:
        agent = create_agentool('scoped', shared.EchoInput, echo_routing(), [shared.echo])
    assert 'scoped' in inner
    assert get_registry().get('scoped') is None

    async def run(text: str) -> str:
        return (await agent.run(f'{{"operation": "echo", "text": "{text}"}}')).output

    assert await asyncio.gather(run('a'), run('b')) == ['a', 'b']


async def test_registries_of_concurrent_blocks_do_not_leak() -> None:
    async def make(replace: bool) -> list[str]:
        with use_registry() as fresh:
            create_calculator(replace=replace)
            await asyncio.sleep(0)
            assert get_registry() is fresh
            return fresh.list_names()

    outside = get_registry()
    assert await asyncio.gather(make(False), make(False)) == [['calculator'], ['calculator']]
    assert outside.list_names() == []


def test_a_lookup_a_scope_hides_says_the_scope_hides_it() -> None:
    # A module-level agentool lives in the default registry; a test under `agentool_isolate = true`
    # (a fresh registry and injector) cannot see it, and every not-found error says why.
    code = (
        'import asyncio\n'
        'from agentool import AgenToolInjector, AgenToolNotFoundError, get_injector, get_registry, use_injector\n'
        'from agentool import use_registry\n'
        'import examples.calculator  # registers at import, in the default registry\n'
        'with use_registry() as fresh, use_injector(AgenToolInjector(registry=fresh)):\n'
        '    for lookup in (\n'
        '        lambda: get_registry().require("calculator"),\n'
        '        lambda: asyncio.run(get_injector().call("calculator", {"operation": "add", "a": 1, "b": 2})),\n'
        '    ):\n'
        '        try:\n'
        '            lookup()\n'
        '        except AgenToolNotFoundError as error:\n'
        '            print(error.message)\n'
        'try:\n'
        '    get_registry().require("calculatr")\n'
        'except AgenToolNotFoundError as error:\n'
        '    print(error.message)\n'
    )
    scoped_registry, scoped_injector, unscoped = run_python(code).strip().splitlines()
    hint = "'calculator' is registered in the default registry, which this scoped one hides"
    assert scoped_registry.startswith("no agentool named 'calculator' is registered; ")
    assert hint in scoped_registry
    assert scoped_injector.startswith("no agent named 'calculator' is registered with the injector")
    assert hint in scoped_injector
    assert 'agentool_isolate = true' in scoped_registry
    assert 'scoped' not in unscoped
    assert "did you mean 'calculator'" in unscoped


def test_update_changes_metadata_and_the_catalog(registry: AgenToolRegistry) -> None:
    create_calculator()
    before = registry.require('calculator')
    assert registry.update('calculator', description='Sums.', version='2.0.0', tags=('math',), examples=[]) is True
    updated = registry.require('calculator')
    assert (updated.description, updated.version, updated.tags) == ('Sums.', '2.0.0', ['math'])
    assert updated.examples == []
    assert updated.created_at == before.created_at
    assert updated.updated_at > before.updated_at
    assert before.description == 'Basic arithmetic on two numbers.'  # the old value object is untouched
    (entry,) = registry.export_catalog()['agentools']
    assert (entry['description'], entry['version'], entry['tags']) == ('Sums.', '2.0.0', ['math'])
    assert registry.get_manager('calculator').config is updated


async def test_an_updated_agentool_still_runs(registry: AgenToolRegistry) -> None:
    calculator = create_calculator()
    registry.update('calculator', description='Still adds.')
    assert (await calculator.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0


@pytest.mark.parametrize(
    ('changes', 'field'),
    [
        ({'description': 'ok', 'routing_config': None}, 'routing_config'),
        ({'version': '9', 'created_at': None}, 'created_at'),
        ({'tags': ['fine'], 'version': 3}, 'version'),
        ({'description': 'ok', 'tags': 'math'}, 'tags'),
        ({'tags': ['a', 1]}, 'tags'),
        ({'dependencies': ['ledger']}, 'dependencies'),  # wiring: re-create with replace=True
        ({'examples': [{'input': {}}, 'not a dict']}, 'examples'),
        ({'description': b'bytes'}, 'description'),
    ],
)
def test_a_failed_update_changes_nothing(registry: AgenToolRegistry, changes: dict[str, Any], field: str) -> None:
    create_calculator()
    before = registry.require('calculator')
    manager = registry.get_manager('calculator')
    with pytest.raises(InvalidUpdateError) as caught:
        registry.update('calculator', **changes)
    assert isinstance(caught.value, ConfigurationError | ValueError)
    assert caught.value.details == {'agentool': 'calculator', 'field': field}
    assert field in str(caught.value)
    assert registry.require('calculator') is before
    assert registry.get_manager('calculator') is manager
    assert before.description == 'Basic arithmetic on two numbers.'
    assert before.tags == ['math', 'example']


def test_update_description_may_be_cleared(registry: AgenToolRegistry) -> None:
    create_calculator()
    assert registry.update('calculator', description=None)
    assert registry.require('calculator').description is None


def test_unregister_removes_one(registry: AgenToolRegistry) -> None:
    create_calculator()
    registry.update('calculator', tags=['x'])
    create_storage()
    assert registry.unregister('calculator') is True
    assert registry.list_names() == ['storage']
    assert registry.get('calculator') is None
    assert registry.unregister('calculator') is False  # nothing to remove, as in the guide


def test_clear_removes_all(registry: AgenToolRegistry) -> None:
    create_calculator()
    registry.clear()
    assert registry.list_names() == []
    assert registry.export_catalog()['agentools'] == []
