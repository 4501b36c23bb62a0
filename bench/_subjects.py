"""What the benchmarks run: one small agentool, the code one would write by hand instead, and the
same two agent steps (a tool call, then the final output) driven by pydantic-ai's own test models.

Tools take no `RunContext` unless a benchmark is about the context, so the hand-written baseline
calls exactly what the agentool calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from agentool import AgenToolAgent, AgenToolHandle, BaseOperationInput, RoutingConfig, create_agentool, get_injector

__all__ = (
    'PROMPT',
    'ArithInput',
    'add',
    'mul',
    'hand_written',
    'create_arith',
    'create_adder',
    'create_chain',
    'create_dependency_chain',
    'testmodel_agent',
    'functionmodel_agent',
)

PROMPT = '{"operation": "add", "a": 5, "b": 3}'
"""The input every path gets: JSON text, as a model or an API request delivers it."""


class ArithInput(BaseOperationInput):
    """Two operands and what to do with them."""

    operation: Literal['add', 'mul']
    a: float
    b: float


async def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


async def mul(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


ARITH_ROUTING = RoutingConfig(operation_map={'add': 'add', 'mul': 'mul'})

_ROUTES: dict[str, Callable[..., Awaitable[float]]] = {'add': add, 'mul': mul}


async def hand_written() -> float:
    """What one writes without a routing layer: validate the JSON, pick the tool by operation, call it."""
    validated = ArithInput.model_validate_json(PROMPT)
    return await _ROUTES[validated.operation](a=validated.a, b=validated.b)


def create_arith(name: str = 'arith') -> AgenToolAgent:
    """The benchmark agentool (output type `float`, inferred from the tools)."""
    return create_agentool(name, ArithInput, ARITH_ROUTING, [add, mul], description='Arithmetic on two numbers.')


class AddInput(BaseOperationInput):
    """One operation only: the agentool counterpart of an agent with one tool."""

    operation: Literal['add']
    a: float
    b: float


def create_adder(name: str) -> Agent[Any, float]:
    """An agentool with one operation routed to one tool, `add`."""
    return create_agentool(name, AddInput, RoutingConfig(operation_map={'add': 'add'}), [add])


# --- a chain of three agentools, wired the documented way: typed deps holding handles -------------


@dataclass
class _TopDeps:
    chain_mid: AgenToolHandle[float]


@dataclass
class _MidDeps:
    arith: AgenToolHandle[float]


async def top_step(ctx: RunContext[_TopDeps], operation: str, a: float, b: float) -> float:
    """Delegate to `chain_mid`."""
    return await ctx.deps.chain_mid({'operation': operation, 'a': a, 'b': b})


async def mid_step(ctx: RunContext[_MidDeps], operation: str, a: float, b: float) -> float:
    """Delegate to `arith`."""
    return await ctx.deps.arith({'operation': operation, 'a': a, 'b': b})


def create_chain() -> None:
    """`chain_top` → `chain_mid` → `arith` (create `arith` first): each delegates to the next through a deps handle."""
    for name, step, deps_type in (('chain_mid', mid_step, _MidDeps), ('chain_top', top_step, _TopDeps)):
        routing = RoutingConfig(operation_map={'add': step.__name__, 'mul': step.__name__})
        create_agentool(name, ArithInput, routing, [step], deps_type=deps_type)


async def dep_mid_step(operation: str, a: float, b: float) -> float:
    """Delegate to `arith` through the injector in effect (a declared dependency)."""
    return await get_injector().call('arith', {'operation': operation, 'a': a, 'b': b})


async def dep_top_step(operation: str, a: float, b: float) -> float:
    """Delegate to `dep_mid` through the injector in effect (a declared dependency)."""
    return await get_injector().call('dep_mid', {'operation': operation, 'a': a, 'b': b})


def create_dependency_chain() -> None:
    """`dep_top` → `dep_mid` → `arith` (create `arith` first), wired the reference architecture's way:
    `dependencies=[...]` and `get_injector()` inside tools that take no context."""
    for name, step, dependency in (('dep_mid', dep_mid_step, 'arith'), ('dep_top', dep_top_step, 'dep_mid')):
        routing = RoutingConfig(operation_map={'add': step.__name__, 'mul': step.__name__})
        create_agentool(name, ArithInput, routing, [step], dependencies=[dependency])


# --- the same two steps driven by pydantic-ai's test models ---------------------------------------


def testmodel_agent() -> Agent[None, float]:
    """A bare agent with the same tool and output type; `TestModel` calls the tool, then answers."""
    return Agent(TestModel(), output_type=float, tools=[add])


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    # A plain function, the form pydantic-ai's documentation uses (FunctionModel runs it in a thread).
    for part in messages[-1].parts:
        if isinstance(part, ToolReturnPart):
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {'response': part.content})])
    return ModelResponse(parts=[ToolCallPart('add', {'a': 5, 'b': 3})])


def functionmodel_agent() -> Agent[None, float]:
    """A bare agent with the same tool and output type; a `FunctionModel` scripts the two steps."""
    return Agent(FunctionModel(_script), output_type=float, tools=[add])
