"""How much the injector's direct path costs: `injector.call` against hand-written routing and `run`.

Run it: `python -m bench.bench_injector [--quick]`. It prints medians of process CPU time over
interleaved repeats (`bench._timing`), and the ratios the injector is held to: the direct path at
most 1.5x the hand-written baseline. It reports and never asserts, and writes nothing.

The baseline is what one would write by hand for the same agentool: `Model.model_validate` on the
input dict, a dict from operation to tool, and a call of the tool with the fields it takes.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext

from agentool import RoutingConfig, create_agentool, use_registry
from agentool.core.handle import AgenToolHandle
from agentool.core.injector import use_injector

from ._subjects import ARITH_ROUTING, add, mul
from ._subjects import ArithInput as CalcInput
from ._timing import Plan, medians

__all__ = ('main',)


async def add_ctx(ctx: RunContext[Any], a: float, b: float) -> float:
    return a + b


async def mul_ctx(ctx: RunContext[Any], a: float, b: float) -> float:
    return a * b


@dataclass
class RelayDeps:
    calc: AgenToolHandle[float]


async def relay(ctx: RunContext[RelayDeps], operation: str, a: float, b: float) -> float:
    """Delegate to `calc` through a deps handle: one level of agentool-to-agentool call."""
    return await ctx.deps.calc({'operation': operation, 'a': a, 'b': b})


_ROUTES: dict[str, Callable[..., Awaitable[float]]] = {'add': add, 'mul': mul}
_DATA: dict[str, Any] = {'operation': 'add', 'a': 5, 'b': 3}


async def _baseline() -> float:
    validated = CalcInput.model_validate(_DATA)
    return await _ROUTES[validated.operation](a=validated.a, b=validated.b)


def _setup() -> None:
    create_agentool('calc', CalcInput, ARITH_ROUTING, [add, mul])
    ctx_routing = RoutingConfig(operation_map={'add': 'add_ctx', 'mul': 'mul_ctx'})
    create_agentool('calc_ctx', CalcInput, ctx_routing, [add_ctx, mul_ctx])
    relay_routing = RoutingConfig(operation_map={'add': 'relay', 'mul': 'relay'})
    create_agentool('relay', CalcInput, relay_routing, [relay], deps_type=RelayDeps)


async def _measure(loops: int, repeats: int) -> dict[str, float]:
    with use_registry(), use_injector() as injector:
        _setup()
        fast = await medians(
            {
                'baseline': Plan(_baseline, loops),
                'call': Plan(lambda: injector.call('calc', _DATA), loops),
                'call_ctx': Plan(lambda: injector.call('calc_ctx', _DATA), loops),
                'relay': Plan(lambda: injector.call('relay', _DATA), loops // 2),
            },
            repeats,
        )
        slow = await medians({'run': Plan(lambda: injector.run('calc', _DATA), max(loops // 200, 5))}, repeats)
    return fast | slow


def main() -> None:
    """Entry point for `python -m bench.bench_injector`."""
    parser = argparse.ArgumentParser(description='Cost of the injector direct path (reports, never asserts).')
    parser.add_argument('--quick', action='store_true', help='fewer iterations: a smoke run, too noisy to judge by')
    args = parser.parse_args()
    loops, repeats = (2_000, 3) if args.quick else (20_000, 9)
    m = asyncio.run(_measure(loops, repeats))
    base, call = m['baseline'], m['call']
    lines = [
        ('hand-written validate + route + call', base, ''),
        ('injector.call, tool without ctx', call, f'{call / base:5.2f}x baseline (target <= 1.50x)'),
        ('injector.call, tool taking ctx', m['call_ctx'], f'{m["call_ctx"] / base:5.2f}x baseline'),
        ('injector.call, relayed via a handle', m['relay'], f'{m["relay"] / call:5.2f}x one call'),
        ('injector.run, full agent graph', m['run'], f'call is {m["run"] / call:.0f}x faster'),
    ]
    print(f'median CPU time per call, {repeats} interleaved repeats')
    for label, seconds, ratio in lines:
        print(f'  {label:38s} {seconds * 1e6:9.2f} us   {ratio}')


if __name__ == '__main__':
    main()
