"""Small agentools and helpers shared by the tests: one definition each, imported where used.

Fixtures live in `conftest.py`; what is here is plain code: agentools (`create_storage`,
`make_calc`, `make_greeter`, `make_rich`, `create_odd`, the `PingInput`/`ping`, `EchoInput`/`echo`
and `NotesInput`/`say` pieces), the scripted `advisor` agent of the testing tests, and helpers
(`agentool`, `lean`, `call_then_answer`, `run_with`, `run_python`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, Field
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import AgenToolAgent, AgenToolHandle, BaseOperationInput, RoutingConfig, create_agentool
from agentool.core.injector import get_injector

ROOT = Path(__file__).resolve().parents[1]


# --- the reference storage agentool -----------------------------------------------------------


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


# --- defaults and examples JSON cannot hold as they are (bytes, a set) ------------------------


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


# --- one-operation agentools ------------------------------------------------------------------


def lean(agent: Any) -> AgenToolAgent:
    """The agent `create_agentool` returned, typed as the `AgenToolAgent` it is (lean runs, counters)."""
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


class NotesInput(BaseOperationInput):
    operation: Literal['say', 'ping']
    text: str | None = None


async def say(text: str) -> str:
    return text


# --- a greeter reading a resource and calling a kv agentool through a handle ------------------


MADE: list[str] = []


class Greeting:
    """A resource: provided by type, made once per run, closed when the run ends."""

    def __init__(self) -> None:
        self.word = 'hello'
        MADE.append('make')

    def close(self) -> None:
        MADE.append('close')


@dataclass
class GreeterDeps:
    kv: AgenToolHandle[str | None]
    greeting: Greeting


class KVInput(BaseOperationInput):
    operation: Literal['get']
    key: str


class GreetInput(BaseOperationInput):
    operation: Literal['greet']
    user: str


async def kv_get(key: str) -> str | None:
    """Read a value."""
    return {'u1': 'Ada'}.get(key)


async def greet(ctx: RunContext[GreeterDeps], user: str) -> str:
    """Greet a user by their stored name."""
    name = await ctx.deps.kv({'operation': 'get', 'key': user})
    return f'{ctx.deps.greeting.word} {name or user}'


def make_greeter(*, provide: bool = True) -> None:
    MADE.clear()
    create_agentool('kv', KVInput, RoutingConfig(operation_map={'get': 'kv_get'}), [kv_get])
    create_agentool(
        'greeter',
        GreetInput,
        RoutingConfig(operation_map={'greet': 'greet'}),
        [greet],
        deps_type=GreeterDeps,
        dependencies=['kv'],
    )
    if provide:
        get_injector().provide(Greeting, Greeting)


def call_then_answer(tool: str, args: dict[str, Any]) -> FunctionModel:
    """A model calling `tool` once, then answering with what it returned."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[ToolCallPart(tool, args)])
        return ModelResponse(parts=[TextPart(str(returned[0].content))])

    return FunctionModel(model)


# --- an agentool whose input and output carry every JSON-awkward kind -------------------------


class Colour(Enum):
    RED = 'red'


class Rich(BaseModel):
    at: datetime
    amount: Decimal
    id: UUID
    colour: Colour
    where: PurePosixPath
    tags: set[str]


class RichInput(BaseOperationInput):
    operation: Literal['echo', 'other']
    at: datetime
    amount: Decimal
    id: UUID
    colour: Colour
    where: PurePosixPath
    tags: set[str]
    unused: int = 0


async def rich_echo(
    at: datetime, amount: Decimal, id: UUID, colour: Colour, where: PurePosixPath, tags: set[str]
) -> Rich:
    """Give the values back."""
    return Rich(at=at, amount=amount, id=id, colour=colour, where=where, tags=tags)


RICH: dict[str, Any] = {
    'at': datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC),
    'amount': Decimal('0.10'),
    'id': UUID(int=7),
    'colour': Colour.RED,
    'where': PurePosixPath('/a/b'),
    'tags': {'x'},
}


def make_rich() -> None:
    create_agentool(
        'rich',
        RichInput,
        RoutingConfig(operation_map={'echo': 'rich_echo', 'other': 'rich_echo'}),
        [rich_echo],
        output_type=Rich,
    )


# --- a fresh interpreter ----------------------------------------------------------------------


def python_env() -> dict[str, str]:
    """This environment for a child interpreter: the repository importable, no tracer provider named."""
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    env.pop('OTEL_PYTHON_TRACER_PROVIDER', None)
    return env


def run_python(script: str, *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run `script` in a fresh interpreter; what it printed (it must exit cleanly)."""
    done = subprocess.run(
        [sys.executable, '-c', script],
        env=env or python_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,  # a safety net for a hung child, far above any loaded machine's time
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- an agentool from its operations' tools ---------------------------------------------------


def agentool(name: str, schema: type[BaseModel], routes: dict[str, Any], **options: Any) -> AgenToolAgent:
    """`create_agentool` routing each operation to the tool function given for it (by that function's name)."""
    operation_map = {operation: tool.__name__ for operation, tool in routes.items()}
    tools = list(dict.fromkeys(routes.values()))
    return lean(create_agentool(name, schema, RoutingConfig(operation_map=operation_map), tools, **options))


# --- a two-operation calculator ---------------------------------------------------------------


class CalcInput(BaseOperationInput):
    operation: Literal['add', 'div']
    a: float
    b: float


async def add(a: float, b: float) -> float:
    return a + b


async def div(a: float, b: float) -> float:
    return a / b


def make_calc(**kwargs: Any) -> Agent[Any, Any]:
    config = RoutingConfig(operation_map={'add': 'add', 'div': 'div'})
    return create_agentool('calc', CalcInput, config, [add, div], **kwargs)


# --- an LLM agent with tools, for the test double and record/replay ---------------------------


class Advice(BaseModel):
    city: str
    temperature_c: float


def advisor(retries: int = 1) -> Agent[None, Advice]:
    agent: Agent[None, Advice] = Agent(
        'openai:gpt-5', defer_model_check=True, output_type=Advice, retries=retries, deps_type=type(None)
    )

    @agent.tool_plain
    def get_weather(lat: float, lon: float) -> dict[str, float]:
        """Weather at the coordinates."""
        return {'temperature_c': 14.0}

    @agent.tool_plain
    def explode() -> int:
        """Always fails."""
        raise ValueError('the tool exploded')

    @agent.tool_plain
    def picky(x: int) -> int:
        """Asks for a retry."""
        raise ModelRetry('x must be even')

    return agent


PARIS = Advice(city='Paris', temperature_c=14.0)


async def run_with(agent: Agent[None, Any], model: Any, prompt: str = 'Paris?', **kwargs: Any) -> Any:
    """The output of one run of `agent` with its model replaced by `model`."""
    with agent.override(model=model):
        return (await agent.run(prompt, **kwargs)).output
