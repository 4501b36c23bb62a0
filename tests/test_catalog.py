"""export_catalog: JSON-serialisable, deterministic, independent of registration order and time; arguments
checked. Also `generate_dependency_graph` (data) and `generate_mermaid_graph` (Mermaid text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import AliasChoices, AliasPath, Field

import agentool.catalog as catalog_api
from agentool import (
    AgenToolConfig,
    AgenToolRegistry,
    BaseOperationInput,
    ConfigurationError,
    RoutingConfig,
    create_agentool,
    get_injector,
    use_registry,
)
from examples.calculator import create_calculator
from tests.agentools import PingInput, create_odd, create_storage, ping, python_env, run_python


def _build(order: list[str]) -> str:
    with use_registry() as registry:
        for name in order:
            if name == 'calculator':
                create_calculator()
            elif name == 'storage':
                create_storage()
            else:
                create_agentool(name, PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping])
        catalog = dict(registry.export_catalog())
        datetime.fromisoformat(str(catalog.pop('generated_at')))  # the one key that depends on time
        return json.dumps(catalog)


def test_catalog_is_json_and_deterministic() -> None:
    first = _build(['storage', 'zeta', 'calculator', 'alpha'])
    second = _build(['alpha', 'calculator', 'zeta', 'storage'])
    assert first == second  # registration order and creation time do not matter
    catalog = json.loads(first)
    assert catalog['catalog_version'] == '1'
    assert catalog['version'] == '1.0.0'
    assert catalog['total_agentools'] == 4
    assert [entry['name'] for entry in catalog['agentools']] == ['alpha', 'calculator', 'storage', 'zeta']


def test_operations_keep_routing_order_and_fields_schema_order(registry: AgenToolRegistry) -> None:
    create_storage()
    (entry,) = registry.export_catalog()['agentools']
    assert [op['name'] for op in entry['operations']] == ['read', 'write', 'list', 'delete']
    assert [f['name'] for f in entry['operations'][1]['fields']] == ['key', 'data']
    assert entry['operations'][2]['fields'] == []  # `list` reads nothing
    assert list(entry['input_schema']['properties']) == ['operation', 'key', 'data']


def test_empty_registry_catalog(registry: AgenToolRegistry) -> None:
    catalog = registry.export_catalog()
    assert datetime.fromisoformat(catalog['generated_at']).tzinfo is not None
    assert catalog == {
        'version': '1.0.0',
        'catalog_version': '1',
        'generated_at': catalog['generated_at'],
        'total_agentools': 0,
        'agentools': [],
    }


def _catalog_calls() -> dict[str, Callable[[Any], object]]:
    """Every public catalog function that reads a registry, called with `registry` as that registry."""
    return {
        'export_catalog': catalog_api.export_catalog,
        'list_detailed': catalog_api.list_detailed,
        'search': catalog_api.search,
        'catalog_entry': lambda registry: catalog_api.catalog_entry(registry, 'ping'),
        'input_schema': lambda registry: catalog_api.input_schema(registry, 'ping'),
        'operations': lambda registry: catalog_api.operations(registry, 'ping'),
        'tools_info': lambda registry: catalog_api.tools_info(registry, 'ping'),
        'markdown_docs': catalog_api.markdown_docs,
        'openapi_spec': catalog_api.openapi_spec,
        'dependency_graph': catalog_api.dependency_graph,
        'mermaid_graph': catalog_api.mermaid_graph,
    }


@pytest.mark.parametrize('function', list(_catalog_calls()))
@pytest.mark.parametrize('not_a_registry', [None, 'registry', 5, [], {}])
def test_catalog_functions_refuse_what_is_not_a_registry(
    registry: AgenToolRegistry, function: str, not_a_registry: object
) -> None:
    create_agentool('ping', PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping])
    call = _catalog_calls()[function]
    with pytest.raises(ConfigurationError, match=r'^registry must be an AgenToolRegistry') as caught:
        call(not_a_registry)  # an AttributeError from deep inside, before
    assert caught.value.details == {'option': 'registry', 'value': repr(not_a_registry)}
    call(registry)


@pytest.mark.parametrize(
    ('generate', 'option', 'value'),
    [
        (lambda r, v: r.generate_api_spec(title=v), 'title', 123),
        (lambda r, v: r.generate_api_spec(version=v), 'version', 1),
        (lambda r, v: r.generate_api_spec(description=v), 'description', 5),
        (lambda r, v: r.generate_markdown_docs(title=v), 'title', 123),
        (lambda r, v: r.generate_dependency_graph(include_tools=v), 'include_tools', 'no'),
        (lambda r, v: r.generate_mermaid_graph(include_tools=v), 'include_tools', 'no'),
        (lambda r, v: r.generate_mermaid_graph(include_tools=v), 'include_tools', 0),
    ],
)
def test_generators_refuse_options_of_the_wrong_type(
    registry: AgenToolRegistry, generate: Callable[[AgenToolRegistry, object], object], option: str, value: object
) -> None:
    # Each was accepted (a title of 123 in the OpenAPI info, a truthy 'no' including the tools) or
    # failed with an AttributeError.
    create_agentool('ping', PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping])
    with pytest.raises(ConfigurationError, match=f'^{option} must be') as caught:
        generate(registry, value)
    assert caught.value.details == {'option': option, 'value': repr(value)}


class Level(float, Enum):
    low = 1.0
    top = float('inf')


class LimitInput(BaseOperationInput):
    operation: Literal['go']
    limit: float = float('inf')
    floor: float = float('-inf')
    level: Level = Level.low


async def limited(limit: float = float('inf'), floor: float = float('-inf')) -> float:
    return limit


def _strict_json(value: object) -> object:
    """`value` through a JSON round trip that refuses `Infinity` and `NaN` (RFC 8259 has no such numbers)."""

    def refuse(constant: str) -> object:
        raise ValueError(f'not JSON: {constant}')

    return json.loads(json.dumps(value, allow_nan=False), parse_constant=refuse)


def test_infinite_defaults_and_examples_are_strings_so_every_output_is_json(registry: AgenToolRegistry) -> None:
    # They were floats, which `json.dumps` writes as `Infinity`: no JSON parser has to accept that.
    example = {'input': {'operation': 'go'}, 'output': float('nan')}
    create_agentool('limits', LimitInput, RoutingConfig(operation_map={'go': 'limited'}), [limited], examples=[example])
    catalog = registry.export_catalog()
    _strict_json(catalog)
    entry = catalog['agentools'][0]
    assert [(f['name'], f['default']) for f in entry['operations'][0]['fields']] == [
        ('limit', 'Infinity'),
        ('floor', '-Infinity'),
    ]
    assert entry['examples'] == [{'input': {'operation': 'go'}, 'output': 'NaN'}]
    assert entry['input_schema']['properties']['limit']['default'] == 'Infinity'
    assert entry['input_schema']['$defs']['Level']['enum'] == [1.0, 'Infinity']
    assert entry['operations'][0]['request_schema']['properties']['floor']['default'] == '-Infinity'
    for version in ('3.0.0', '3.1.0'):
        spec = registry.generate_api_spec(openapi_version=version)  # pyright: ignore[reportArgumentType]
        assert spec['components']['schemas']['LimitInput']['properties']['limit']['default'] == 'Infinity'
        _strict_json(spec)
    _strict_json(registry.list_detailed())
    markdown = registry.generate_markdown_docs()
    assert '`limit` (`float`, optional, default `"Infinity"`)' in markdown
    for block in re.findall(r'```json\n(.*?)\n```', markdown, flags=re.S):
        _strict_json(json.loads(block))


class DocInput(BaseOperationInput):
    operation: Literal['store']
    path: str = ''
    body: str | None = None


async def store(location: str, text: str) -> str:
    return location


def test_a_transform_sees_stand_ins_once_plus_once_per_field_it_reads_at_each_build(registry: AgenToolRegistry) -> None:
    # The docs said "called once, when the catalog is built"; this is what is documented now.
    seen: list[object] = []

    def transform(x: Any) -> dict[str, Any]:
        seen.append(x)
        return {'location': x.path, 'text': x.body or ''}

    create_agentool('doc', DocInput, RoutingConfig(operation_map={'store': ('store', transform)}), [store])
    assert len(seen) == 3  # when it is created: which fields it reads, then each of `path` and `body` as None
    for build in (
        registry.export_catalog,
        lambda: registry.get_operations('doc'),
        registry.generate_markdown_docs,
        registry.generate_api_spec,
    ):
        seen.clear()
        build()
        assert len(seen) == 3
        assert not any(isinstance(x, DocInput) for x in seen)  # stand-ins, never real input


@pytest.mark.filterwarnings('ignore::pydantic.json_schema.PydanticJsonSchemaWarning')
def test_a_default_or_example_of_bytes_that_are_not_text_does_not_break_the_catalog(
    registry: AgenToolRegistry,
) -> None:
    create_odd(examples=[{'input': {'operation': 'peek'}, 'output': b'\xff'}])
    catalog = registry.export_catalog()
    json.dumps(catalog, allow_nan=False)
    fields = {f['name']: f['default'] for f in catalog['agentools'][0]['operations'][0]['fields']}
    assert fields['blob'] == '__4='  # base64, as pydantic writes bytes that are not UTF-8 text
    assert catalog['agentools'][0]['examples'][0]['output'] == '_w=='
    assert registry.generate_markdown_docs().startswith('# AgenTool Registry Documentation')
    json.dumps(registry.generate_api_spec(), allow_nan=False)
    assert registry.list_detailed()[0]['name'] == 'odd'
    # What JSON cannot hold at all (a key no JSON key can be) is shown as its repr.
    registry.update('odd', examples=[{frozenset({1}): 1}])
    assert registry.export_catalog()['agentools'][0]['examples'] == [repr({frozenset({1}): 1})]
    assert '#### Example 1' in registry.generate_markdown_docs()


SET_DEFAULT = """
import json
from tests.agentools import create_odd
from agentool import get_registry
create_odd()
fields = get_registry().export_catalog()['agentools'][0]['operations'][0]['fields']
print(json.dumps([f['default'] for f in fields if f['name'] == 'tags']))
"""


@pytest.mark.filterwarnings('ignore::pydantic.json_schema.PydanticJsonSchemaWarning')
def test_a_set_default_is_listed_in_the_same_order_by_every_process(registry: AgenToolRegistry) -> None:
    """Equal definitions give equal catalogs: a set default does not follow the process's hash seed."""
    outputs = {run_python(SET_DEFAULT, env={**python_env(), 'PYTHONHASHSEED': seed}) for seed in ('1', '2', '3')}
    assert outputs == {'[["alpha", "beta", "delta", "epsilon", "gamma"]]\n'}
    create_odd()
    schema = registry.export_catalog()['agentools'][0]['input_schema']
    field = registry.export_catalog()['agentools'][0]['operations'][0]['fields'][-1]
    assert field['default'] == schema['properties']['tags']['default']


class ChoiceInput(BaseOperationInput):
    operation: Literal['greet']
    who: str = Field(validation_alias=AliasChoices('name', 'user'))
    nick: str | None = Field(default=None, validation_alias=AliasChoices(AliasPath('n', 0), 'nickname'))


async def greet(who: str, nick: str | None = None) -> str:
    return f'hi {who}'


async def test_a_field_with_alias_choices_is_listed_under_the_key_the_schema_gives_it(
    registry: AgenToolRegistry,
) -> None:
    """pydantic names such a property by its first one-key choice; the catalog and OpenAPI use that key too."""
    create_agentool('greeter', ChoiceInput, RoutingConfig(operation_map={'greet': 'greet'}), [greet])
    schema = registry.get_schema('greeter')
    assert schema is not None
    assert list(schema['properties']) == ['operation', 'name', 'nickname']
    operation = registry.export_catalog()['agentools'][0]['operations'][0]
    assert [(f['name'], f['required']) for f in operation['fields']] == [('name', True), ('nickname', False)]
    request = operation['request_schema']
    assert list(request['properties']) == ['operation', 'name', 'nickname']
    assert request['properties']['name'] == schema['properties']['name']
    assert request['required'] == ['operation', 'name']
    spec = registry.generate_api_spec(openapi_version='3.1.0')
    body = spec['paths']['/agentools/greeter/greet']['post']['requestBody']['content']['application/json']['schema']
    assert list(body['properties']) == ['operation', 'name', 'nickname']
    assert await get_injector().call('greeter', {'operation': 'greet', 'name': 'ada'}) == 'hi ada'


class _Opaque:  # a class pydantic has no schema for
    pass


def test_an_output_type_with_no_schema_is_a_configuration_error_in_the_catalog(registry: AgenToolRegistry) -> None:
    # create_agentool refuses it; a configuration registered directly is only stored.
    config = AgenToolConfig(
        input_schema=PingInput, routing_config=RoutingConfig(operation_map={'ping': 'ping'}), output_type=_Opaque
    )
    registry.register('opaque', config)
    with pytest.raises(
        ConfigurationError, match="agentool 'opaque': its output type _Opaque has no JSON schema"
    ) as caught:
        registry.export_catalog()
    assert caught.value.details['option'] == 'output_type'


async def pong() -> str:
    """Unrouted helper tool."""
    return 'ping'


def make(name: str, *dependencies: str) -> None:
    routes = RoutingConfig(operation_map={'ping': 'ping'})
    create_agentool(name, PingInput, routes, [ping, pong], dependencies=list(dependencies))


def test_dependency_graph_data(registry: AgenToolRegistry) -> None:
    make('storage')
    make('session', 'storage', 'crypto', 'storage')
    make('auth', 'session', 'storage')
    graph = registry.generate_dependency_graph()
    assert graph == {
        # Declared dependencies as given (the guide keeps repeats), then routed agentools.
        'agentools': {'auth': ['session', 'storage'], 'session': ['storage', 'crypto', 'storage'], 'storage': []},
        'missing': {'session': ['crypto']},
        'tools': {'auth': ['ping', 'pong'], 'session': ['ping', 'pong'], 'storage': ['ping', 'pong']},
    }
    json.dumps(graph)
    without_tools = registry.generate_dependency_graph(include_tools=False)
    assert 'tools' not in without_tools
    assert without_tools['agentools'] == graph['agentools']


def test_mermaid_graph(registry: AgenToolRegistry) -> None:
    make('storage')
    make('session', 'storage', 'crypto')
    text = registry.generate_mermaid_graph()
    assert text.splitlines() == [
        'graph LR',
        '    a0("session")',
        '    a1("storage")',
        '    m0["crypto (missing)"]:::missing',
        '    a0 --> a1',
        '    a0 --> m0',
        '    a0 -.-> a0_t0["ping()"]',
        '    a0 -.-> a0_t1["pong()"]',
        '    a1 -.-> a1_t0["ping()"]',
        '    a1 -.-> a1_t1["pong()"]',
        '    classDef missing stroke-dasharray: 5 5',
    ]
    without_tools = registry.generate_mermaid_graph(include_tools=False).splitlines()
    assert without_tools[-1] == '    classDef missing stroke-dasharray: 5 5'


def test_mermaid_labels_are_escaped(registry: AgenToolRegistry) -> None:
    make('say "hi" <b>#1</b> `x`  next')
    first_node = registry.generate_mermaid_graph(include_tools=False).splitlines()[1]
    assert first_node == '    a0("say #quot;hi#quot; #lt;b#gt;#35;1#lt;/b#gt; #96;x#96;  next")'


def test_mermaid_directives_cannot_leave_a_label(registry: AgenToolRegistry) -> None:
    # Mermaid reads `%%{...}%%` anywhere in the text as a directive that reconfigures the diagram.
    make("x%%{init: {'theme':'forest'}}%%", "dep%%{init: {'theme':'dark'}}%%")
    text = registry.generate_mermaid_graph()
    assert not {'%', '{', '}', "'"} & set(text)
    assert '    a0("x#37;#37;#123;init: #123;#39;theme#39;:#39;forest#39;#125;#125;#37;#37;")' in text
    assert '#39;dark#39;' in text  # the missing dependency's dashed node is escaped too


def test_mermaid_labels_keep_spacing_apart(registry: AgenToolRegistry) -> None:
    # Control characters are refused in names; a label keeps the spaces it is given, never folds them.
    make('a b')
    make('a  b')
    lines = registry.generate_mermaid_graph(include_tools=False).splitlines()
    assert lines[1:3] == ['    a0("a  b")', '    a1("a b")']


def test_empty_graph(registry: AgenToolRegistry) -> None:
    assert registry.generate_dependency_graph() == {'agentools': {}, 'missing': {}, 'tools': {}}
    assert registry.generate_mermaid_graph() == 'graph LR\n'
