"""Throughput of many concurrent runs against the same runs one after another."""

from __future__ import annotations

import asyncio
import gc
import statistics
from functools import partial
from typing import Any

from pydantic_ai import Agent

from agentool import use_registry

from ._subjects import PROMPT, create_arith, testmodel_agent
from ._table import Row, duration
from ._timing import Plan, Scale, medians, ratio, samples

__all__ = ('concurrency_row',)


def _plans(agent: Agent[Any, float], n: int) -> dict[str, Plan]:
    async def sequential() -> None:
        for _ in range(n):
            await agent.run(PROMPT)

    async def concurrent() -> None:
        await asyncio.gather(*(agent.run(PROMPT) for _ in range(n)))

    async def concurrent_without_gc() -> None:
        # Diagnosis only (the target is with default GC settings): what the cyclic GC adds to the batch.
        gc.disable()
        try:
            await concurrent()
        finally:
            gc.enable()

    return {
        'sequential': Plan(sequential, 1),
        'concurrent': Plan(concurrent, 1),
        'concurrent_without_gc': Plan(concurrent_without_gc, 1),
    }


async def concurrency_row(scale: Scale) -> Row:
    """`scale.concurrent_runs` runs gathered at once vs the same runs awaited in turn.

    The same is measured once for a bare pydantic-ai agent driven by `TestModel`, so a miss can
    be told apart: ours, or the framework's.
    """
    n = scale.concurrent_runs
    with use_registry():
        agent, bare = create_arith(), testmodel_agent()
        for _ in range(5):  # warm up code paths; a whole batch per warm-up would double the cost
            await agent.run(PROMPT)
            await bare.run(PROMPT)
        taken = await samples(_plans(agent, n), max(3, scale.repeats // 2), warmup=0)
        ours = {name: statistics.median(values) for name, values in taken.items()}
        per_repeat = ratio(taken, 'sequential', 'concurrent')  # throughput: the inverse of the time ratio
        theirs = await medians(_plans(bare, n), 1, warmup=0)
        # What gathering alone costs: the same number of tasks around a coroutine that does nothing.
        tasks_only = await medians({'noop': Plan(partial(_gather_noops, n), 1)}, 3, warmup=0)
    # Throughput is runs per second, so its ratio is the inverse of the time ratio.
    bare_ratio = theirs['sequential'] / theirs['concurrent']
    per_run, per_task = ours['sequential'] / n, tasks_only['noop'] / n
    gc_cost = (ours['concurrent'] - ours['concurrent_without_gc']) / n
    return Row(
        benchmark=f'{n:,} concurrent lean runs: throughput vs the same runs in sequence',
        measured=f'{n / ours["concurrent"]:,.0f} vs {n / ours["sequential"]:,.0f} runs/s '
        f'({duration(ours["concurrent"])} vs {duration(ours["sequential"])} per batch); '
        f'per-repeat ratios {per_repeat.spread}',
        ratio=per_repeat.median,
        target=0.9,
        kind='at_least',
        cause=f'a lean run takes {duration(per_run)}, and `asyncio.gather` alone costs {duration(per_task)} per task '
        f'(a task around a coroutine that does nothing, measured in this run), so even with nothing else in the '
        f'way the ratio could reach only {per_run / (per_run + per_task):.2f}x. The cyclic GC adds {duration(gc_cost)} '
        f'a run (the same batch with the GC off, measured here): it scans the results and tasks the batch keeps alive '
        f'until it ends; the remainder (not broken down further) comes with a thousand runs in flight instead of one. '
        f'For comparison, a bare pydantic-ai '
        f'agent driven by `TestModel` measures {bare_ratio:.2f}x here at {duration(theirs["sequential"] / n)} a run.',
    )


async def _noop() -> None:
    pass


async def _gather_noops(n: int) -> None:
    await asyncio.gather(*(_noop() for _ in range(n)))
