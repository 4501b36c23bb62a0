"""The one selection rule every exposing surface uses: exclude wins, include is an allowlist, else the default."""

from __future__ import annotations

import re
from typing import Any, Literal

import pytest
from pydantic import Field

from agentool import BaseOperationInput, Route, RoutingConfig, create_agentool
from agentool.errors import ConfigurationError, InvalidToolNameError, SelectorError, ToolNameConflictError
from agentool.filters import TOOL_NAME_PATTERN, is_exposed, select_operations


class Input(BaseOperationInput):
    operation: Literal['read', 'write', 'purge', 'old'] = Field(description='What to do.')


def read() -> str:
    return 'r'


def write() -> str:
    return 'w'


def purge() -> str:
    return 'p'


def old() -> str:
    return 'o'


def make(name: str, *, tags: list[str] | None = None) -> None:
    create_agentool(
        name=name,
        input_schema=Input,
        routing_config=RoutingConfig(
            operation_map={
                'read': Route(tool='read', read_only=True, tags=('safe',)),
                'write': 'write',
                'purge': Route(tool='purge', destructive=True),
                'old': Route(tool='old', deprecated=True),
            }
        ),
        tools=[read, write, purge, old],
        tags=tags,
    )


def names(**kwargs: object) -> list[str]:
    return [f'{op.agentool}.{op.operation}' for op in select_operations(**kwargs)]  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ('include', 'exclude', 'deprecated', 'expected'),
    [
        (None, (), False, True),  # default: exposed
        (None, (), True, False),  # default: deprecated is not
        (['kv'], (), True, True),  # include is an allowlist, whatever the default
        (['other'], (), False, False),  # not on the allowlist
        (['kv'], ['kv.read'], False, False),  # exclude wins over include
        (['kv.read'], ['kv'], False, False),  # ... however specific the include
        (None, ['tag:safe'], False, False),
        (['tag:safe'], (), True, True),
    ],
)
def test_the_rule(include: list[str] | None, exclude: list[str], deprecated: bool, expected: bool) -> None:
    route = Route(tool='read', tags=('safe',), deprecated=deprecated)
    assert is_exposed('kv', 'read', route, include=include, exclude=exclude) is expected


def test_default_exposes_everything_but_deprecated_in_a_stable_order() -> None:
    make('b')
    make('a')
    assert names() == ['a.read', 'a.write', 'a.purge', 'b.read', 'b.write', 'b.purge']


def test_selectors_by_name_operation_tag_and_wildcard() -> None:
    make('kv', tags=['storage'])
    make('cache')
    assert names(include='kv') == ['kv.read', 'kv.write', 'kv.purge', 'kv.old']  # a str is one selector
    assert names(include=['cache.read', 'kv.old']) == ['cache.read', 'kv.old']
    assert names(include=['tag:safe']) == ['cache.read', 'kv.read']  # route tag
    assert names(include=['tag:storage'], exclude=['kv.old']) == ['kv.read', 'kv.write', 'kv.purge']  # agentool tag
    assert names(exclude=['*.purge', 'c*']) == ['kv.read', 'kv.write']
    assert names(include=['tag:sa*']) == ['cache.read', 'kv.read']
    assert names(include=['*.nothing-matches', 'tag:nothing-*']) == []  # a wildcard may match nothing


@pytest.mark.parametrize('option', ['include', 'exclude'])
def test_a_selector_that_matches_nothing_is_an_error_with_suggestions(option: str) -> None:
    make('storage')
    with pytest.raises(SelectorError, match=r"selector 'storgae' matches no .*did you mean 'storage'") as caught:
        select_operations(**{option: ['storgae']})  # pyright: ignore[reportArgumentType]
    assert (caught.value.details['selector'], caught.value.details['option']) == ('storgae', option)
    assert caught.value.details['suggestions'][0] == 'storage'
    with pytest.raises(SelectorError, match=r"'storage\.raed'"):
        select_operations(**{option: ['storage.raed']})  # pyright: ignore[reportArgumentType]
    with pytest.raises(SelectorError, match=r"'tag:sfe'.*did you mean 'tag:safe'"):
        select_operations(**{option: ['tag:sfe']})  # pyright: ignore[reportArgumentType]


def test_tool_names_that_collide_are_an_error_not_shadowing() -> None:
    make('kv_read')  # 'kv_read' + '_' + 'write'

    class Other(BaseOperationInput):
        operation: Literal['read_write']

    create_agentool(  # 'kv' + '_' + 'read_write'
        name='kv', input_schema=Other, routing_config=RoutingConfig(operation_map={'read_write': 'read'}), tools=[read]
    )
    with pytest.raises(ToolNameConflictError, match="tool name 'kv_read_write' would expose both") as caught:
        select_operations()
    assert isinstance(caught.value, ConfigurationError)
    assert caught.value.details['operations'] == ['kv.read_write', 'kv_read.write']
    assert len(select_operations(separator='-')) == 4  # another separator resolves it
    assert len(select_operations(exclude=['kv'])) == 3  # and so does leaving one out


def test_prefix_and_separator() -> None:
    make('kv')
    assert [op.name for op in select_operations(include=['kv.read'], prefix='x_', separator='-')] == ['x_kv-read']


@pytest.mark.parametrize(
    ('options', 'option'),
    [({'include': 5}, 'include'), ({'exclude': [None]}, 'exclude'), ({'registry': 'reg'}, 'registry')],
)
def test_options_of_the_wrong_type_are_a_configuration_error(options: dict[str, object], option: str) -> None:
    make('kv')
    with pytest.raises(ConfigurationError, match=option) as caught:
        select_operations(**options)  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == option
    with pytest.raises(ConfigurationError, match='include'):
        is_exposed('kv', 'read', Route(tool='read'), include=[3])  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ('prefix', 'separator', 'tool_name'),
    [
        ('my tool ', '_', 'my tool kv_read'),
        ('', '.', 'kv.read'),
        ('', '/', 'kv/read'),
        ('x' * 58, '_', 'x' * 58 + 'kv_read'),  # 65 characters
    ],
)
def test_a_tool_name_outside_the_shared_rule_is_refused_naming_it(prefix: str, separator: str, tool_name: str) -> None:
    make('kv')
    with pytest.raises(InvalidToolNameError, match=re.escape(f'tool name {tool_name!r}')) as caught:
        select_operations(include=['kv.read'], prefix=prefix, separator=separator)
    assert isinstance(caught.value, ConfigurationError)
    assert caught.value.details['tool_name'] == tool_name
    assert caught.value.details['rule'] == TOOL_NAME_PATTERN == '^[a-zA-Z0-9_-]{1,64}$'
    assert TOOL_NAME_PATTERN in str(caught.value)


def test_an_agentool_name_outside_the_rule_can_be_left_out() -> None:
    make('kv')
    make('my.kv')
    with pytest.raises(InvalidToolNameError, match=re.escape("tool name 'my.kv_read'")):
        select_operations()
    assert {op.agentool for op in select_operations(exclude=['my.kv'])} == {'kv'}
    assert [op.name for op in select_operations(include=['kv.read'], prefix='x' * 58, separator='')] == [
        'x' * 58 + 'kvread'  # 64 characters: the longest allowed
    ]


@pytest.mark.parametrize(
    ('arguments', 'options', 'option'),
    [
        (('notes', 'get', Route(tool='get')), {'tags': 'ab', 'include': 'tag:a'}, 'tags'),  # not tags 'a' and 'b'
        (('notes', 'get', Route(tool='get')), {'tags': 3}, 'tags'),
        ((3, 'get', Route(tool='get')), {'include': 'n*'}, 'agentool'),
        (('notes', None, Route(tool='get')), {'include': 'notes.*'}, 'operation'),
        (('notes', 'get', 'get'), {}, 'route'),
    ],
)
def test_is_exposed_refuses_arguments_of_the_wrong_type(
    arguments: tuple[Any, ...], options: dict[str, Any], option: str
) -> None:
    # Before the fix: a lone string of tags was read as its characters (exposed by 'tag:a'), and the
    # others failed with TypeError or AttributeError.
    with pytest.raises(ConfigurationError) as caught:
        is_exposed(*arguments, **options)
    assert caught.value.details['option'] == option


def test_is_exposed_follows_the_documented_rule() -> None:
    old = Route(tool='get', deprecated=True, tags=('reader',))
    assert not is_exposed('notes', 'old_get', old)  # deprecated: not by default
    assert is_exposed('notes', 'old_get', old, include=['notes.old_get'])  # an allowlist, deprecated included
    assert is_exposed('notes', 'old_get', old, include='tag:read*')
    assert not is_exposed('notes', 'old_get', old, include='notes', exclude='*.old_*')  # exclude wins
    assert is_exposed('notes', 'get', Route(tool='get'), tags=['admin'], include='tag:admin')  # the agentool's tags
