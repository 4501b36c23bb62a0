"""Second-pass audit of the model, manager, routing, registry and factory: held-out tests from the docs."""

from __future__ import annotations

import asyncio
import enum
import functools
from collections.abc import Awaitable
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext

from agentool import (
    MANAGER_TOOL_NAME,
    AgenToolAgent,
    AgenToolCapability,
    AgenToolConfig,
    AgenToolManager,
    AgenToolModel,
    AgenToolRegistry,
    BaseOperationInput,
    ConfigurationError,
    InputValidationError,
    InvalidJSONError,
    NotAnObjectError,
    RoutingConfig,
    TransformError,
    UnknownOperationError,
    create_agentool,
    extract_tool_metadata,
    get_injector,
    get_registry,
    use_registry,
)
from tests._lean_diff import differential

pytestmark = pytest.mark.filterwarnings('ignore::DeprecationWarning')


def lean(agent: Any) -> AgenToolAgent:
    assert isinstance(agent, AgenToolAgent)
    return agent


class EchoInput(BaseOperationInput):
    operation: Literal['echo']
    text: str = 'x'


async def echo(text: str) -> str:
    """Return the text."""
    return text


def echo_routing() -> RoutingConfig:
    return RoutingConfig(operation_map={'echo': 'echo'})


# --- operations that are not strings -----------------------------------------------------------


class NumberedInput(BaseModel):
    operation: Literal[1, 2]
    x: int = 0


async def one(x: int) -> int:
    return x


async def two(x: int) -> int:
    return -x


async def test_literal_int_operations_route_on_every_path() -> None:
    """`Literal[1, 2]` is accepted at creation (routes '1', '2'); valid input must then run, not fail as unknown."""
    agent = lean(
        create_agentool('numbered', NumberedInput, RoutingConfig(operation_map={'1': 'one', '2': 'two'}), [one, two])
    )
    assert (await agent.run('{"operation": 2, "x": 3}')).output == -3
    outcome = await differential(agent, '{"operation": 1, "x": 5}')
    assert outcome.result is not None
    assert outcome.result.output == 5
    assert await get_injector().call('numbered', {'operation': 2, 'x': 4}) == -4
    assert (await Agent('agentool:numbered', output_type=int).run('{"operation": 1, "x": 7}')).output == 7
    with pytest.raises(InputValidationError):
        await agent.run('{"operation": 3, "x": 3}')


class IntOp(enum.IntEnum):
    ONE = 1
    TWO = 2


class IntEnumInput(BaseModel):
    operation: IntOp
    x: int = 0


async def test_int_enum_operations_route() -> None:
    agent = create_agentool('int_enum', IntEnumInput, RoutingConfig(operation_map={'1': 'one', '2': 'two'}), [one, two])
    assert (await agent.run('{"operation": 2, "x": 3}')).output == -3
    with pytest.raises(InputValidationError):
        await agent.run('{"operation": 5}')


# --- tools ------------------------------------------------------------------------------------


class AsyncCallable:
    """A tool object whose `__call__` is a coroutine function."""

    __name__ = 'async_callable'

    async def __call__(self, text: str) -> str:
        return f'object {text}'


def returns_awaitable(text: str) -> Any:
    """A plain function handing back a coroutine (a decorator that lost `async`)."""

    async def inner() -> str:
        return f'awaited {text}'

    return inner()


@pytest.mark.parametrize(
    'tool', [AsyncCallable(), returns_awaitable], ids=['async_call_object', 'sync_returns_awaitable']
)
async def test_tool_returning_an_awaitable_is_awaited(tool: Any) -> None:
    """A tool whose call gives a coroutine has its result awaited: never a foreign serialisation error."""
    name = tool.__name__
    expected = 'object hi' if name == 'async_callable' else 'awaited hi'
    agent = lean(create_agentool('awaits', EchoInput, RoutingConfig(operation_map={'echo': name}), [tool]))
    prompt = '{"operation": "echo", "text": "hi"}'
    assert (await agent.run(prompt)).output == expected
    outcome = await differential(agent, prompt)
    assert outcome.result is not None
    assert outcome.result.output == expected
    assert await get_injector().call('awaits', {'operation': 'echo', 'text': 'hi'}) == expected


class Service:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def method(self, ctx: RunContext[Any], text: str) -> str:
        return f'{self.prefix} {text} {ctx.deps}'


def _prefixed(prefix: str, text: str) -> str:
    return f'{prefix}:{text}'


async def test_bound_methods_and_partials_are_tools() -> None:
    agent = lean(
        create_agentool(
            'methods',
            EchoInput,
            RoutingConfig(operation_map={'echo': 'method'}),
            [Service('svc').method],
            deps_type=Any,
        )
    )
    assert (await agent.run('{"operation": "echo", "text": "a"}', deps=1)).output == 'svc a 1'
    partial = create_agentool(
        'partial', EchoInput, RoutingConfig(operation_map={'echo': '_prefixed'}), [functools.partial(_prefixed, 'p')]
    )
    assert (await partial.run('{"operation": "echo", "text": "b"}')).output == 'p:b'


# --- transforms ---------------------------------------------------------------------------------


async def test_a_raising_transform_is_a_transform_error_on_both_paths() -> None:
    def broken(x: EchoInput) -> dict[str, Any]:
        raise KeyError('missing')

    agent = lean(
        create_agentool('transform', EchoInput, RoutingConfig(operation_map={'echo': ('echo', broken)}), [echo])
    )
    with pytest.raises(TransformError) as raised:
        await agent.run('{"operation": "echo"}')
    assert raised.value.details == {'agentool': 'transform', 'operation': 'echo', 'tool': 'echo'}
    assert isinstance(raised.value.__cause__, KeyError)


# --- aliases --------------------------------------------------------------------------------------


class AliasInput(BaseOperationInput):
    operation: Literal['go']
    the_key: str = Field(alias='key')


async def go(the_key: str) -> str:
    return the_key.upper()


async def test_aliased_field_reaches_the_tool_by_field_name() -> None:
    agent = lean(create_agentool('alias', AliasInput, RoutingConfig(operation_map={'go': 'go'}), [go]))
    await agent.run('{"operation": "go", "key": "w"}')
    outcome = await differential(agent, '{"operation": "go", "key": "a"}')
    assert outcome.result is not None
    assert outcome.result.output == 'A'
    with pytest.raises(InputValidationError):
        await agent.run('{"operation": "go", "the_key": "a"}')


# --- constructors ---------------------------------------------------------------------------------


def test_capability_refuses_a_bad_name_or_registry() -> None:
    with pytest.raises(ConfigurationError, match='registry'):
        AgenToolCapability('echo', registry=5)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match='name'):
        AgenToolCapability(5)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match='name'):
        AgenToolCapability('   ')
    registry = AgenToolRegistry()
    assert AgenToolCapability('echo', registry=registry).registry is registry


def test_create_agentool_names_a_bad_system_prompt() -> None:
    with pytest.raises(ConfigurationError, match='system_prompt') as raised:
        create_agentool('prompted', EchoInput, echo_routing(), [echo], system_prompt=1)  # type: ignore[arg-type]
    assert 'output type' not in str(raised.value)
    assert get_registry().get('prompted') is None
    agent = create_agentool('prompted', EchoInput, echo_routing(), [echo], system_prompt=['a', 'b'])
    assert agent.run_sync('{"operation": "echo", "text": "t"}').output == 't'


@pytest.mark.parametrize('option', ['replace', 'lean'])
def test_create_agentool_refuses_flags_that_are_not_bool(option: str) -> None:
    options: dict[str, Any] = {option: 'no'}
    with pytest.raises(ConfigurationError, match=option):
        create_agentool('flagged', EchoInput, echo_routing(), [echo], **options)
    assert get_registry().get('flagged') is None


# --- registry scopes --------------------------------------------------------------------------


async def test_agent_keeps_its_registry_outside_the_scope_and_across_tasks() -> None:
    with use_registry() as inner:
        agent = create_agentool('scoped', EchoInput, echo_routing(), [echo])
    assert 'scoped' in inner
    assert get_registry().get('scoped') is None

    async def run(text: str) -> str:
        return (await agent.run(f'{{"operation": "echo", "text": "{text}"}}')).output

    assert await asyncio.gather(run('a'), run('b')) == ['a', 'b']


def test_unknown_operation_details() -> None:
    agent = create_agentool('unknown', EchoInput, echo_routing(), [echo])
    with pytest.raises(UnknownOperationError) as raised:
        agent.run_sync('{"operation": "nope"}')
    assert raised.value.details['known'] == ['echo']


# --- the architecture guide's hand-assembled agent ---------------------------------------------


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


class _AsyncCallable:
    """A tool object whose `__call__` is a coroutine function."""

    __name__ = 'adder'

    async def __call__(self, a: float, b: float) -> float:
        return a + b


class _AddOnly(BaseOperationInput):
    operation: Literal['add']
    a: float
    b: float


def _dropped_async(a: float, b: float) -> Awaitable[float]:
    """A function a decorator left without `async`: it returns a coroutine."""

    async def add() -> float:
        return a + b

    return add()


def test_a_callable_object_with_an_async_call_is_described_as_async() -> None:
    assert extract_tool_metadata(_AsyncCallable()).is_async is True
    assert extract_tool_metadata(_dropped_async).is_async is False


async def test_a_tool_returning_an_awaitable_has_the_awaited_output_type() -> None:
    assert extract_tool_metadata(_dropped_async).return_type_annotation is float
    with use_registry():
        agent = create_agentool(
            'dropped', _AddOnly, RoutingConfig(operation_map={'add': '_dropped_async'}), [_dropped_async]
        )
        assert agent.output_type is float
        assert (await agent.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0


@pytest.mark.parametrize('deps_type', [5, 'Deps', EchoInput(operation='echo', text='x')])
def test_create_agentool_refuses_a_deps_type_that_is_not_a_type(deps_type: Any) -> None:
    with use_registry(), pytest.raises(ConfigurationError, match='deps_type must be a type') as caught:
        create_agentool(
            'bad_deps',
            _AddOnly,
            RoutingConfig(operation_map={'add': '_dropped_async'}),
            [_dropped_async],
            deps_type=deps_type,
        )
    assert caught.value.details['option'] == 'deps_type'


@pytest.mark.parametrize('deps_type', [None, Any, dict[str, int], int | None, EchoInput])
def test_create_agentool_takes_any_type_form_as_deps_type(deps_type: Any) -> None:
    with use_registry():
        create_agentool(
            'deps_ok',
            _AddOnly,
            RoutingConfig(operation_map={'add': '_dropped_async'}),
            [_dropped_async],
            deps_type=deps_type,
        )


def test_the_lean_switch_takes_only_a_flag() -> None:
    with use_registry():
        agent = lean(
            create_agentool('flag', _AddOnly, RoutingConfig(operation_map={'add': '_dropped_async'}), [_dropped_async])
        )
        with pytest.raises(ConfigurationError, match='lean must be True or False'):
            agent.lean = 'no'  # pyright: ignore[reportAttributeAccessIssue]
        assert agent.lean is True
