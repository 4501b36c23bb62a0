"""The reference calculator: four operations, one of them a sync tool.

Run it: `python -m examples.calculator`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field
from pydantic_ai import Agent, RunContext

from agentool import BaseOperationInput, RoutingConfig, create_agentool

__all__ = ('CalculatorInput', 'calculator', 'create_calculator')


class CalculatorInput(BaseOperationInput):
    """Input of the calculator agentool."""

    operation: Literal['add', 'subtract', 'multiply', 'divide'] = Field(description='The arithmetic operation.')
    a: float = Field(description='The first operand.')
    b: float = Field(description='The second operand.')


async def add(ctx: RunContext[Any], a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


async def subtract(ctx: RunContext[Any], a: float, b: float) -> float:
    """Subtract b from a."""
    return a - b


def multiply(ctx: RunContext[Any], a: float, b: float) -> float:
    """Multiply two numbers (a sync tool: agentool runs it in a worker thread)."""
    return a * b


async def divide(ctx: RunContext[Any], a: float, b: float) -> float:
    """Divide a by b; dividing by zero raises ZeroDivisionError, which propagates."""
    return a / b


def create_calculator(*, replace: bool = False) -> Agent[Any, float]:
    """Create and register the `calculator` agentool."""
    return create_agentool(
        name='calculator',
        input_schema=CalculatorInput,
        routing_config=RoutingConfig(
            operation_map={
                'add': 'add',
                'subtract': 'subtract',
                'multiply': 'multiply',
                'divide': ('divide', lambda x: {'a': x.a, 'b': x.b}),
            }
        ),
        tools=[add, subtract, multiply, divide],
        description='Basic arithmetic on two numbers.',
        tags=['math', 'example'],
        examples=[{'input': {'operation': 'add', 'a': 5, 'b': 3}, 'output': 8.0}],
        replace=replace,
    )


calculator = create_calculator(replace=True)
"""The calculator agent, registered in the registry in effect when this module is imported."""


async def _main() -> None:
    result = await calculator.run('{"operation": "add", "a": 5, "b": 3}')
    print(result.output)  # 8.0


if __name__ == '__main__':
    asyncio.run(_main())
