"""generate_api_spec: a valid OpenAPI 3.0 (the guide's) or 3.1 document (checked by openapi-spec-validator)."""

from __future__ import annotations

import enum
import importlib
import json
import sys
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import OpenAPIV30SpecValidator, OpenAPIV31SpecValidator, validate
from pydantic import BaseModel, Field, WithJsonSchema

from agentool import (
    AgenToolRegistry,
    BaseOperationInput,
    ConfigurationError,
    Route,
    RoutingConfig,
    create_agentool,
)
from agentool.catalog.openapi import openapi_spec
from examples.calculator import create_calculator
from tests.agentools import ROOT, create_odd, create_storage


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
    calculator = [f'calculator{op}' for op in ('', '/add', '/subtract', '/multiply', '/divide')]
    paths = [f'/agentools/{path}' for path in [*calculator, 'orders', 'orders/place', 'orders/cancel']]
    assert list(spec['paths']) == paths
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


# --- 3.0: schemas rewritten where they are schemas, and only there ----------------------------------


class Cat(BaseModel):
    kind: Literal['cat']
    meows: int


class Dog(BaseModel):
    kind: Literal['dog']
    barks: bool


class Node(BaseModel):
    value: int
    children: list[Node] = []


class OddInput(BaseOperationInput):
    """Types JSON Schema 2020-12 and OpenAPI 3.0 say differently."""

    operation: Literal['go']
    const: int | None = None  # a property with a keyword's name is a name, not a keyword
    pair: tuple[int, str] | None = None
    empty: tuple[()] = ()
    nothing: None = None
    choice: Literal['a', 'b'] | None = None
    pet: Annotated[Cat | Dog, Field(discriminator='kind')] | None = None
    tree: Node | None = Field(default=None, description='A tree.')
    either: int | str | None = None
    keyed: dict[Annotated[str, Field(min_length=2)], int] = Field(default_factory=dict[str, int])
    bounded: Annotated[float, Field(gt=0, lt=10)] = 1
    patterned: dict[Annotated[str, Field(pattern='^a')], int] = Field(default_factory=dict[str, int])
    listed: Annotated[int | str | None, WithJsonSchema({'type': ['integer', 'string', 'null']})] = None
    extra: dict[str, Any] = Field(default={'const': 1, 'type': 'null'})  # a default is data, not a schema


async def odd(pair: tuple[int, str] | None = None) -> tuple[int, int]:
    return (1, 2)


def test_30_rewrites_schemas_only_and_stays_as_loose_as_the_2020_12_schema(registry: AgenToolRegistry) -> None:
    create_agentool('odd', OddInput, RoutingConfig(operation_map={'go': 'odd'}), [odd])
    spec = registry.generate_api_spec()
    assert not list(OpenAPIV30SpecValidator(spec).iter_errors())  # prefixItems and `type: null` were refused
    schemas = spec['components']['schemas']
    properties = schemas['OddInput']['properties']
    assert properties['const'] == {'type': 'integer', 'default': None, 'title': 'Const', 'nullable': True}
    assert 'enum' not in properties  # the property called `const` was taken for the keyword and renamed
    assert properties['extra']['default'] == {'const': 1, 'type': 'null'}
    assert properties['pair']['items'] == {'anyOf': [{'type': 'integer'}, {'type': 'string'}]}
    assert (properties['pair']['minItems'], properties['pair']['maxItems']) == (2, 2)
    assert properties['choice']['enum'] == ['a', 'b', None]  # 3.0.3: a nullable enum lists null
    assert properties['tree']['anyOf'] == [{'$ref': '#/components/schemas/Node'}, {'enum': [None], 'nullable': True}]
    output = spec['paths']['/agentools/odd/go']['post']['responses']['200']['content']['application/json']['schema']
    assert output == {'type': 'array', 'minItems': 2, 'maxItems': 2, 'items': {'type': 'integer'}}
    # Every input pydantic accepts, the 3.0 schema accepts too (checked by a 3.0 validator).
    document = {**schemas['OddInput'], 'components': spec['components']}
    request = spec['paths']['/agentools/odd/go']['post']['requestBody']['content']['application/json']['schema']
    accepted = [
        {'operation': 'go'},
        {'operation': 'go', 'const': None, 'pair': None, 'nothing': None, 'choice': None, 'pet': None, 'tree': None},
        {'operation': 'go', 'either': None, 'listed': None},
        {
            'operation': 'go',
            'const': 1,
            'pair': [1, 'a'],
            'empty': [],
            'choice': 'b',
            'pet': {'kind': 'dog', 'barks': True},
            'tree': {'value': 1, 'children': [{'value': 2}]},
            'either': 'x',
            'keyed': {'ab': 1},
            'bounded': 9.5,
            'patterned': {'ab': 1},
            'listed': 'x',
            'extra': {'type': 'null'},
        },
    ]
    for value in accepted:
        OddInput.model_validate(value)
        assert not list(OAS30Validator(document).iter_errors(value)), value
        assert not list(OAS30Validator({**request, 'components': spec['components']}).iter_errors({'operation': 'go'}))
    assert list(OAS30Validator(document).iter_errors({'operation': 'go', 'bounded': 10}))  # bounds kept


@pytest.mark.parametrize('openapi_version', ['3.0.0', '3.1.0'])
def test_the_spec_of_every_shipped_example_is_valid(registry: AgenToolRegistry, openapi_version: Any) -> None:
    # Every module of examples/ but the demo (the docs site's catalog lists those that register agentools).
    modules = sorted(f'examples.{path.stem}' for path in (ROOT / 'examples').glob('[!_]*.py') if path.stem != 'demo')
    imported = {module: sys.modules.pop(module, None) for module in modules}
    try:
        for module in modules:
            importlib.import_module(module)  # registers its agentools into this test's registry
    finally:
        for module, previous in imported.items():  # other tests keep the classes they imported
            if previous is not None:
                sys.modules[module] = previous
    assert {'calculator', 'sessions', 'storage'} <= set(registry.list_names())
    spec = registry.generate_api_spec(openapi_version=openapi_version)
    validate(spec)
    assert json.loads(json.dumps(spec, allow_nan=False)) == spec


@pytest.mark.filterwarnings('ignore::pydantic.json_schema.PydanticJsonSchemaWarning')
@pytest.mark.parametrize('openapi_version', ['3.0.0', '3.1.0'])
def test_the_openapi_operation_schema_refuses_null_where_the_operation_does(
    registry: AgenToolRegistry, openapi_version: Literal['3.0.0', '3.1.0']
) -> None:
    """`store` needs `body` (its tool takes a `str`): null is refused there, and the document says so."""
    create_odd()
    spec = registry.generate_api_spec(openapi_version=openapi_version)
    store_body = spec['paths']['/agentools/odd/store']['post']['requestBody']['content']['application/json']['schema']
    assert store_body['properties']['body'] == {'type': 'string', 'title': 'Body', 'description': 'The body.'}
    catalog_schema = registry.get_operations('odd')['store']['request_schema']  # pyright: ignore[reportOptionalSubscript]
    assert store_body['properties']['body'] == catalog_schema['properties']['body']
    peek_body = spec['paths']['/agentools/odd/peek']['post']['requestBody']['content']['application/json']['schema']
    expected = (
        {'anyOf': [{'type': 'string'}, {'type': 'null'}], 'default': None, 'description': 'The body.', 'title': 'Body'}
        if openapi_version == '3.1.0'
        else {'type': 'string', 'nullable': True, 'default': None, 'description': 'The body.', 'title': 'Body'}
    )
    assert peek_body['properties']['body'] == expected


class _IntOps(BaseOperationInput):
    operation: Literal[1, 2]
    a: int = 0


class _Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class _EnumOps(BaseOperationInput):
    operation: _Level


async def _int_op(a: int = 0) -> int:
    return a


async def _level_op() -> int:
    return 0


def test_an_operation_that_is_not_text_is_published_as_the_value_to_send(registry: AgenToolRegistry) -> None:
    # Routes name operations by text; a client following the schema must send the number itself.
    create_agentool('ints', _IntOps, RoutingConfig(operation_map={'1': '_int_op', '2': '_int_op'}), [_int_op])
    create_agentool('levels', _EnumOps, RoutingConfig(operation_map={'1': '_level_op', '2': '_level_op'}), [_level_op])
    for name in ('ints', 'levels'):
        operations = registry.get_operations(name)
        assert operations is not None
        schema = operations['1']['request_schema']
        assert schema['properties']['operation'].items() >= {'const': 1, 'type': 'integer'}.items()
        _IntOps.model_validate({'operation': schema['properties']['operation']['const']})
    spec = openapi_spec(registry)
    assert '"const":"1"' not in json.dumps(spec, separators=(',', ':'))
