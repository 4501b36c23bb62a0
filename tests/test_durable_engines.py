"""Durable agentools on Temporal and Prefect, as far as they can be checked without their servers.

Pinned: each engine's persisted name of the agentool operation. Round-tripped: its parameters and results
through each engine's serializer, and back through `typed_result` to the agentool's typed output.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, Literal, cast

import pytest
from pydantic import BaseModel, create_model
from pydantic_ai.durable_exec import CapabilityOperationId
from pydantic_ai.usage import RunUsage
from pydantic_core import to_jsonable_python

from agentool import RoutingConfig, create_agentool, get_registry
from agentool.core.manager import AgenToolManager
from agentool.durable import CAPABILITY_ID, OPERATION_NAME, AgenToolDurability, typed_result

OPERATION = CapabilityOperationId(CAPABILITY_ID, operation=OPERATION_NAME)


class Item(BaseModel):
    key: str
    tags: list[str]


class FindInput(BaseModel):
    operation: Literal['find']
    key: str
    filters: dict[str, str] = {}


async def find(key: str, filters: dict[str, str]) -> Item:
    return Item(key=key, tags=sorted(filters.values()))


async def list_items(key: str) -> list[Item]:
    return [Item(key=key, tags=[]), Item(key=f'{key}2', tags=['b'])]


async def count(key: str) -> dict[str, int]:
    return {key: 2}


async def forget(key: str) -> Item | None:
    return None


INPUT = {'operation': 'find', 'key': 'k', 'filters': {'colour': 'teal', 'size': 'xl'}}
"""A dict input: the operation parameters carry it as the JSON text the dispatcher made of it."""

RESULTS: list[tuple[str, Any]] = [
    ('find', Item(key='k', tags=['teal', 'xl'])),
    ('list', [Item(key='k', tags=[]), Item(key='k2', tags=['b'])]),
    ('count', {'k': 2}),
    ('forget', None),
]
"""Each operation of the `items` agentool with its typed result: a model, a list, a dict and None."""


def _create(name: str, capabilities: list[Any]) -> Any:
    return create_agentool(
        name=name,
        input_schema=FindInput,
        routing_config=RoutingConfig(operation_map={'find': 'find'}),
        tools=[find],
        output_type=Item,
        capabilities=capabilities,
        replace=True,
    )


def _managers() -> dict[str, AgenToolManager]:
    """One agentool per result type (an agentool has one), all taking `FindInput`."""
    tools: dict[str, tuple[Any, Callable[..., Any]]] = {
        'find': (Item, find),
        'list': (list[Item], list_items),
        'count': (dict[str, int], count),
        'forget': (Item | None, forget),
    }
    managers: dict[str, AgenToolManager] = {}
    for operation, (output_type, tool) in tools.items():
        name = f'items_{operation}'
        only: Any = cast(Any, Literal)[operation]
        create_agentool(
            name=name,
            input_schema=create_model(f'{operation.title()}Input', __base__=FindInput, operation=only),
            routing_config=RoutingConfig(operation_map={operation: tool.__name__}),
            tools=[tool],
            output_type=output_type,
            replace=True,
        )
        managers[operation] = get_registry().get_manager(name)
    return managers


def _arguments() -> dict[str, Any]:
    manager = _managers()['find']
    data = manager.validate_python(INPUT).model_dump_json(by_alias=True, exclude_unset=True)
    return {'agentool': 'items_find', 'operation': 'find', 'input': data, 'via': 'tool', 'retries': 0}


def _check_typed(operation: str, journaled: Any, expected: Any) -> None:
    manager = _managers()[operation]
    input = manager.validate_python({**INPUT, 'operation': operation})
    assert typed_result(manager, input, journaled) == expected
    if expected is not None:
        assert type(typed_result(manager, input, journaled)) is type(expected)


class TestTemporal:
    temporal = pytest.importorskip('pydantic_ai.durable_exec.temporal', exc_type=ImportError)

    def test_the_activity_name_is_pinned(self) -> None:
        # Persisted compatibility data: Temporal histories refer to activities by this name.
        namer = self.temporal.TemporalOperationNamer('pipeline')
        assert namer.operation_name(OPERATION) == 'agent__pipeline__capability__agentool__operation'

    def _operation_activity(self) -> Callable[..., Any]:
        """The activity `TemporalDurability` registers for the agentool operation (and only for it)."""
        durability = self.temporal.TemporalDurability
        with_operation = durability.from_agent(_create('temporal_items', [AgenToolDurability(), durability()]))
        without = durability.from_agent(_create('temporal_plain', [durability()]))
        plain = {typing.get_type_hints(a)['return'] for a in without.temporal_activities}
        added = [a for a in with_operation.temporal_activities if typing.get_type_hints(a)['return'] not in plain]
        assert len(with_operation.temporal_activities) == len(without.temporal_activities) + 1
        assert len(added) == 1
        return added[0]

    def test_the_parameters_survive_the_payload_converter(self) -> None:
        params_type = typing.get_type_hints(self._operation_activity())['params']
        arguments = _arguments()
        converter = self.temporal.PydanticAIPayloadConverter()
        wire = {'arguments': arguments, 'serialized_run_context': {'run_id': 'r'}, 'model_id': None}
        (loaded,) = converter.from_payloads(converter.to_payloads([wire]), [params_type])
        assert type(loaded) is params_type
        assert loaded.arguments == arguments
        manager = _managers()['find']
        assert manager.validate_json(loaded.arguments['input']) == manager.validate_python(INPUT)

    @pytest.mark.parametrize(('operation', 'result'), RESULTS, ids=[operation for operation, _ in RESULTS])
    def test_results_survive_the_payload_converter_as_typed_values(self, operation: str, result: Any) -> None:
        result_type = typing.get_type_hints(self._operation_activity())['return']
        converter = self.temporal.PydanticAIPayloadConverter()
        sent = result_type(value=result, usage_delta=RunUsage(tool_calls=1))
        (received,) = converter.from_payloads(converter.to_payloads([sent]), [result_type])
        assert received.usage_delta == RunUsage(tool_calls=1)
        # The operation returns `Any`: the worker hands the workflow plain JSON data back ...
        assert received.value == to_jsonable_python(result)
        # ... which the dispatcher validates into the agentool's output type again.
        _check_typed(operation, received.value, result)


class TestPrefect:
    prefect = pytest.importorskip('pydantic_ai.durable_exec.prefect', exc_type=ImportError)
    serializers = pytest.importorskip('prefect.serializers')

    def test_the_task_name_is_pinned(self) -> None:
        # Persisted compatibility data: cached task results are found under this name.
        assert self.prefect.PrefectOperationNamer().operation_name(OPERATION) == 'Capability: agentool.operation'

    def test_the_capability_accepts_the_operation(self) -> None:
        agent = _create('prefect_items', [AgenToolDurability(), self.prefect.PrefectDurability()])
        bound = self.prefect.PrefectDurability.from_agent(agent)
        assert bound.agent is agent
        assert bound.name == 'prefect_items'

    @pytest.mark.parametrize('serializer', ['pickle', 'json'])
    def test_the_parameters_survive_the_result_serializers(self, serializer: str) -> None:
        arguments = _arguments()
        codec = self.serializers.Serializer(type=serializer)
        assert codec.loads(codec.dumps(arguments)) == arguments

    @pytest.mark.parametrize('serializer', ['pickle', 'json'])
    @pytest.mark.parametrize(('operation', 'result'), RESULTS, ids=[operation for operation, _ in RESULTS])
    def test_results_survive_the_result_serializers_as_typed_values(
        self, serializer: str, operation: str, result: Any
    ) -> None:
        # Prefect persists a task's result (pydantic-ai sets `persist_result=True`) and a replayed
        # flow reads it back: pickle (Prefect's default) and JSON both restore the typed value.
        codec = self.serializers.Serializer(type=serializer)
        restored = codec.loads(codec.dumps(result))
        assert restored == result
        _check_typed(operation, restored, result)
