"""The rest of the architecture guide's public surface: JSON helpers, sync deps, model names, tool metadata."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import Agent, RunContext

import agentool
from agentool import (
    MANAGER_TOOL_NAME,
    AgenToolCapability,
    AgenToolConfig,
    AgenToolManager,
    AgenToolModel,
    AgenToolRegistry,
    BaseOperationInput,
    DepsUnavailableError,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    NotAnObjectError,
    RoutingConfig,
    UnknownOperationError,
    create_agentool,
    extract_tool_metadata,
    model_strings,
    register_agentool_models,
)
from agentool.core.injector import (
    AgenToolInjector,
    serialize_to_json_string,
    validate_json_string,
)


class Point(BaseModel):
    x: int
    label: str = Field(alias='name')


class Ratio(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan='constants')  # writes `NaN`, which is not JSON

    r: float


@pytest.mark.parametrize(
    ('value', 'expected'),
    [
        ('{"operation": "get"}', '{"operation": "get"}'),  # already JSON: unchanged
        ('[1, 2]', '[1, 2]'),
        ('hello world', '"hello world"'),  # not JSON: a JSON string
        ({'a': [1, (2, 3)]}, '{"a": [1, [2, 3]]}'),  # json.dumps text, as in the guide
        ([1, 'x'], '[1, "x"]'),
        ((1, 2), '[1, 2]'),
        (Point(x=1, name='p'), '{"x":1,"name":"p"}'),
        (42, '42'),
        (1.5, '1.5'),
        (True, 'true'),
        (None, 'null'),
        (datetime(2024, 5, 1, 12, 30, tzinfo=UTC), '"2024-05-01T12:30:00+00:00"'),
        (date(2024, 5, 1), '"2024-05-01"'),
        (time(8, 15), '"08:15:00"'),
        (Decimal('1.10'), '"1.10"'),
        ({'price': Decimal('0.1'), 'at': date(2024, 1, 2)}, '{"price": "0.1", "at": "2024-01-02"}'),
        ({'point': Point(x=1, name='p')}, '{"point": {"x": 1, "name": "p"}}'),
    ],
)
def test_serialize_to_json_string(value: Any, expected: str) -> None:
    text = serialize_to_json_string(value)
    assert text == expected
    assert validate_json_string(text)


def test_serialize_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(InvalidInputError, match='Cannot serialize a value of type object') as caught:
        serialize_to_json_string(object())
    assert isinstance(caught.value, ValueError)  # the guide documents ValueError
    assert caught.value.details == {'python_type': 'object', 'reason': 'not_serialisable'}


@pytest.mark.parametrize(
    ('value', 'python_type'),
    [
        (float('nan'), 'float'),
        ({'x': float('inf')}, 'dict'),
        ([1.0, float('-inf')], 'list'),
        (Ratio(r=float('nan')), 'Ratio'),
    ],
)
def test_serialize_refuses_numbers_json_has_not(value: Any, python_type: str) -> None:
    with pytest.raises(
        InvalidInputError, match=f'type {python_type} to JSON: it holds an infinite or NaN number'
    ) as caught:
        serialize_to_json_string(value)
    assert caught.value.details == {'python_type': python_type, 'reason': 'non_finite_number'}


def test_serialize_writes_a_models_non_finite_number_as_the_model_does() -> None:
    class Plain(BaseModel):
        r: float

    assert serialize_to_json_string(Plain(r=float('nan'))) == '{"r":null}'  # pydantic's default: valid JSON


@pytest.mark.parametrize(
    ('text', 'valid'),
    [
        ('{}', True),
        ('"x"', True),
        ('1', True),
        ('1e999', True),  # a JSON number, however large
        ('{', False),
        ('', False),
        ('x', False),
        ('NaN', False),
        ('Infinity', False),
        ('-Infinity', False),
        ('{"x": NaN}', False),
    ],
)
def test_validate_json_string(text: str, valid: bool) -> None:
    assert validate_json_string(text) is valid


def test_a_string_that_is_not_json_is_quoted() -> None:
    assert serialize_to_json_string('NaN') == '"NaN"'


def test_register_agentool_models_is_idempotent() -> None:
    assert agentool.model_strings.is_installed()
    register_agentool_models()
    register_agentool_models()
    assert agentool.model_strings.is_installed()
    assert isinstance(Agent('agentool:anything').model, AgenToolModel)


def test_model_name() -> None:
    model = AgenToolModel('storage')
    assert model.name == 'storage' == model.model_name


async def tool_with_docs(ctx: RunContext[Any], name: str, count: int = 5) -> dict[str, Any]:
    """Process name and count data.

    This is a multi-line docstring.
    """
    return {'name': name, 'count': count}


def untyped(ctx, data):  # type: ignore[no-untyped-def]
    return data


def test_tool_metadata_fields() -> None:
    meta = extract_tool_metadata(tool_with_docs)
    assert meta.name == 'tool_with_docs'
    assert meta.description == 'Process name and count data.'
    assert meta.docstring == 'Process name and count data.\n\nThis is a multi-line docstring.'
    assert meta.is_async is True
    assert meta.parameters == ['name', 'count']
    assert meta.parameter_types == {'name': 'str', 'count': 'int'}
    assert meta.return_type == 'dict[str, Any]'
    plain = extract_tool_metadata(untyped)  # pyright: ignore[reportUnknownArgumentType]
    assert (plain.is_async, plain.parameters, plain.parameter_types, plain.return_type) == (False, ['data'], {}, None)


def test_unresolvable_return_annotation_is_unquoted() -> None:
    def later() -> NotDefinedAnywhere:  # type: ignore[name-defined]  # noqa: F821
        raise NotImplementedError

    assert extract_tool_metadata(later).return_type == 'NotDefinedAnywhere'


# --- create_deps, synchronous as the guide calls it ----------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


@dataclass
class TimedDeps:
    clock: Clock


class TimeInput(BaseOperationInput):
    operation: Literal['now']


async def now(ctx: RunContext[TimedDeps]) -> str:
    return type(ctx.deps.clock).__name__


def create_timed(injector: AgenToolInjector, clock: Any) -> None:
    create_agentool('timed', TimeInput, RoutingConfig(operation_map={'now': 'now'}), [now], deps_type=TimedDeps)
    injector.provide(Clock, clock)


async def slow_clock() -> Clock:
    await asyncio.sleep(0.001)
    return Clock()


def test_create_deps_is_synchronous(injector: AgenToolInjector) -> None:
    create_timed(injector, Clock)
    deps = injector.create_deps('timed')
    assert isinstance(deps, TimedDeps)
    assert isinstance(deps.clock, Clock)


async def test_create_deps_inside_a_running_loop_and_with_async_factories(injector: AgenToolInjector) -> None:
    async def make_clock() -> Clock:
        return Clock()  # an async factory that never waits still builds synchronously

    create_timed(injector, make_clock)
    assert isinstance(injector.create_deps('timed').clock, Clock)
    assert isinstance((await injector.acreate_deps('timed')).clock, Clock)


async def test_create_deps_names_the_async_form_when_a_factory_waits(injector: AgenToolInjector) -> None:
    create_timed(injector, slow_clock)
    with pytest.raises(DepsUnavailableError, match=r"use `await injector.acreate_deps\('timed'\)`"):
        injector.create_deps('timed')
    assert isinstance((await injector.acreate_deps('timed')).clock, Clock)


def test_create_deps_without_a_loop_when_a_factory_waits(injector: AgenToolInjector) -> None:
    create_timed(injector, slow_clock)
    with pytest.raises(DepsUnavailableError) as caught:
        injector.create_deps('timed')
    assert caught.value.details == {'agentool': 'timed'}
    assert json.dumps(caught.value.details)


def test_the_guides_component_names_import_from_agentool_core() -> None:
    from agentool import core

    names = ['AgenToolRegistry', 'AgenToolManager', 'AgenToolModel', 'AgenToolConfig', 'RoutingConfig', 'ToolMetadata']
    assert [getattr(core, name) for name in names] == [getattr(agentool, name) for name in names]


class StorageInput(BaseOperationInput):
    operation: Literal['read', 'write']
    key: str
    data: str | None = None


async def storage_read(ctx: RunContext[Any], key: str) -> str:
    return f'read {key}'


async def storage_write(ctx: RunContext[Any], key: str, data: str) -> str:
    return f'wrote {key}={data}'


def hand_assembled() -> Agent[None, str]:
    routing = RoutingConfig(
        operation_field='operation',
        operation_map={
            'read': ('storage_read', lambda x: {'key': x.key}),
            'write': ('storage_write', lambda x: {'key': x.key, 'data': x.data}),
        },
    )
    config = AgenToolConfig(input_schema=StorageInput, routing_config=routing)
    AgenToolRegistry.register('storage', config)
    manager = AgenToolManager('storage', config, [storage_read, storage_write])
    agent = Agent(model=AgenToolModel('storage'), output_type=str)
    agent.tool(name=MANAGER_TOOL_NAME)(manager)
    return agent


def test_hand_assembled_agent_runs_and_raises_the_documented_errors() -> None:
    agent = hand_assembled()
    assert agent.run_sync('{"operation": "write", "key": "k", "data": "v"}').output == 'wrote k=v'
    with pytest.raises(InvalidJSONError) as bad_json:
        agent.run_sync('{')
    assert bad_json.value.details['position'] == 1  # the routing page: "details has the position"
    with pytest.raises(NotAnObjectError):
        agent.run_sync('[1]')
    with pytest.raises(UnknownOperationError) as unknown:
        agent.run_sync('{"operation": "drop", "key": "k"}')
    assert unknown.value.details['known'] == ['read', 'write']
    with pytest.raises(InputValidationError) as invalid:
        agent.run_sync('{"operation": "read"}')
    assert invalid.value.details['operation'] == 'read'
    assert [e['loc'] for e in invalid.value.errors] == [['key']]


def test_the_explicit_capability_form_patches_nothing_and_carries_deps() -> None:
    class DepsInput(BaseOperationInput):
        operation: Literal['get']

    async def get(ctx: RunContext[dict[str, str]]) -> str:
        return ctx.deps['k']

    create_agentool('depsy', DepsInput, RoutingConfig(operation_map={'get': 'get'}), [get], deps_type=dict)
    model_strings.uninstall()
    try:
        assert not model_strings.is_installed()
        agent = Agent('agentool:depsy', capabilities=[AgenToolCapability('depsy')], deps_type=dict, output_type=str)
        assert agent.run_sync('{"operation": "get"}', deps={'k': 'v'}).output == 'v'
    finally:
        model_strings.install()
    with pytest.raises(DepsUnavailableError, match='cannot receive deps'):
        Agent('agentool:depsy', deps_type=dict).run_sync('{"operation": "get"}', deps={'k': 'v'})
