"""generate_api_spec: a valid OpenAPI 3.0 (the guide's) or 3.1 document (checked by openapi-spec-validator)."""

from __future__ import annotations

import json
from typing import Any, Literal

import jsonschema
import pytest
from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator, validate
from pydantic import BaseModel, Field

from agentool import AgenToolRegistry, BaseOperationInput, ConfigurationError, Route, RoutingConfig, create_agentool
from examples.calculator import create_calculator
from tests.agentools import create_storage


class Item(BaseModel):
    """A line item."""

    sku: str
    qty: int = 1


class OrderInput(BaseOperationInput):
    operation: Literal['place', 'cancel']
    items: list[Item] = Field(default_factory=list[Item], description='What to order.')
    order_id: str | None = None


class Order(BaseModel):
    order_id: str
    items: list[Item]


async def place(items: list[Item]) -> Order:
    """Place an order."""
    return Order(order_id='o1', items=items)


async def cancel(order_id: str) -> Order:
    """Cancel an order."""
    return Order(order_id=order_id, items=[])


def create_orders(name: str = 'orders') -> None:
    routes = RoutingConfig(operation_map={'place': 'place', 'cancel': Route(tool='cancel', deprecated=True)})
    create_agentool(name, OrderInput, routes, [place, cancel], description='Orders.', tags=['shop'])


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node['$ref']] if isinstance(node.get('$ref'), str) else []
        return found + [ref for value in node.values() for ref in refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in refs(value)]
    return []


def with_components(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the document's components beside it, so `#/components/...` references resolve."""
    return {**schema, 'components': spec['components']}


def test_spec_is_valid_openapi_3_1(registry: AgenToolRegistry) -> None:
    create_calculator()
    create_storage()
    create_orders()
    spec = registry.generate_api_spec(title='Shop', version='2.0.0', description='All of it.', openapi_version='3.1.0')
    validate(spec)
    assert not list(OpenAPIV31SpecValidator(spec).iter_errors())
    assert spec['openapi'] == '3.1.0'
    assert spec['info'] == {'title': 'Shop', 'version': '2.0.0', 'description': 'All of it.'}
    json.dumps(spec)
    again = registry.generate_api_spec(title='Shop', version='2.0.0', description='All of it.', openapi_version='3.1.0')
    assert again == spec
    # The validator does not resolve schema references; check that every one points at a component.
    components = spec['components']['schemas']
    assert refs(spec)
    assert all(ref.removeprefix('#/components/schemas/') in components for ref in refs(spec))
    for schema in components.values():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_spec_is_valid_openapi_3_0_by_default_as_in_the_guide(registry: AgenToolRegistry) -> None:
    create_calculator()
    create_storage()
    create_orders()
    spec = registry.generate_api_spec()
    assert spec['openapi'] == '3.0.0'
    assert spec['info'] == {'title': 'AgenTool Registry API', 'version': '1.0.0'}
    assert not list(OpenAPIV30SpecValidator(spec).iter_errors())
    text = json.dumps(spec)
    assert '"const"' not in text  # 2020-12 keywords are rewritten to the 3.0 dialect
    cancel = spec['paths']['/agentools/orders/cancel']['post']['requestBody']['content']['application/json']
    assert cancel['schema']['properties']['operation']['enum'] == ['cancel']
    order_id = spec['components']['schemas']['OrderInput']['properties']['order_id']
    assert order_id['nullable'] is True
    assert order_id['type'] == 'string'


def test_one_path_per_agentool_and_per_operation(registry: AgenToolRegistry) -> None:
    create_calculator()
    create_orders()
    spec = registry.generate_api_spec()
    assert list(spec['paths']) == [
        '/agentools/calculator',
        '/agentools/calculator/add',
        '/agentools/calculator/subtract',
        '/agentools/calculator/multiply',
        '/agentools/calculator/divide',
        '/agentools/orders',
        '/agentools/orders/place',
        '/agentools/orders/cancel',
    ]
    operation_ids = [path['post']['operationId'] for path in spec['paths'].values()]
    assert operation_ids[:2] == ['execute_calculator', 'calculator_add']
    assert len(set(operation_ids)) == len(operation_ids)
    assert [tag['name'] for tag in spec['tags']] == ['example', 'math', 'shop']
    orders = spec['paths']['/agentools/orders']['post']
    assert (orders['summary'], orders['tags']) == ('Orders.', ['shop'])
    assert spec['paths']['/agentools/orders/place']['post']['tags'] == ['place', 'shop']


def test_request_bodies_are_derived_from_the_input_schema(registry: AgenToolRegistry) -> None:
    create_orders()
    spec = registry.generate_api_spec()
    paths = spec['paths']
    whole = paths['/agentools/orders']['post']['requestBody']['content']['application/json']['schema']
    assert whole == {'$ref': '#/components/schemas/OrderInput'}
    place_schema = paths['/agentools/orders/place']['post']['requestBody']['content']['application/json']['schema']
    cancel_schema = paths['/agentools/orders/cancel']['post']['requestBody']['content']['application/json']['schema']
    assert place_schema != cancel_schema
    assert list(place_schema['properties']) == ['operation', 'items']
    assert list(cancel_schema['properties']) == ['operation', 'order_id']
    assert place_schema['properties']['items'] == spec['components']['schemas']['OrderInput']['properties']['items']
    assert cancel_schema['required'] == ['operation', 'order_id']  # cancel(order_id: str) needs it

    place_ok = {'operation': 'place', 'items': [{'sku': 'tea', 'qty': 2}]}
    jsonschema.validate(place_ok, with_components(place_schema, spec))
    jsonschema.validate(place_ok, with_components(whole, spec))
    OrderInput.model_validate(place_ok)
    for bad in (
        {'operation': 'cancel', 'order_id': 'o1'},
        {'operation': 'place', 'items': [{'qty': 2}]},
        {'operation': 'place', 'order_id': 'o1'},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, with_components(place_schema, spec))


def test_responses_metadata_and_shared_components(registry: AgenToolRegistry) -> None:
    create_orders()
    create_calculator()
    spec = registry.generate_api_spec()
    place = spec['paths']['/agentools/orders/place']['post']
    assert place['responses']['200']['content']['application/json']['schema'] == {'$ref': '#/components/schemas/Order'}
    assert place['responses']['400']['content']['application/json']['schema'] == {
        '$ref': '#/components/schemas/AgenToolError'
    }
    calc = spec['paths']['/agentools/calculator/add']['post']
    assert calc['responses']['200']['content']['application/json']['schema'] == {'type': 'number'}
    cancel = spec['paths']['/agentools/orders/cancel']['post']
    assert cancel['deprecated'] is True
    assert 'deprecated' not in place
    assert cancel['x-agentool']['operation'] == 'cancel'
    assert cancel['x-agentool']['tool'] == 'cancel'
    assert place['description'] == 'Place an order.'
    assert set(spec['components']['schemas']) == {'AgenToolError', 'CalculatorInput', 'Item', 'Order', 'OrderInput'}


def test_names_are_encoded_and_models_with_one_name_do_not_collide(registry: AgenToolRegistry) -> None:
    create_orders('orders/v1 {beta}')

    class OrderInput(BaseOperationInput):  # same class name, different model
        operation: Literal['ping']
        note: str

    async def ping(note: str) -> str:
        return note

    create_agentool('other', OrderInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping])
    spec = registry.generate_api_spec()
    validate(spec)
    assert '/agentools/orders%2Fv1%20%7Bbeta%7D/place' in spec['paths']
    input_refs = {
        spec['paths'][path]['post']['requestBody']['content']['application/json']['schema']['$ref']
        for path in ('/agentools/other', '/agentools/orders%2Fv1%20%7Bbeta%7D')
    }
    assert len(input_refs) == 2


def test_untyped_output_and_empty_registry(registry: AgenToolRegistry) -> None:
    empty = registry.generate_api_spec()
    validate(empty)
    assert empty['paths'] == {}

    class AnyInput(BaseOperationInput):
        operation: Literal['go']

    async def go() -> Any:
        return {'free': 'form'}

    create_agentool('loose', AnyInput, RoutingConfig(operation_map={'go': 'go'}), [go])
    spec = registry.generate_api_spec()
    validate(spec)
    schema = spec['paths']['/agentools/loose']['post']['responses']['200']['content']['application/json']['schema']
    assert 'type' not in schema
    assert '$ref' not in schema


@pytest.mark.parametrize('openapi_version', ['2.0', '3.0', '3.2.0', 3.1, None])
def test_a_version_the_generator_does_not_write_is_refused(registry: AgenToolRegistry, openapi_version: Any) -> None:
    create_calculator()
    with pytest.raises(ConfigurationError, match='openapi_version must be one of') as caught:
        registry.generate_api_spec(openapi_version=openapi_version)
    assert caught.value.details == {
        'option': 'openapi_version',
        'value': repr(openapi_version),
        'supported': ['3.0.0', '3.1.0'],
    }
    with pytest.raises(ConfigurationError, match=repr(openapi_version)):
        AgenToolRegistry.generate_api_spec(openapi_version=openapi_version)
