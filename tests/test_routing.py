"""Run-time routing: deps, sync tools, transforms, tool exceptions and output checks."""

from __future__ import annotations

import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel, model_validator
from pydantic_ai import ModelRetry, RunContext, ToolFailed

from agentool import (
    BaseOperationInput,
    InputValidationError,
    OutputError,
    RoutingConfig,
    ToolArgumentError,
    ToolFailedError,
    ToolRetryError,
    TransformError,
    create_agentool,
    get_injector,
    get_registry,
)
from tests.agentools import StorageOutput, Store, create_storage


async def test_reference_storage_reads_writes_lists_and_deletes() -> None:
    storage = create_storage()
    store = Store()
    write = await storage.run('{"operation": "write", "key": "k", "data": {"v": [1, 2]}}', deps=store)
    assert write.output == StorageOutput(success=True, message="stored 'k'")
    read = await storage.run('{"operation": "read", "key": "k"}', deps=store)
    assert read.output.data == {'v': [1, 2]}
    listed = await storage.run('{"operation": "list"}', deps=store)
    assert listed.output.data == ['k']
    deleted = await storage.run('{"operation": "delete", "key": "k"}', deps=store)
    assert deleted.output.success
    missing = await storage.run('{"operation": "read", "key": "k"}', deps=store)
    assert missing.output == StorageOutput(success=False, message="key 'k' not found")
    assert store.items == {}


class OpInput(BaseOperationInput):
    operation: Literal['go']
    value: int = 0


async def test_sync_tool_runs_off_the_event_loop_thread() -> None:
    loop_thread = threading.get_ident()

    def where(value: int) -> bool:
        return threading.get_ident() != loop_thread

    agent = create_agentool('sync', OpInput, RoutingConfig(operation_map={'go': 'where'}), [where])
    assert (await agent.run('{"operation": "go", "value": 1}')).output is True


async def test_sync_tool_gets_ctx_and_deps() -> None:
    def read_deps(ctx: RunContext[dict[str, int]], value: int) -> int:
        return ctx.deps['base'] + value

    agent = create_agentool('sync', OpInput, RoutingConfig(operation_map={'go': 'read_deps'}), [read_deps])
    assert (await agent.run('{"operation": "go", "value": 2}', deps={'base': 40})).output == 42


class BoomError(Exception):
    pass


async def explode(value: int) -> int:
    raise BoomError(f'bad {value}')


def explode_sync(value: int) -> int:
    raise BoomError(f'sync {value}')


async def picky(value: int) -> int:
    raise ModelRetry('value must be even')


async def tool(value: int) -> int:
    return value


@pytest.mark.parametrize(
    ('tool', 'error', 'message'),
    [(explode, BoomError, 'bad 3'), (explode_sync, BoomError, 'sync 3'), (picky, ToolRetryError, 'value must be even')],
    ids=['tool_exception_propagates_as_itself', 'sync_tool_exception_too', 'model_retry_is_a_typed_error'],
)
async def test_what_a_tool_raises_ends_the_run(tool: Any, error: type[Exception], message: str) -> None:
    agent = create_agentool('boom', OpInput, RoutingConfig(operation_map={'go': tool.__name__}), [tool])
    with pytest.raises(error, match=message):
        await agent.run('{"operation": "go", "value": 3}')


async def test_transform_that_raises_is_a_typed_error_with_the_cause() -> None:
    def bad(x: Any) -> dict[str, Any]:
        raise KeyError('missing')

    agent = create_agentool('t', OpInput, RoutingConfig(operation_map={'go': ('tool', bad)}), [tool])
    with pytest.raises(TransformError, match="transform of operation 'go' raised KeyError") as caught:
        await agent.run('{"operation": "go"}')
    assert isinstance(caught.value.__cause__, KeyError)
    assert caught.value.details['tool'] == 'tool'


async def test_transform_returning_a_non_mapping_is_a_typed_error() -> None:
    agent = create_agentool('t', OpInput, RoutingConfig(operation_map={'go': ('tool', lambda x: [x.value])}), [tool])  # pyright: ignore[reportArgumentType]
    with pytest.raises(TransformError, match='returned list, expected a dict'):
        await agent.run('{"operation": "go"}')


@pytest.mark.parametrize(
    ('transform', 'parameter', 'problem'),
    [
        (lambda x: {}, 'value', 'is required'),
        (lambda x: {'value': 1, 'other': 2}, 'other', 'is not a parameter'),
    ],
)
async def test_transform_result_must_fit_the_tool_signature(transform: Any, parameter: str, problem: str) -> None:
    agent = create_agentool('t', OpInput, RoutingConfig(operation_map={'go': ('tool', transform)}), [tool])
    with pytest.raises(ToolArgumentError, match=f"parameter '{parameter}' of tool 'tool' {problem}") as caught:
        await agent.run('{"operation": "go"}')
    assert caught.value.details == {'agentool': 't', 'operation': 'go', 'tool': 'tool', 'parameter': parameter}


async def test_var_kwargs_tool_accepts_any_transform_keys() -> None:
    async def tool(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    agent = create_agentool('t', OpInput, RoutingConfig(operation_map={'go': ('tool', lambda x: {'z': 1})}), [tool])
    assert (await agent.run('{"operation": "go"}')).output == {'z': 1}


class Out(BaseModel):
    n: int


async def test_output_that_does_not_fit_the_output_type_is_a_typed_error() -> None:
    async def wrong(value: int) -> Any:
        return {'not_n': value}

    agent = create_agentool('o', OpInput, RoutingConfig(operation_map={'go': 'wrong'}), [wrong], output_type=Out)
    with pytest.raises(OutputError, match="tool 'wrong' returned a value that does not fit") as caught:
        await agent.run('{"operation": "go", "value": 1}')
    assert caught.value.details['operation'] == 'go'


async def test_output_validator_retry_ends_the_run_with_a_typed_error() -> None:
    agent = create_agentool('r', OpInput, RoutingConfig(operation_map={'go': 'tool'}), [tool])

    @agent.output_validator
    def must_be_positive(output: int) -> int:  # pyright: ignore[reportUnusedFunction]
        if output <= 0:
            raise ModelRetry('output must be positive')
        return output

    assert (await agent.run('{"operation": "go", "value": 1}')).output == 1
    with pytest.raises(ToolRetryError, match='output must be positive'):
        await agent.run('{"operation": "go", "value": -1}')


async def test_tool_failed_is_a_typed_error_in_run_and_call() -> None:
    async def gone(value: int) -> str:
        raise ToolFailed(f'resource {value} is gone')

    agent = create_agentool('f', OpInput, RoutingConfig(operation_map={'go': 'gone'}), [gone])
    with pytest.raises(ToolFailedError, match='resource 4 is gone') as caught:
        await agent.run('{"operation": "go", "value": 4}')
    assert caught.value.details['outcome'] == 'failed'
    with pytest.raises(ToolFailedError, match='resource 5 is gone'):
        await get_injector().call('f', {'operation': 'go', 'value': 5})


class NamedInput(BaseOperationInput):
    operation: Literal['go']
    name: str | None = None


class NameMissingError(Exception):
    """A transform's own error, raised on the stand-in that probes it at creation."""


async def test_a_transform_raising_at_probe_time_surfaces_its_error_on_a_real_input() -> None:
    def require_name(input: Any) -> dict[str, Any]:
        if not input.name:  # the creation-time stand-in reads as empty: this raises there
            raise NameMissingError('a name is required')
        return {'name': input.name}

    async def greet(name: str) -> str:
        return f'hello {name}'

    routes = RoutingConfig(operation_map={'go': ('greet', require_name)})
    agent = create_agentool('greeter', NamedInput, routes, [greet])
    manager = get_registry().get_manager('greeter')
    assert manager.requirements('go').source == 'schema'  # its reads cannot be known: nothing more refused
    assert (await agent.run('{"operation": "go", "name": "Ada"}')).output == 'hello Ada'
    with pytest.raises(TransformError, match='raised NameMissingError: a name is required') as caught:
        await agent.run('{"operation": "go"}')
    assert isinstance(caught.value.__cause__, NameMissingError)


class Lowered(BaseModel):
    """A type whose own validator fails on `None` with an `AttributeError`, not pydantic's `ValueError`."""

    text: str

    @model_validator(mode='before')
    @classmethod
    def lower(cls, data: Any) -> Any:
        return {'text': data.lower()}


async def test_a_parameter_whose_validator_fails_on_none_in_its_own_way_refuses_null() -> None:
    seen: list[Any] = []

    async def greet(name: Lowered) -> str:
        seen.append(name)
        return f'hello {name}'

    routes = RoutingConfig(operation_map={'go': ('greet', lambda input: {'name': input.name})})
    agent = create_agentool('greeter', NamedInput, routes, [greet])
    with pytest.raises(InputValidationError) as caught:
        await agent.run('{"operation": "go", "name": null}')
    assert [(e['type'], e['loc']) for e in caught.value.errors] == [('none_forbidden', ['name'])]
    assert seen == []  # refused before the tool
    assert (await agent.run('{"operation": "go", "name": "Ada"}')).output == 'hello Ada'


class AnnotationBrokeError(Exception):
    """An annotation's own code failing as it is evaluated."""


def _failing_type() -> type:
    raise AnnotationBrokeError('the annotation ran and failed')


def test_an_annotation_raising_its_own_error_propagates_at_creation() -> None:
    async def tool(value: _failing_type()) -> int:  # pyright: ignore[reportInvalidTypeForm]
        return 0

    with pytest.raises(AnnotationBrokeError):
        create_agentool('broken', OpInput, RoutingConfig(operation_map={'go': 'tool'}), [tool])
    assert 'broken' not in get_registry()
