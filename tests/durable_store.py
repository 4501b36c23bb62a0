"""The store agentool of the durable tests, and the DBOS scenes that run it in a child process.

`python -m tests.durable_store SCENE DIRECTORY` runs the scene on DBOS in DIRECTORY, one JSON line per case.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any, Literal

from dbos import DBOS
from pydantic import BaseModel, Field, Json, SecretStr
from pydantic_ai import Agent, ApprovalRequired, CallDeferred
from pydantic_ai.models.test import TestModel

import agentool.dbos as durable_dbos
from agentool import AgenToolRegistry, Route, RoutingConfig, create_agentool, get_injector
from agentool.core.registry import use_registry
from agentool.durable import AgenToolDurability, unit_key

CALLS: list[str] = []


class StoreInput(BaseModel):
    operation: Literal['write', 'boom', 'key', 'nested', 'secret', 'parse', 'hidden', 'ask', 'defer']
    key: str = ''
    data: int = 0
    token: SecretStr = SecretStr('')
    payload: Json[dict[str, int]] = Field(default_factory=dict)
    note: str = Field(default='default', exclude=True)


async def store_write(key: str, data: int) -> str:
    CALLS.append(f'write {key}')
    return f'wrote {key}={data}'


async def store_boom(key: str) -> str:
    CALLS.append(f'boom {key}')
    raise ConnectionError(f'store unreachable for {key}')


async def store_key() -> str:
    return str(unit_key())


async def store_nested() -> str:
    """A unit calling another operation: that call runs directly, inside this unit."""
    inner = await get_injector().call('store', {'operation': 'key'})
    return f'{unit_key()} {inner}'


async def store_secret(token: SecretStr) -> str:
    return token.get_secret_value()


async def store_parse(payload: dict[str, int]) -> str:
    return json.dumps(payload)


async def store_hidden(note: str) -> str:
    return note


async def store_ask(key: str) -> str:
    CALLS.append(f'ask {key}')
    raise ApprovalRequired()


async def store_defer(key: str) -> str:
    CALLS.append(f'defer {key}')
    raise CallDeferred()


def create_store(name: str = 'store', *, durable: bool = False) -> Agent[Any, Any]:
    """An agentool with a side effect, a failing tool, and inputs whose JSON form is not the value; `CALLS` emptied."""
    CALLS.clear()
    return create_agentool(
        name=name,
        input_schema=StoreInput,
        routing_config=RoutingConfig(
            operation_map={
                'write': 'store_write',
                'boom': 'store_boom',
                'key': 'store_key',
                'nested': 'store_nested',
                'secret': 'store_secret',
                'parse': 'store_parse',
                'hidden': 'store_hidden',
                'ask': Route(tool='store_ask', idempotent=True, retries=2),
                'defer': Route(tool='store_defer', idempotent=True, retries=2),
            }
        ),
        tools=[
            *(store_write, store_boom, store_key, store_nested),
            *(store_secret, store_parse, store_hidden, store_ask, store_defer),
        ],
        output_type=str,
        capabilities=[AgenToolDurability()] if durable else [],
        replace=True,
    )


class FlakyInput(BaseModel):
    operation: Literal['get']
    key: str


async def flaky_get(key: str) -> str:
    CALLS.append(f'get {key}')
    if CALLS.count(f'get {key}') < 3:
        raise ConnectionError(f'attempt {CALLS.count(f"get {key}")} failed')
    return f'got {key}'


def create_flaky() -> None:
    create_agentool(
        name='flaky',
        input_schema=FlakyInput,
        routing_config=RoutingConfig(operation_map={'get': 'flaky_get'}),
        tools=[flaky_get],
        output_type=str,
        replace=True,
    )


async def _case(case: str, call: Callable[[], Awaitable[Any]], *, steps_of: str | None = None, **extra: Any) -> None:
    """Run one case; with `steps_of`, the names of the steps that workflow id recorded too."""
    CALLS.clear()
    line: dict[str, Any] = {'case': case}
    try:
        line['output'] = await call()
    except Exception as error:
        line.update(error=type(error).__name__, message=str(error), details=getattr(error, 'details', None))
    line.update(calls=list(CALLS), **extra)
    if steps_of is not None:
        line['steps'] = [step['function_name'] for step in await DBOS.list_workflow_steps_async(steps_of)]
    sys.stdout.write(json.dumps(line, default=repr) + '\n')
    sys.stdout.flush()


async def _runs(directory: Path) -> None:
    create_store()
    create_flaky()
    private = AgenToolRegistry()
    with use_registry(private):
        create_store('private_store')
    store = durable_dbos.durable('store')
    other = durable_dbos.register(Agent(TestModel(custom_output_text='other'), name='other'))
    flaky = durable_dbos.durable(
        'flaky', step_config={'retries_allowed': True, 'max_attempts': 3, 'interval_seconds': 0.01}
    )
    mine = durable_dbos.durable('private_store', registry=private)
    # The model string of an agentool nobody registered: found missing in the workflow, at run time.
    missing = durable_dbos.register(Agent('agentool:missing', name='missing', capabilities=durable_dbos.capabilities()))
    await durable_dbos.launch(directory / 'dbos.sqlite3', polling_interval=0.05)
    run, enqueue = durable_dbos.run, durable_dbos.enqueue
    write = '{"operation": "write", "key": "k", "data": 1}'
    try:
        await _case('write', lambda: run(store, write, workflow_id='w-1'))
        await _case('write again', lambda: run(store, write, workflow_id='w-1'))
        await _case('same id, other prompt', lambda: run(store, write.replace('"k"', '"j"'), workflow_id='w-1'))
        await _case('same id, other agent', lambda: run(other, write, workflow_id='w-1'))
        await _case('enqueue: same id, other prompt', lambda: _result(enqueue(store, '{}', workflow_id='w-1')))
        await _case('enqueue', lambda: _result(enqueue(store, '{"operation": "write", "key": "q", "data": 3}')))
        await _case('unit key', lambda: run(store, '{"operation": "key"}', workflow_id='w-key'))
        await _case('nested', lambda: run(store, '{"operation": "nested"}', workflow_id='w-nested'))
        for case, agent, prompt, id in (
            ('invalid json', store, 'not json', 'w-bad'),
            ('invalid json again', store, 'not json', 'w-bad'),
            ('unknown operation', store, '{"operation": "nope"}', 'w-nope'),
            ('invalid input', store, '{"operation": "write", "data": "x"}', 'w-invalid'),
            ('unknown agentool', missing, write, 'w-missing'),
        ):
            await _case(case, partial(run, agent, prompt, workflow_id=id), steps_of=id)
        await _case('tool exception', lambda: run(store, '{"operation": "boom", "key": "x"}'))
        await _case('secret', lambda: run(store, '{"operation": "secret", "token": "s3cr3t"}'))
        await _case('json field', lambda: run(store, json.dumps({'operation': 'parse', 'payload': '{"a": 1}'})))
        await _case('excluded field', lambda: run(store, '{"operation": "hidden", "note": "given"}'))
        await _case('step retries', lambda: run(flaky, '{"operation": "get", "key": "g"}'))
        await _case('registry', lambda: run(mine, '{"operation": "write", "key": "p", "data": 2}'))
        await _case('recover', lambda: durable_dbos.recover(['nobody']))
        await _case('bad prompt', lambda: run(store, 5))  # pyright: ignore[reportArgumentType]
        await _case('bad workflow id', lambda: run(store, write, workflow_id=''))
        await _case('bad agent', lambda: run('store', write))  # pyright: ignore[reportArgumentType]
    finally:
        durable_dbos.shutdown()
    await _case('after shutdown', lambda: run(store, write))


async def _result(handle: Awaitable[Any]) -> Any:
    return await (await handle).get_result()


async def _launches(directory: Path) -> None:
    create_store()
    store = durable_dbos.durable('store')
    write = '{"operation": "write", "key": "k", "data": 1}'
    await _case('unreachable', lambda: durable_dbos.launch('postgresql://nobody@127.0.0.1:1/none'))
    await _case('launch after failure', lambda: durable_dbos.launch(directory / 'good.sqlite3'))
    try:
        await _case('run after failure', lambda: durable_dbos.run(store, write, workflow_id='w-1'))
        await _case('launch again', lambda: durable_dbos.launch(directory / 'good.sqlite3'))
        await _case('run after launch again', lambda: durable_dbos.run(store, write, workflow_id='w-1'))
        await _case('launch elsewhere', lambda: durable_dbos.launch(directory / 'other.sqlite3'))
    finally:
        durable_dbos.shutdown()


SCENES: dict[str, Callable[[Path], Coroutine[Any, Any, None]]] = {'runs': _runs, 'launches': _launches}


if __name__ == '__main__':
    asyncio.run(SCENES[sys.argv[1]](Path(sys.argv[2])))
