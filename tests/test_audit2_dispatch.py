"""Second-pass audit of dispatch, catalogs and the CLI: held-out tests written from the guides."""

from __future__ import annotations

import asyncio
import enum
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import AliasChoices, AliasPath, BaseModel, Field
from pydantic_ai import Agent, RunContext, TextOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import (
    AgenToolRegistry,
    BaseOperationInput,
    ConfigurationError,
    DispatchOutputError,
    RoutingConfig,
    create_agentool,
    get_registry,
    use_registry,
)
from agentool.catalog.openapi import openapi_spec
from agentool.cli import main
from agentool.dispatch import CommandRule, Dispatch, DispatchCapability, DispatchRequest, DispatchRule, JsonRule

ROOT = Path(__file__).resolve().parent.parent


# --- dispatch ----------------------------------------------------------------------------------


class Ticket(BaseModel):
    id: int
    status: str


@dataclass
class Desk:
    start: int = 0


class DeskInput(BaseOperationInput):
    operation: Literal['get', 'list']
    id: int = 1


async def get(ctx: RunContext[Desk], id: int) -> Ticket:
    return Ticket(id=id + ctx.deps.start, status='open')


async def list_(ctx: RunContext[Desk], id: int) -> list[Ticket]:
    return [Ticket(id=id, status='open')]


def _desk() -> None:
    create_agentool(
        'desk', DeskInput, RoutingConfig(operation_map={'get': 'get', 'list': 'list_'}), [get, list_], deps_type=Desk
    )


def _llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart('from the model')])


def _shout(text: str) -> str:
    return text.upper()


def _summarise(ctx: RunContext[Any], ticket: Ticket) -> str:
    return f'ticket {ticket.id}'


@pytest.mark.parametrize('output_type', [TextOutput(_shout), _summarise], ids=['TextOutput', 'function'])
def test_an_output_function_cannot_take_a_dispatched_answer(output_type: Any) -> None:
    """An output function is called by the model's run only: a dispatched answer is refused, not passed as text."""
    _desk()
    agent = Agent(FunctionModel(_llm), deps_type=Desk, output_type=output_type, capabilities=[_json()])
    with pytest.raises(DispatchOutputError, match='output function') as caught:
        agent.run_sync('{"operation": "get"}', deps=Desk())
    assert caught.value.details['rule'] == 'json:desk'
    assert caught.value.details['operation'] == 'get'


def _json() -> DispatchCapability:
    return DispatchCapability([JsonRule(agentool='desk')])


def test_the_output_error_names_a_generic_output_type_in_full() -> None:
    _desk()
    agent = Agent(FunctionModel(_llm), deps_type=Desk, output_type=list[Ticket], capabilities=[_json()])
    with pytest.raises(DispatchOutputError) as caught:
        agent.run_sync('{"operation": "get"}', deps=Desk())
    assert caught.value.details['output_type'] == 'list[Ticket]'
    assert caught.value.details['value_type'] == 'Ticket'
    assert agent.run_sync('{"operation": "list"}', deps=Desk()).output == [Ticket(id=1, status='open')]


def test_a_run_without_deps_lets_the_injector_build_the_agentools_deps() -> None:
    """As the agentool's own `agent.run(deps=None)`: the tool does not get `None` for its declared deps."""
    _desk()
    agent = Agent(FunctionModel(_llm), output_type=Ticket, capabilities=[_json()])
    assert agent.run_sync('{"operation": "get", "id": 3}').output == Ticket(id=3, status='open')
    typed = Agent(FunctionModel(_llm), deps_type=Desk, output_type=Ticket, capabilities=[_json()])
    assert typed.run_sync('{"operation": "get", "id": 3}', deps=Desk(start=10)).output.id == 13


def test_a_custom_rule_returning_something_else_is_a_configuration_error() -> None:
    class Loose(DispatchRule):
        def match(self, request: DispatchRequest, operations: Any) -> Any:
            return {'agentool': 'desk', 'input': {'operation': 'get'}}

    _desk()
    dispatch = DispatchCapability([Loose()])
    agent = Agent(FunctionModel(_llm), deps_type=Desk, capabilities=[dispatch])
    with pytest.raises(ConfigurationError, match='must return a Dispatch or None') as caught:
        agent.run_sync('anything', deps=Desk())
    assert caught.value.details['rule'] == 'loose'
    assert dispatch.counts.errors == 1


def test_rules_in_order_first_claim_wins_and_declines_pass_on() -> None:
    _desk()

    class Never(DispatchRule):
        def match(self, request: DispatchRequest, operations: Any) -> Dispatch | None:
            return None

    dispatch = DispatchCapability(
        [
            Never(),
            CommandRule(prefix='/t', agentool='desk', operation='get', parse=lambda m: None),  # declines
            CommandRule(name='second', pattern=r'/t (?P<id>\d+)', agentool='desk', operation='get'),
            CommandRule(name='third', pattern=r'/t (?P<id>\d+)', agentool='desk', operation='list'),
        ]
    )
    agent = Agent(FunctionModel(_llm), deps_type=Desk, output_type=str, capabilities=[dispatch])
    assert json.loads(agent.run_sync('/t 4', deps=Desk()).output) == {'id': 4, 'status': 'open'}
    assert agent.run_sync('/t four', deps=Desk()).output == 'from the model'
    assert dispatch.counts.by_rule == {'second': 1}
    assert (dispatch.counts.dispatched, dispatch.counts.sent_to_model) == (1, 1)


def test_stream_and_iter_of_a_dispatched_turn() -> None:
    _desk()
    agent = Agent(FunctionModel(_llm), deps_type=Desk, output_type=Ticket, capabilities=[_json()])

    async def scenario() -> None:
        async with agent.run_stream('{"operation": "get", "id": 2}', deps=Desk()) as stream:
            assert await stream.get_output() == Ticket(id=2, status='open')
        async with agent.iter('{"operation": "get", "id": 5}', deps=Desk()) as run:
            assert [node async for node in run] == []
            assert run.result is not None
            assert run.result.output.id == 5
        async with agent.run_stream_events('{"operation": "get", "id": 6}', deps=Desk()) as events:
            kinds = [type(event).__name__ async for event in events]
        assert kinds == ['AgentRunResultEvent']

    asyncio.run(scenario())


# --- catalogs ----------------------------------------------------------------------------------


class OddInput(BaseOperationInput):
    operation: Literal['store', 'peek']
    body: str | None = Field(default=None, description='The body.')
    blob: bytes = b'\xff\xfe'
    tags: set[str] = {'gamma', 'alpha', 'delta', 'beta', 'epsilon'}  # noqa: RUF012 (a pydantic default)


async def store(body: str, blob: bytes, tags: set[str]) -> int:
    return 1


async def peek(body: str | None = None) -> int:
    return 0


def _odd(examples: list[Any] | None = None) -> None:
    create_agentool(
        'odd',
        OddInput,
        RoutingConfig(operation_map={'store': 'store', 'peek': 'peek'}),
        [store, peek],
        examples=examples or [],
    )


@pytest.mark.filterwarnings('ignore::pydantic.json_schema.PydanticJsonSchemaWarning')
def test_a_default_or_example_of_bytes_that_are_not_text_does_not_break_the_catalog(
    registry: AgenToolRegistry,
) -> None:
    _odd(examples=[{'input': {'operation': 'peek'}, 'output': b'\xff'}])
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
from tests.test_audit2_dispatch import _odd
from agentool import get_registry
_odd()
fields = get_registry().export_catalog()['agentools'][0]['operations'][0]['fields']
print(json.dumps([f['default'] for f in fields if f['name'] == 'tags']))
"""


@pytest.mark.filterwarnings('ignore::pydantic.json_schema.PydanticJsonSchemaWarning')
def test_a_set_default_is_listed_in_the_same_order_by_every_process(registry: AgenToolRegistry) -> None:
    """Equal definitions give equal catalogs: a set default does not follow the process's hash seed."""
    outputs = {
        subprocess.run(
            [sys.executable, '-W', 'ignore', '-c', SET_DEFAULT],
            cwd=ROOT,
            env={**os.environ, 'PYTHONHASHSEED': seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ('1', '2', '3')
    }
    assert outputs == {'[["alpha", "beta", "delta", "epsilon", "gamma"]]\n'}
    _odd()
    schema = registry.export_catalog()['agentools'][0]['input_schema']
    field = registry.export_catalog()['agentools'][0]['operations'][0]['fields'][-1]
    assert field['default'] == schema['properties']['tags']['default']


@pytest.mark.filterwarnings('ignore::pydantic.json_schema.PydanticJsonSchemaWarning')
@pytest.mark.parametrize('openapi_version', ['3.0.0', '3.1.0'])
def test_the_openapi_operation_schema_refuses_null_where_the_operation_does(
    registry: AgenToolRegistry, openapi_version: Literal['3.0.0', '3.1.0']
) -> None:
    """`store` needs `body` (its tool takes a `str`): null is refused there, and the document says so."""
    _odd()
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


# --- the CLI -----------------------------------------------------------------------------------


CLI_MODULE = """
from typing import Literal
from agentool import BaseOperationInput, RoutingConfig, create_agentool

class In(BaseOperationInput):
    operation: Literal['add']
    a: float = 0

async def add(a: float) -> float:
    return a + 1

create_agentool('calc', In, RoutingConfig(operation_map={'add': 'add'}), [add])
"""


@pytest.mark.parametrize('fmt', ['json', 'mermaid'])
def test_catalog_title_with_a_format_that_has_none_is_a_usage_error(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused, not ignored (as `mcp` refuses HTTP options with stdio), and nothing is written."""
    monkeypatch.chdir(tmp_path)
    name = f'audit2_cli_{fmt}'
    (tmp_path / f'{name}.py').write_text(textwrap.dedent(CLI_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    status = main(['--import', name, 'catalog', '--format', fmt, '--title', 'Ours', '-o', 'out.txt'])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count('\n') == 1
    assert '--title' in err
    assert fmt in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [f'{name}.py']
    assert main(['--import', name, 'catalog', '--format', 'markdown', '--title', 'Ours']) == 0
    assert capsys.readouterr().out.startswith('# Ours\n')


class ChoiceInput(BaseOperationInput):
    operation: Literal['greet']
    who: str = Field(validation_alias=AliasChoices('name', 'user'))
    nick: str | None = Field(default=None, validation_alias=AliasChoices(AliasPath('n', 0), 'nickname'))


async def greet(who: str, nick: str | None = None) -> str:
    return f'hi {who}'


def test_a_field_with_alias_choices_is_listed_under_the_key_the_schema_gives_it(registry: AgenToolRegistry) -> None:
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
    assert asyncio.run(registry_call('greeter', {'operation': 'greet', 'name': 'ada'})) == 'hi ada'


async def registry_call(name: str, data: dict[str, Any]) -> Any:
    from agentool import get_injector

    return await get_injector().call(name, data)


def test_tool_metadata_is_built_by_keyword_as_the_coming_from_the_guide_page_says() -> None:
    from agentool.core.registry import ToolMetadata

    meta = ToolMetadata(name='read', description='Read.', is_async=True, parameters=['key'])
    assert (meta.parameter_types, meta.return_type) == ({}, None)
    with pytest.raises(TypeError):
        ToolMetadata('read')  # pyright: ignore[reportCallIssue]
    page = (ROOT / 'docs/guides/coming-from-the-guide.md').read_text()
    assert 'Works by keyword' in page


@pytest.mark.parametrize(
    'metadata',
    [
        {'agentool_dispatch': {}},
        {'agentool_dispatch': {'rule': 'x'}},
        {'agentool_dispatch': {'rule': 1, 'agentool': 'a', 'operation': 'o'}},
    ],
)
def test_dispatch_record_of_a_response_with_an_incomplete_record_is_none(metadata: dict[str, Any]) -> None:
    """A history loaded from storage may hold anything: reading it never raises a KeyError."""
    from agentool.dispatch import DISPATCH_PROVIDER, dispatch_record

    assert dispatch_record(ModelResponse(parts=[], provider_name=DISPATCH_PROVIDER, metadata=metadata)) is None


def test_dispatch_record_survives_a_history_saved_as_json() -> None:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from agentool.dispatch import DispatchRecord, dispatch_record

    _desk()
    agent = Agent(FunctionModel(_llm), deps_type=Desk, capabilities=[_json()])
    result = agent.run_sync('{"operation": "get"}', deps=Desk())
    saved = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
    assert [dispatch_record(m) for m in saved] == [
        None,
        DispatchRecord(rule='json:desk', agentool='desk', operation='get'),
    ]


def test_agents_built_per_request_do_not_grow_the_output_validator_cache_without_end() -> None:
    from agentool.dispatch import _answer  # pyright: ignore[reportPrivateUsage]

    _desk()
    for _ in range(300):  # a new list spec each time, as an agent built per request has
        agent = Agent(FunctionModel(_llm), deps_type=Desk, output_type=[Ticket, str], capabilities=[_json()])
        assert agent.run_sync('{"operation": "get"}', deps=Desk()).output == Ticket(id=1, status='open')
    assert len(_answer._ADAPTERS) <= 256  # pyright: ignore[reportPrivateUsage]


class DraftInput(BaseOperationInput):
    operation: Literal['draft']


def test_an_agentool_that_cannot_run_does_not_break_dispatch_to_the_others(registry: AgenToolRegistry) -> None:
    """Registered for its docs only (no tools), it is refused when a prompt picks it, and only then."""
    from agentool.core.registry import AgenToolConfig

    _desk()
    registry.register(
        'draft', AgenToolConfig(input_schema=DraftInput, routing_config=RoutingConfig(operation_map={'draft': 'nope'}))
    )
    agent = Agent(FunctionModel(_llm), deps_type=Desk, capabilities=[DispatchCapability([JsonRule()])])
    assert json.loads(agent.run_sync('{"operation": "get"}', deps=Desk()).output) == {'id': 1, 'status': 'open'}
    assert agent.run_sync('{"note": "no operation"}', deps=Desk()).output == 'from the model'
    with pytest.raises(ConfigurationError, match="'draft'"):
        agent.run_sync('{"operation": "draft"}', deps=Desk())


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


def test_an_operation_that_is_not_text_is_published_as_the_value_to_send() -> None:
    # Routes name operations by text; a client following the schema must send the number itself.
    with use_registry():
        create_agentool('ints', _IntOps, RoutingConfig(operation_map={'1': '_int_op', '2': '_int_op'}), [_int_op])
        create_agentool(
            'levels', _EnumOps, RoutingConfig(operation_map={'1': '_level_op', '2': '_level_op'}), [_level_op]
        )
        registry = get_registry()
        for name in ('ints', 'levels'):
            operations = registry.get_operations(name)
            assert operations is not None
            schema = operations['1']['request_schema']
            assert schema['properties']['operation'].items() >= {'const': 1, 'type': 'integer'}.items()
            _IntOps.model_validate({'operation': schema['properties']['operation']['const']})
        spec = openapi_spec(registry)
        assert '"const":"1"' not in json.dumps(spec, separators=(',', ':'))
