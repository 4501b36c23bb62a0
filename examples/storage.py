"""The reference storage agentool: durable key-value storage of JSON values on SQLite (stdlib only).

Operations: `read`, `write`, `list`, `delete`, `exists`. Outputs are typed (`StorageResult`).
Absence is data, not an error: reading a missing key gives `found=False`, deleting one gives
`deleted=False`. Bad input raises agentool's typed `InvalidInputError` (`data` holding `NaN`,
an infinity or `1e400` included: JSON has no such numbers); SQLite and filesystem errors (a path
that cannot be opened, use of a closed store) raise the store's typed `StoreError` naming the
path, unchanged by the run. `list` with a prefix is a range query on the keys: exact for any
prefix, NUL and `%` included.

This module is the agentool layer (input schema, tools, routing, `create_storage`). The store it
runs on (`SQLiteStore`: durability, the worker thread, the default store and its path) is in
`examples.sqlite_store`, whose public names are re-exported here.

Which store a run uses (`store_for`): `ctx.deps.store` when the run's deps name one
(`deps=StorageDeps(store=...)`), else the innermost `use_store(...)` block's store, else the
embedded default store at `default_path()` (`$AGENTOOL_STORAGE_PATH`, else the user-data
directory; never the working directory). Deps the injector builds name no store, so they follow
`use_store` at every call, however long the injector keeps them.

Run it: `python -m examples.storage` (writes to `default_path()`).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Literal, Self, TypeAlias

from pydantic import Field, JsonValue, field_validator, model_validator
from pydantic_ai import Agent, RunContext

from agentool import BaseOperationInput, Route, RoutingConfig, create_agentool
from examples.sqlite_store import (
    MEMORY,
    PATH_ENV,
    DeleteResult,
    ExistsResult,
    ListResult,
    ReadResult,
    SQLiteStore,
    StoreError,
    WriteResult,
    default_path,
    default_store,
    use_store,
)

__all__ = (
    'MEMORY',
    'PATH_ENV',
    'DeleteResult',
    'ExistsResult',
    'ListResult',
    'ReadResult',
    'SQLiteStore',
    'StorageDeps',
    'StorageInput',
    'StorageResult',
    'StoreError',
    'WriteResult',
    'create_storage',
    'default_path',
    'default_store',
    'storage',
    'store_for',
    'use_store',
)

# --- typed input and outputs ---------------------------------------------------------------------

_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # operation: (required fields, allowed fields) besides `operation`
    'read': (frozenset({'key'}), frozenset({'key'})),
    'write': (frozenset({'key', 'data'}), frozenset({'key', 'data'})),
    'list': (frozenset(), frozenset({'prefix'})),
    'delete': (frozenset({'key'}), frozenset({'key'})),
    'exists': (frozenset({'key'}), frozenset({'key'})),
}


class StorageInput(BaseOperationInput):
    """Input of the storage agentool; each operation takes exactly the fields it uses."""

    operation: Literal['read', 'write', 'list', 'delete', 'exists'] = Field(description='What to do.')
    key: str | None = Field(
        default=None, min_length=1, max_length=1024, description='The key (read, write, delete, exists).'
    )
    data: JsonValue = Field(default=None, description='The JSON value to store (write; null is a value).')
    prefix: str | None = Field(default=None, description='Only list keys starting with this (list).')

    @field_validator('data')
    @classmethod
    def _finite(cls, data: JsonValue) -> JsonValue:
        # JSON has no NaN or infinity, but the JSON parser reads `NaN`, `Infinity` and `1e400` and a
        # `JsonValue` field keeps them (the schema's allow_inf_nan=False covers float fields only):
        # refused here, so every surface gives the typed input error, never json.dumps's ValueError.
        pending: list[JsonValue] = [data]
        while pending:  # a loop, not recursion: any nesting depth costs its size and no more
            value = pending.pop()
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f'data must be JSON: {value} is not a JSON number (JSON has no NaN or infinity)')
            if isinstance(value, dict):
                pending.extend(value.values())
            elif isinstance(value, list):
                pending.extend(value)
        return data

    @model_validator(mode='after')
    def _fields_fit_operation(self) -> Self:
        required, allowed = _FIELDS[self.operation]
        given = self.model_fields_set - {'operation'}
        if missing := sorted(required - given):
            raise ValueError(f'operation {self.operation!r} requires field {missing[0]!r}')
        if unused := sorted(given - allowed):
            raise ValueError(f'operation {self.operation!r} does not take field {unused[0]!r}')
        if self.key is None and 'key' in required:
            raise ValueError(f'operation {self.operation!r} requires a string key, not null')
        return self


StorageResult: TypeAlias = ReadResult | WriteResult | ListResult | DeleteResult | ExistsResult
"""The output of the storage agentool; the `operation` field says which member it is."""

# --- which store a run uses -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class StorageDeps:
    """The storage agentool's deps: pass `deps=StorageDeps(store=...)` to a run.

    Without a store (`None`), each call uses the default store at that moment (`default_store()`:
    the innermost `use_store` block, else the embedded default), so the injector can build these
    deps with nothing provided and keep them. Provide a shared store with
    `injector.provide(SQLiteStore, instance=store)`: a factory would be run-scoped and closed at
    the end of every run.
    """

    store: SQLiteStore | None = None


def store_for(ctx: RunContext[StorageDeps | None]) -> SQLiteStore:
    """The store a storage tool uses in this run: `ctx.deps.store`, else `default_store()`."""
    deps = ctx.deps
    if deps is None or deps.store is None:
        return default_store()  # looked up at each call, so `use_store` redirects kept deps too
    return deps.store


# --- the agentool -------------------------------------------------------------------------------------


async def storage_read(ctx: RunContext[StorageDeps | None], key: str) -> ReadResult:
    """Read the JSON value stored under a key."""
    return await store_for(ctx).read(key)


async def storage_write(ctx: RunContext[StorageDeps | None], key: str, data: JsonValue) -> WriteResult:
    """Store a JSON value under a key, replacing any previous value (durable when it returns)."""
    return await store_for(ctx).write(key, data)


async def storage_list(ctx: RunContext[StorageDeps | None], prefix: str | None = None) -> ListResult:
    """List the keys, sorted, optionally only those starting with a prefix."""
    return await store_for(ctx).list(prefix)


async def storage_delete(ctx: RunContext[StorageDeps | None], key: str) -> DeleteResult:
    """Delete a key."""
    return await store_for(ctx).delete(key)


async def storage_exists(ctx: RunContext[StorageDeps | None], key: str) -> ExistsResult:
    """Check whether a key has a value."""
    return await store_for(ctx).exists(key)


def create_storage(*, replace: bool = False) -> Agent[StorageDeps, StorageResult]:
    """Create and register the `storage` agentool."""
    return create_agentool(
        name='storage',
        input_schema=StorageInput,
        routing_config=RoutingConfig(
            operation_map={
                'read': Route(tool='storage_read', read_only=True, idempotent=True),
                'write': Route(tool='storage_write', idempotent=True, destructive=True),
                'list': Route(tool='storage_list', read_only=True, idempotent=True),
                'delete': Route(tool='storage_delete', idempotent=True, destructive=True),
                'exists': Route(tool='storage_exists', read_only=True, idempotent=True),
            }
        ),
        tools=[storage_read, storage_write, storage_list, storage_delete, storage_exists],
        deps_type=StorageDeps,
        description='Durable key-value storage of JSON values on SQLite.',
        tags=['storage', 'example'],
        examples=[
            {'input': {'operation': 'write', 'key': 'greeting', 'data': 'hello'}},
            {'input': {'operation': 'read', 'key': 'greeting'}},
        ],
        replace=replace,
    )


storage = create_storage(replace=True)
"""The storage agent, registered in the registry in effect when this module is imported."""


async def _main() -> None:
    plain: Agent[None, str] = Agent('agentool:storage')
    print((await plain.run('{"operation": "write", "key": "greeting", "data": "hello"}')).output)
    print((await plain.run('{"operation": "read", "key": "greeting"}')).output)
    print(f'stored in {default_path()}')


if __name__ == '__main__':
    asyncio.run(_main())
