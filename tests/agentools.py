"""Small agentools shared by the tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext

from agentool import AgenToolAgent, BaseOperationInput, RoutingConfig, create_agentool


class StorageInput(BaseOperationInput):
    operation: Literal['read', 'write', 'list', 'delete'] = Field(description='What to do.')
    key: str | None = Field(default=None, description='The key to act on.')
    data: Any = Field(default=None, description='The value to write.')


class StorageOutput(BaseModel):
    success: bool
    message: str
    data: Any = None


@dataclass
class Store:
    items: dict[str, Any] = field(default_factory=dict[str, Any])


async def storage_read(ctx: RunContext[Store], key: str) -> StorageOutput:
    """Read a key."""
    if key not in ctx.deps.items:
        return StorageOutput(success=False, message=f'key {key!r} not found')
    return StorageOutput(success=True, message='found', data=ctx.deps.items[key])


async def storage_write(ctx: RunContext[Store], key: str, data: Any) -> StorageOutput:
    """Write a key."""
    ctx.deps.items[key] = data
    return StorageOutput(success=True, message=f'stored {key!r}')


async def storage_list(ctx: RunContext[Store]) -> StorageOutput:
    """List keys."""
    return StorageOutput(success=True, message='keys', data=sorted(ctx.deps.items))


async def storage_delete(ctx: RunContext[Store], key: str) -> StorageOutput:
    """Delete a key."""
    existed = ctx.deps.items.pop(key, None) is not None
    return StorageOutput(success=existed, message='deleted' if existed else f'key {key!r} not found')


def create_storage() -> Agent[Store, StorageOutput]:
    """The reference storage agentool, with the reference design's explicit transforms."""
    return create_agentool(
        name='storage',
        input_schema=StorageInput,
        routing_config=RoutingConfig(
            operation_map={
                'read': ('storage_read', lambda x: {'key': x.key}),
                'write': ('storage_write', lambda x: {'key': x.key, 'data': x.data}),
                'list': ('storage_list', lambda x: {}),
                'delete': ('storage_delete', lambda x: {'key': x.key}),
            }
        ),
        tools=[storage_read, storage_write, storage_list, storage_delete],
        deps_type=Store,
        description='Key-value storage.',
    )


class OddInput(BaseOperationInput):
    operation: Literal['store', 'peek']
    body: str | None = Field(default=None, description='The body.')
    blob: bytes = b'\xff\xfe'
    tags: set[str] = {'gamma', 'alpha', 'delta', 'beta', 'epsilon'}  # noqa: RUF012 (a pydantic default)


async def odd_store(body: str, blob: bytes, tags: set[str]) -> int:
    return 1


async def odd_peek(body: str | None = None) -> int:
    return 0


def create_odd(examples: list[Any] | None = None) -> None:
    create_agentool(
        'odd',
        OddInput,
        RoutingConfig(operation_map={'store': 'odd_store', 'peek': 'odd_peek'}),
        [odd_store, odd_peek],
        examples=examples or [],
    )


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


class PingInput(BaseOperationInput):
    operation: Literal['ping']


async def ping() -> str:
    """Answer."""
    return 'pong'
