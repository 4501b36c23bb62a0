"""A short tour of agentool, run by `make demo`.

Everything runs in memory on embedded defaults; nothing is written to the working directory.
"""

from __future__ import annotations

import asyncio

from pydantic_ai import Agent

from agentool import AgenToolError, get_registry
from examples.calculator import create_calculator


async def tour() -> None:
    """Run the tour, printing what each step shows."""
    calculator = create_calculator(replace=True)

    result = await calculator.run('{"operation": "add", "a": 5, "b": 3}')
    print(f'calculator add 5 3 -> {result.output!r} ({type(result.output).__name__})')

    plain = Agent('agentool:calculator', output_type=float)
    result = await plain.run('{"operation": "multiply", "a": 6, "b": 7}')
    print(f'Agent("agentool:calculator") multiply 6 7 -> {result.output!r}')

    try:
        await calculator.run('{"operation": "power", "a": 2, "b": 8}')
    except AgenToolError as error:
        print(f'bad input -> {type(error).__name__}: {error}')

    print('registered agentools:', ', '.join(get_registry().list_names()))


def main() -> None:
    """Entry point for `python -m examples.demo`."""
    asyncio.run(tour())


if __name__ == '__main__':
    main()
