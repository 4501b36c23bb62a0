"""A short tour of agentool, run by `make demo`.

The storage steps use a database in a temporary directory that is removed at the end, so the tour
writes nothing to the working directory or the home directory.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from pydantic_ai import Agent

from agentool import AgenToolError, get_registry
from examples.calculator import create_calculator
from examples.storage import ReadResult, SQLiteStore, StorageDeps, create_storage, use_store


async def _storage_tour(directory: Path) -> None:
    storage = create_storage(replace=True)
    store = SQLiteStore(directory / 'demo.sqlite3')
    try:
        # The plain form cannot receive deps; it uses the store of the enclosing use_store block.
        with use_store(store):
            written = await Agent('agentool:storage').run('{"operation": "write", "key": "greeting", "data": "hi"}')
            print(f'Agent("agentool:storage") write -> {written.output}')
            reader = Agent('agentool:storage', output_type=ReadResult)
            read = await reader.run('{"operation": "read", "key": "greeting"}')
            print(f'Agent("agentool:storage") read  -> {read.output!r}')
        # The agent create_storage returned takes typed deps instead.
        listed = await storage.run('{"operation": "list"}', deps=StorageDeps(store=store))
        print(f'storage list with deps           -> {listed.output!r}')
    finally:
        await store.aclose()


async def tour() -> None:
    """Run the tour, printing what each step shows."""
    with tempfile.TemporaryDirectory(prefix='agentool-demo-') as directory:
        await _storage_tour(Path(directory))

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
