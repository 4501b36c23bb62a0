"""Crash and resume on DBOS: an order pipeline killed mid-way finishes after a restart, no step repeated.

`python -m examples.durable DIRECTORY` runs the scene (`make demo` runs it): a worker process runs
the `order` agentool's `place` operation as a durable workflow — reserve, charge, ship, each one a
journaled DBOS step writing to a SQLite store — and is SIGKILLed as it starts to charge. A second
worker launched on the same DBOS database recovers the workflow: reserve is replayed from the
journal, charge and ship run once. `python -m examples.durable worker DIRECTORY [--crash]` is one
worker. Needs the `dbos` extra.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from agentool import Route, RoutingConfig, create_agentool, get_injector
from agentool.dbos import durable, launch, run, shutdown
from examples.storage import default_store

CRASH_ENV = 'AGENTOOL_DEMO_CRASH_AT'


class OrderInput(BaseModel):
    operation: Literal['place', 'reserve', 'charge', 'ship']
    order_id: str


class OrderStep(BaseModel):
    order_id: str
    step: str


async def _step(order_id: str, step: str) -> OrderStep:
    if os.environ.get(CRASH_ENV) == step:
        print(f'  [worker {os.getpid()}] {step}: killed (SIGKILL) before it took effect', flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    await default_store().write(f'order/{order_id}/{step}', True)
    print(f'  [worker {os.getpid()}] {step}: done', flush=True)
    return OrderStep(order_id=order_id, step=step)


async def order_reserve(order_id: str) -> OrderStep:
    """Reserve the stock (a side effect: one store write)."""
    return await _step(order_id, 'reserve')


async def order_charge(order_id: str) -> OrderStep:
    """Charge the customer (a side effect: one store write)."""
    return await _step(order_id, 'charge')


async def order_ship(order_id: str) -> OrderStep:
    """Ship the parcel (a side effect: one store write)."""
    return await _step(order_id, 'ship')


async def order_place(order_id: str) -> OrderStep:
    """Run reserve, charge and ship; each call through the injector is one durable step."""
    injector = get_injector()
    for step in ('reserve', 'charge', 'ship'):
        await injector.call('order', {'operation': step, 'order_id': order_id})
    return OrderStep(order_id=order_id, step='placed')


def create_order() -> None:
    """Register the `order` agentool."""
    create_agentool(
        name='order',
        input_schema=OrderInput,
        routing_config=RoutingConfig(
            operation_map={
                # Orchestration: it runs in the workflow itself, and the calls it makes are the steps.
                'place': Route(tool='order_place', durable=False),
                'reserve': 'order_reserve',
                'charge': 'order_charge',
                'ship': 'order_ship',
            }
        ),
        tools=[order_place, order_reserve, order_charge, order_ship],
        output_type=OrderStep,
        replace=True,
    )


async def worker(directory: Path) -> None:
    """One worker's life: launch DBOS on DIRECTORY (recovering what a dead worker left), place order 42."""
    create_order()
    agent = durable('order')
    await launch(directory / 'dbos.sqlite3')
    try:
        placed = await run(agent, '{"operation": "place", "order_id": "42"}', workflow_id='order-42')
        print(f'  [worker {os.getpid()}] workflow order-42 -> {placed!r}', flush=True)
    finally:
        shutdown()


def scene(directory: Path) -> None:
    """Kill a worker mid-pipeline, start another, and show what ran where."""
    env = {**os.environ, 'AGENTOOL_STORAGE_PATH': str(directory / 'store.sqlite3')}
    command = [sys.executable, '-m', 'examples.durable', 'worker', str(directory)]
    print('durable order pipeline on DBOS (SQLite); the first worker is killed at charge:')
    first = subprocess.run(command, env={**env, CRASH_ENV: 'charge'}, check=False)
    print(f'  first worker exited with signal {-first.returncode}')
    print('a new worker launches on the same database and recovers the workflow:')
    subprocess.run(command, env=env, check=True)


def main() -> None:
    """`python -m examples.durable DIRECTORY` runs the scene; `... worker DIRECTORY` is one worker."""
    if sys.argv[1] == 'worker':
        asyncio.run(worker(Path(sys.argv[2])))
    else:
        scene(Path(sys.argv[1]))


if __name__ == '__main__':
    main()
