"""Registry introspection: get, list_names, list_detailed, search, get_schema, get_operations, get_tools_info."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from agentool import (
    AgenToolNotFoundError,
    AgenToolRegistry,
    BaseOperationInput,
    CatalogOperation,
    CatalogTool,
    Route,
    RoutingConfig,
    create_agentool,
)
from examples.calculator import create_calculator
from tests.agentools import create_storage


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


def _operations(registry: AgenToolRegistry, name: str) -> dict[str, CatalogOperation]:
    operations = registry.get_operations(name)
    assert operations is not None
    return operations


def _tools(registry: AgenToolRegistry, name: str) -> list[CatalogTool]:
    tools = registry.get_tools_info(name)
    assert tools is not None
    return tools


def _schema(registry: AgenToolRegistry, name: str) -> dict[str, Any]:
    schema = registry.get_schema(name)
    assert schema is not None
    return schema


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
    assert (calculator['description'], calculator['version'], calculator['tags']) == (
        entry['description'],
        entry['version'],
        entry['tags'],
    )
    assert (calculator['input_schema'], calculator['output_type']) == (entry['input_schema'], entry['output_type'])
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
    from examples.calculator import CalculatorInput

    assert _schema(registry, 'calculator') == CalculatorInput.model_json_schema()


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
    price_op = _operations(registry, 'shop')['price']
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
    (field,) = _operations(registry, 'reader')['read']['fields']
    # Typed as the operation takes it: `read(key: str)` refuses null, as the request schema says.
    assert (field['name'], field['required'], field['type']) == ('key', True, 'str')
    key_schema = _operations(registry, 'reader')['read']['request_schema']['properties']['key']
    assert key_schema == {'type': 'string', 'title': 'Key'}


def test_transform_fields_are_found_by_probing(registry: AgenToolRegistry) -> None:
    create_shop()
    operations = _operations(registry, 'shop')
    buy_op = operations['buy']
    assert buy_op['fields_source'] == 'transform'
    assert [f['name'] for f in buy_op['fields']] == ['item', 'qty', 'coupon']
    assert buy_op['description'] == 'Buy, for real.'
    assert buy_op['tool_description'] == 'Buy some items.'
    assert buy_op['returns'] == 'Receipt'
    assert (buy_op['destructive'], buy_op['concurrent_safe'], buy_op['max_output_chars']) == (True, False, 100)


def test_transforms_that_cannot_be_probed_list_every_field(registry: AgenToolRegistry) -> None:
    create_shop()
    operations = _operations(registry, 'shop')
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
    mix_op = _operations(registry, 'mixer')['mix']
    assert mix_op['fields_source'] == 'transform'
    assert [f['name'] for f in mix_op['fields']] == ['a', 'b', 'label']  # `c` is only read for 'other'
    other_op = _operations(registry, 'mixer')['other']
    assert [f['name'] for f in other_op['fields']] == ['c', 'label']


def test_aliased_fields_use_their_json_key(registry: AgenToolRegistry) -> None:
    create_shop()
    dump_fields = _operations(registry, 'shop')['dump']['fields']
    assert dump_fields[-1]['name'] == 'shopNote'
    assert 'shopNote' in _schema(registry, 'shop')['properties']


def test_request_schema_accepts_exactly_the_operations_inputs(registry: AgenToolRegistry) -> None:
    create_shop()
    schema = _operations(registry, 'shop')['price']['request_schema']
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
    tools = _tools(registry, 'shop')
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
    assert entry['input_schema'] == _schema(registry, 'shop')
    assert entry['output_type'] == 'float | Receipt'
    assert entry['output_schema'] is not None
    assert 'anyOf' in entry['output_schema']
    assert [op['name'] for op in entry['operations']] == ['price', 'buy', 'audit', 'dump']
    assert entry['tools'] == _tools(registry, 'shop')
    json.dumps(entry)


def test_untyped_output_has_no_output_schema(registry: AgenToolRegistry) -> None:
    async def anything(key: str) -> Any:
        return {'key': key}

    create_agentool('loose', ReadInput, RoutingConfig(operation_map={'read': 'anything'}), [anything])
    (entry,) = registry.export_catalog()['agentools']
    assert (entry['output_type'], entry['output_schema']) == (None, None)
    assert entry['operations'][0]['returns'] == 'Any'
