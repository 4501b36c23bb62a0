"""Timing primitives shared by the benchmarks: CPU time per call, interleaved repeats, medians.

Every benchmark reports a ratio of two steps measured in the same process, so what matters is
that both see the same conditions. Steps are therefore interleaved (repeat 1 of every step, then
repeat 2, ...), so drift in machine load hits them alike, and timed in CPU time of this process
(`time.process_time`), so other work on a shared machine does not count against either.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

__all__ = ('Step', 'Plan', 'Scale', 'QUICK', 'per_call', 'samples', 'medians', 'Ratio', 'ratio')

Step = Callable[[], Awaitable[object]]
"""One unit of work: a coroutine function taking no arguments."""


@dataclass(frozen=True, kw_only=True)
class Scale:
    """How much to measure: the full bench, or a quick smoke run with the same code paths."""

    repeats: int = 7
    """Interleaved samples per step; the median is reported."""
    fast_loops: int = 20_000
    """Calls per sample for microsecond steps (direct path, hand-written baseline)."""
    run_loops: int = 60
    """Calls per sample for millisecond steps (agent runs)."""
    registry_sizes: tuple[int, ...] = (100, 1_000, 10_000)
    memory_agentools: int = 500
    concurrent_runs: int = 1_000
    import_repeats: int = 7


QUICK = Scale(
    repeats=3,
    fast_loops=1_000,
    run_loops=5,
    registry_sizes=(10, 100, 300),
    memory_agentools=50,
    concurrent_runs=100,
    import_repeats=3,
)
"""A smoke run: every benchmark once, in seconds; its ratios are too noisy to judge targets by."""


@dataclass(frozen=True)
class Plan:
    """How to time one step: `loops` calls per sample."""

    step: Step
    loops: int


async def per_call(step: Step, loops: int) -> float:
    """CPU seconds per call of `step`, over `loops` calls in a row."""
    gc.collect()  # a collection owed by the previous sample must not land in this one
    start = time.process_time()
    for _ in range(loops):
        await step()
    return (time.process_time() - start) / loops


async def samples(plans: Mapping[str, Plan], repeats: int, *, warmup: int = 20) -> dict[str, list[float]]:
    """CPU seconds per call of each plan, one sample per repeat; repeats are interleaved across plans."""
    if warmup:
        for plan in plans.values():  # warm caches, lazy imports and first-call code paths
            await per_call(plan.step, warmup)
    taken: dict[str, list[float]] = {name: [] for name in plans}
    for _ in range(repeats):
        for name, plan in plans.items():
            taken[name].append(await per_call(plan.step, plan.loops))
    return taken


async def medians(plans: Mapping[str, Plan], repeats: int, *, warmup: int = 20) -> dict[str, float]:
    """The median CPU seconds per call of each plan, over `repeats` interleaved samples."""
    taken = await samples(plans, repeats, warmup=warmup)
    return {name: statistics.median(values) for name, values in taken.items()}


@dataclass(frozen=True)
class Ratio:
    """A ratio over interleaved repeats: the median of the per-repeat ratios, and their spread."""

    median: float
    low: float
    high: float
    subject: float
    """The subject's median seconds (for context)."""
    baseline: float

    @property
    def spread(self) -> str:
        """The range of the per-repeat ratios, e.g. `0.007 to 0.009x`."""
        return f'{self.low:.3f} to {self.high:.3f}x'


def ratio(taken: Mapping[str, list[float]], subject: str, baseline: str) -> Ratio:
    """`subject / baseline` repeat by repeat (each pair measured next to each other)."""
    ratios = [s / b for s, b in zip(taken[subject], taken[baseline], strict=True)]
    return Ratio(
        median=statistics.median(ratios),
        low=min(ratios),
        high=max(ratios),
        subject=statistics.median(taken[subject]),
        baseline=statistics.median(taken[baseline]),
    )
