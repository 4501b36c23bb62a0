"""A short tour of agentool, run by `make demo`.

The storage, sessions and durable steps use databases in temporary directories that are removed at
the end, so the tour writes nothing to the working directory or the home directory.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from pydantic_ai import Agent

from agentool import AgenToolError, get_injector, get_registry
from examples.calculator import create_calculator
from examples.durable import scene as durable_scene
from examples.sessions import SessionCreateResult, SessionGetResult, create_sessions
from examples.storage import ReadResult, SQLiteStore, StorageDeps, create_storage, use_store


async def _storage_tour(directory: Path) -> None:
    storage = create_storage(replace=True)
    store = SQLiteStore(directory / 'demo.sqlite3')
    try:
        # Deps the injector builds name no store: the plain form uses the use_store block's.
        with use_store(store):
            written = await Agent('agentool:storage').run('{"operation": "write", "key": "greeting", "data": "hi"}')
            print(f'Agent("agentool:storage") write -> {written.output}')
            reader = Agent('agentool:storage', output_type=ReadResult)
            read = await reader.run('{"operation": "read", "key": "greeting"}')
            print(f'Agent("agentool:storage") read  -> {read.output!r}')
        # The agent create_storage returned takes typed deps instead.
        listed = await storage.run('{"operation": "list"}', deps=StorageDeps(store=store))
        print(f'storage list with deps           -> {listed.output!r}')
        await _sessions_tour(store)
    finally:
        await store.aclose()


async def _sessions_tour(store: SQLiteStore) -> None:
    # sessions calls storage through the injector, which hands storage this store in every run.
    create_sessions(replace=True)
    injector = get_injector()
    injector.provide(SQLiteStore, instance=store, replace=True)
    created: SessionCreateResult = await injector.call('sessions', {'operation': 'create', 'user': 'ada'})
    session = created.session
    print(f'injector.call sessions create    -> id={session.id}, expires_at={session.expires_at:%Y-%m-%d %H:%M %Z}')
    got: SessionGetResult = (await injector.run('sessions', {'operation': 'get', 'session_id': session.id})).output
    user = got.session.user if got.session else None
    print(f'injector.run  sessions get       -> status={got.status!r}, user={user!r}')


def _print_catalog() -> None:
    print('catalog:')
    for entry in get_registry().export_catalog()['agentools']:
        operations = ', '.join(operation['name'] for operation in entry['operations'])
        uses = f'  (uses {", ".join(entry["dependencies"])})' if entry['dependencies'] else ''
        print(f'  {entry["name"]:<11} {operations}{uses}')


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

    _print_catalog()

    # Durable execution on DBOS: a pipeline killed mid-way finishes after a restart, no step repeated.
    with tempfile.TemporaryDirectory(prefix='agentool-demo-durable-') as directory:
        durable_scene(Path(directory))


def main() -> None:
    """Entry point for `python -m examples.demo`."""
    asyncio.run(tour())


if __name__ == '__main__':
    main()
