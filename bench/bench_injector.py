"""How much the injector's direct path costs: `injector.call` against hand-written routing and `run`.

Run it: `python -m bench.bench_injector [--quick]`. It prints medians of process CPU time over
interleaved repeats (`bench._timing`), and the ratios the injector is held to: the direct path at
most 1.5x the hand-written baseline. It reports and never asserts, and writes nothing.

The baseline is what one would write by hand for the same agentool: `Model.model_validate_json` on
the JSON text (or `Model.model_validate` on a dict), a dict from operation to tool, and a call of the
tool with the fields it takes. A dict given to `call` is serialised to JSON first, so that its
validation, size limit and `ctx.prompt` are exactly those of `run`; that costs extra, reported apart.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic_ai import RunContext

from agentool import AgenToolHandle, RoutingConfig, create_agentool, use_registry
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
_TEXT = '{"operation": "add", "a": 5, "b": 3}'


async def _baseline() -> float:
    validated = CalcInput.model_validate_json(_TEXT)
    return await _ROUTES[validated.operation](a=validated.a, b=validated.b)


async def _baseline_dict() -> float:
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
                'call': Plan(partial(injector.call, 'calc', _TEXT), loops),
                'baseline_dict': Plan(_baseline_dict, loops),
                'call_dict': Plan(partial(injector.call, 'calc', _DATA), loops),
                'call_ctx': Plan(partial(injector.call, 'calc_ctx', _TEXT), loops),
                'relay': Plan(partial(injector.call, 'relay', _TEXT), loops // 2),
            },
            repeats,
        )
        slow = await medians({'run': Plan(lambda: injector.run('calc', _TEXT), max(loops // 200, 5))}, repeats)
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
        ('hand-written, dict input', m['baseline_dict'], ''),
        ('injector.call, dict input', m['call_dict'], f'{m["call_dict"] / m["baseline_dict"]:5.2f}x dict baseline'),
        ('injector.call, tool taking ctx', m['call_ctx'], f'{m["call_ctx"] / base:5.2f}x baseline'),
        ('injector.call, relayed via a handle', m['relay'], f'{m["relay"] / call:5.2f}x one call'),
        ('injector.run, full agent graph', m['run'], f'call is {m["run"] / call:.0f}x faster'),
    ]
    print(f'median CPU time per call, {repeats} interleaved repeats')
    for label, seconds, ratio in lines:
        print(f'  {label:38s} {seconds * 1e6:9.2f} us   {ratio}')


if __name__ == '__main__':
    main()
