"""A tool parameter no input field fills (it only ever gets its default) is reported, not silent.

It is a warning, not an error: the agentool runs (a default can be meant), but `validate_config`
and `agentool show` list it, with the field it probably meant.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from typing import Literal

import pytest

from agentool import (
    AgenToolConfig,
    AgenToolRegistry,
    BaseOperationInput,
    ConfigProblem,
    ConfigurationError,
    RoutingConfig,
    create_agentool,
    use_registry,
)
from agentool.cli import main
from agentool.toolset import AgenToolToolset
from tests.agentools import CalcInput


class NoteInput(BaseOperationInput):
    operation: Literal['get', 'delete']
    note_id: int = 0


async def get(note_id: int) -> str:
    return f'note {note_id}'


async def delete(id: int = 0) -> str:
    return f'deleted {id}'


ROUTES = RoutingConfig(operation_map={'get': 'get', 'delete': 'delete'})


@pytest.fixture(autouse=True)
def registry() -> Iterator[AgenToolRegistry]:
    with use_registry() as fresh:
        yield fresh


def test_a_parameter_only_its_default_fills_is_a_warning_naming_the_field_it_probably_meant(
    registry: AgenToolRegistry,
) -> None:
    agent = create_agentool('notes', NoteInput, ROUTES, [get, delete])  # created: it runs
    (problem,) = registry.validate_config('notes')
    assert problem == ConfigProblem(
        kind='unfillable_default',
        severity='warning',
        message="operation 'delete' has no transform, and no field of NoteInput fills parameter 'id' of tool "
        "'delete': every call passes its default 0; did you mean field 'note_id'? Rename one of them, or give "
        'the route a transform',
        operation='delete',
        tool='delete',
        parameter='id',
        field='note_id',
    )
    assert problem.as_dict()['severity'] == 'warning'
    assert registry.validate_config('notes', include_warnings=False) == []
    assert agent.run_sync('{"operation": "delete"}').output == 'deleted 0'
    # a warning does not keep it from the surfaces that expose runnable agentools only
    assert [op.name for op in AgenToolToolset(registry=registry).operations] == ['notes_get', 'notes_delete']


def test_an_unregistered_configuration_is_checked_the_same_way(registry: AgenToolRegistry) -> None:
    config = AgenToolConfig(input_schema=NoteInput, routing_config=ROUTES, tools=(get, delete))
    assert [p.kind for p in registry.validate_config(config)] == ['unfillable_default']
    assert registry.validate_config(config, include_warnings=False) == []


def test_errors_come_before_warnings_and_keep_their_severity(registry: AgenToolRegistry) -> None:
    routes = RoutingConfig(operation_map={'get': 'missing', 'delete': 'delete'})
    registry.register('described', AgenToolConfig(input_schema=NoteInput, routing_config=routes, tools=(delete,)))
    problems = registry.validate_config('described')
    assert [(p.kind, p.severity) for p in problems] == [('missing_tool', 'error'), ('unfillable_default', 'warning')]
    assert [p.kind for p in registry.validate_config('described', include_warnings=False)] == ['missing_tool']


class ItemInput(BaseOperationInput):
    operation: Literal['go']
    user_id: str = ''
    item_id: str = ''


@pytest.mark.parametrize(
    ('parameter', 'meant'),
    [
        ('user_ids', 'user_id'),  # a close spelling
        ('user', 'user_id'),
        ('id', None),  # shares a word with two fields: no guess
        ('colour', None),
    ],
)
def test_the_field_it_probably_meant(registry: AgenToolRegistry, parameter: str, meant: str | None) -> None:
    def go(**extra: str) -> str:
        return ''

    # the tool's one parameter is called `parameter`, with a default; no field fills it
    go.__signature__ = inspect.Signature([inspect.Parameter(parameter, inspect.Parameter.KEYWORD_ONLY, default='')])  # type: ignore[attr-defined]
    create_agentool('items', ItemInput, RoutingConfig(operation_map={'go': 'go'}), [go])
    (problem,) = registry.validate_config('items')
    assert (problem.parameter, problem.field) == (parameter, meant)
    assert ('did you mean' in problem.message) is (meant is not None)
    assert (f'add a field {parameter!r}' in problem.message) is (meant is None)


def test_not_reported_when_a_field_a_transform_or_a_partial_fills_it(registry: AgenToolRegistry) -> None:
    transform = RoutingConfig(operation_map={'get': 'get', 'delete': ('delete', lambda x: {'id': x.note_id})})
    create_agentool('by_transform', NoteInput, transform, [get, delete])
    create_agentool('by_partial', NoteInput, ROUTES, [get, functools.partial(delete, id=3)])

    async def by_field(note_id: int = 0) -> str:
        return str(note_id)

    routes = RoutingConfig(operation_map={'get': 'by_field', 'delete': 'by_field'})
    create_agentool('by_field', NoteInput, routes, [by_field])
    assert [registry.validate_config(name) for name in ('by_transform', 'by_partial', 'by_field')] == [[], [], []]


def test_show_lists_the_warning(capsys: pytest.CaptureFixture[str]) -> None:
    create_agentool('notes', NoteInput, ROUTES, [get, delete])
    assert main(['show', 'notes']) == 0
    out = capsys.readouterr().out
    problems = out[out.index('  problems:\n') :].splitlines()
    assert problems[1].startswith("    warning: operation 'delete' has no transform, and no field of NoteInput")
    assert "did you mean field 'note_id'?" in problems[1]


def test_show_lists_no_problems_for_a_clean_agentool(capsys: pytest.CaptureFixture[str]) -> None:
    create_agentool('notes', NoteInput, RoutingConfig(operation_map={'get': 'get', 'delete': 'get'}), [get])
    assert main(['show', 'notes']) == 0
    assert 'problems:' not in capsys.readouterr().out


def test_create_agentool_names_a_required_parameter_no_field_fills() -> None:
    async def power(a: float, exponent: float) -> float:
        return a**exponent

    with pytest.raises(ConfigurationError) as caught:
        create_agentool('calc', CalcInput, RoutingConfig(operation_map={'add': 'power', 'div': 'power'}), [power])
    problems = caught.value.details['problems']
    assert {(problem['kind'], problem['parameter']) for problem in problems} == {('unfillable_parameter', 'exponent')}
