"""Names are names: control characters are refused where a name enters, every renderer escapes its
syntax, every catalog format spells a type one way, and a name that renders blank is refused."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from agentool import (
    AgenToolConfig,
    AgenToolRegistry,
    BaseOperationInput,
    ConfigurationError,
    Route,
    RoutingConfig,
    ToolMetadata,
    create_agentool,
    get_injector,
)
from agentool.catalog.markdown import code, escape
from agentool.cli import main
from tests.agentools import PingInput, ping


def make(name: str = 'pinger', operation: str = 'ping', dependencies: tuple[str, ...] = ()) -> None:
    routes = RoutingConfig(operation_map={operation: 'ping'})
    create_agentool(name, PingInput, routes, [ping], dependencies=list(dependencies))


# NUL, tab, LF, CR, ESC, DEL, NEL (C1), zero-width space, RTL override, BOM, line and paragraph separators
REFUSED = ['\x00', '\t', '\n', '\r', '\r\n', '\x1b', '\x7f', '\x85', '\u200b', '\u202e', '\ufeff', '\u2028', '\u2029']


@pytest.mark.parametrize('char', REFUSED)
def test_agentool_names_with_control_characters_are_refused(registry: AgenToolRegistry, char: str) -> None:
    with pytest.raises(ConfigurationError, match='must not contain control') as caught:
        make(f'a{char}b')
    assert caught.value.details['option'] == 'name'
    assert caught.value.details['character'] == f'U+{ord(char[0]):04X}'
    assert registry.list_names() == []


@pytest.mark.parametrize('char', REFUSED)
def test_operation_and_dependency_names_with_control_characters_are_refused(
    registry: AgenToolRegistry, char: str
) -> None:
    with pytest.raises(ConfigurationError, match='an operation name must not contain') as caught:
        make(operation=f'pi{char}ng')
    assert caught.value.details['option'] == 'operation_map'
    with pytest.raises(ConfigurationError, match='dependencies must not contain') as caught:
        make(dependencies=('storage', f'x{char}'))
    assert caught.value.details['option'] == 'dependencies'
    with pytest.raises(ConfigurationError, match=r'Route\(tool=...\) must not contain'):
        Route(tool=f'pi{char}ng')
    with pytest.raises(ConfigurationError, match='a tool name must not contain'):
        ToolMetadata(name=f'pi{char}ng')
    assert registry.list_names() == []


def test_every_door_a_name_enters_by_checks_it(registry: AgenToolRegistry) -> None:
    config = AgenToolConfig(input_schema=PingInput, routing_config=RoutingConfig(operation_map={'ping': 'ping'}))
    with pytest.raises(ConfigurationError, match='must not contain'):
        registry.register('a\nb', config)
    with pytest.raises(ConfigurationError, match='dependencies must not contain'):
        AgenToolConfig(input_schema=PingInput, routing_config=RoutingConfig(), dependencies=['a\x00'])
    with pytest.raises(ConfigurationError, match='must not contain'):
        get_injector().register('a\x00b', object())  # pyright: ignore[reportArgumentType]


def test_a_refused_name_is_quoted_within_bounds(registry: AgenToolRegistry) -> None:
    with pytest.raises(ConfigurationError) as caught:
        make('x' * 1_000_000 + '\x00')
    assert len(str(caught.value)) < 300
    assert '1,000,001 characters' in str(caught.value)


def test_printable_names_stay_allowed(registry: AgenToolRegistry) -> None:
    for name in ('a b', 'notes-2', 'ünïcödé', '日本語', 'x%%{init}%%', 'emoji 🙂'):
        make(name)
    assert len(registry.list_names()) == 6


def test_markdown_shows_control_characters_in_text_as_escapes() -> None:
    # Descriptions and docstrings are not names: their whitespace folds, the rest is shown, never raw.
    assert escape('a\x00b\u202ec\nd') == 'a\\\\x00b\\\\u202ec d'
    assert code('x\x1by') == '`x\\x1by`'


def test_markdown_json_blocks_escape_invisible_characters(registry: AgenToolRegistry) -> None:
    routes = RoutingConfig(operation_map={'ping': 'ping'})
    example = {'input': {'operation': 'ping'}, 'output': 'a\u202eb\x7fc\u2028'}
    create_agentool('pinger', PingInput, routes, [ping], examples=[example])
    docs = registry.generate_markdown_docs()
    assert '```json\n"a\\u202eb\\u007fc\\u2028"\n```' in docs
    assert all(char == '\n' or char.isprintable() for char in docs)


# --- one name per type -------------------------------------------------------------------------


class Note(BaseModel):
    text: str


class NoteInput(BaseOperationInput):
    operation: Literal['get', 'find']
    key: str | None = None
    hint: str | None


def get(key: str) -> Note | None:
    """Read a note."""
    return None


def find(hint: str | None) -> list[Note]:
    """Find notes."""
    return []


def make_notes() -> None:
    routes = RoutingConfig(operation_map={'get': 'get', 'find': 'find'})
    create_agentool('notes', NoteInput, routes, [get, find], output_type=Any)


def test_markdown_names_a_type_one_way(registry: AgenToolRegistry) -> None:
    make_notes()
    docs = registry.generate_markdown_docs()
    assert '**Tool:** `get` (returns `Note | None`)' in docs
    assert '- Returns: `Note | None`' in docs  # under Tools: the same spelling, not `tests.test_names.Note`
    assert 'test_names.' not in docs


def test_every_catalog_format_names_a_type_one_way(registry: AgenToolRegistry) -> None:
    make_notes()
    (entry,) = registry.export_catalog()['agentools']
    tools = {tool['name']: tool for tool in entry['tools']}
    operations = {operation['name']: operation for operation in entry['operations']}
    assert tools['get']['return_type'] == operations['get']['returns'] == 'Note | None'
    assert tools['find']['return_type'] == operations['find']['returns'] == 'list[Note]'
    assert tools['find']['parameter_types'] == {'hint': 'str | None'}
    assert 'test_names.' not in json.dumps(registry.export_catalog())


def test_field_wording_cannot_read_as_a_contradiction(registry: AgenToolRegistry) -> None:
    make_notes()
    docs = registry.generate_markdown_docs()
    # `get(key: str)` needs a value: typed as the operation takes it.
    assert '- `key` (`str`, required): ' in docs or '- `key` (`str`, required)\n' in docs + '\n'
    # `hint` is required by the schema and takes null: said so, not "`str | None`, required".
    assert '- `hint` (`str | None`, required, may be null)' in docs
    assert '`str | None`, required)' not in docs


class FreeInput(BaseOperationInput):
    operation: str


def test_openapi_paths_percent_encode_names_that_hold_path_syntax(registry: AgenToolRegistry) -> None:
    create_agentool('a/{b}?#%', FreeInput, RoutingConfig(operation_map={'go/{x}': 'ping'}), [ping])
    spec = registry.generate_api_spec()
    assert sorted(spec['paths']) == ['/agentools/a%2F%7Bb%7D%3F%23%25', '/agentools/a%2F%7Bb%7D%3F%23%25/go%2F%7Bx%7D']
    operation = spec['paths']['/agentools/a%2F%7Bb%7D%3F%23%25/go%2F%7Bx%7D']['post']
    assert operation['x-agentool'] == {**operation['x-agentool'], 'agentool': 'a/{b}?#%', 'operation': 'go/{x}'}


def test_cli_show_words_fields_as_the_catalog_does(
    registry: AgenToolRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    make_notes()
    assert main(['show', 'notes']) == 0
    shown = capsys.readouterr().out
    assert '      key (str, required)' in shown
    assert '      hint (str | None, required, may be null)' in shown


BLANK = ['\u3164', '\u2800', '\u0301', '\u115f\u1160', ' \uffa0 ', '\u034f', '\U000f0000']


@pytest.mark.parametrize('name', BLANK)
@pytest.mark.parametrize('option', ['name', 'tool'])
def test_an_agentool_or_tool_name_that_renders_blank_is_refused(option: str, name: str) -> None:
    with pytest.raises(ConfigurationError, match='must contain a visible character') as raised:
        make(name) if option == 'name' else Route(tool=name)
    assert option == 'tool' or raised.value.details['option'] == 'name'


@pytest.mark.parametrize('name', ['ping', 'café', '名前', 'e\u0301t\u00e9', 'x\u3164y', '\u2800a'])
def test_a_name_with_something_to_see_is_accepted(name: str) -> None:
    agent = create_agentool(name, PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping])
    assert agent.name == name
