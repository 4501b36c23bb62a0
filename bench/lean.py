"""Lean runs: `agent.run` answered without the agent graph, against pydantic-ai's `TestModel` and the graph.

Also the direct path for tools that take a `RunContext`, against the same code written by hand
(which has a context at hand). Every ratio is taken repeat by repeat (the two steps of a pair are
measured next to each other) and reported as the median with the range over the repeats.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.usage import RunUsage

from agentool import AgenToolModel, RoutingConfig, create_agentool, get_injector, use_registry

from ._subjects import PROMPT, ArithInput, create_arith, hand_written, testmodel_agent
from ._table import Row, duration
from ._timing import Plan, Ratio, Scale, ratio, samples

__all__ = ('lean_rows',)


async def _run(agent: Agent[Any, float]) -> float:
    return (await agent.run(PROMPT)).output


async def ctx_add(ctx: RunContext[Any], a: float, b: float) -> float:
    """Add two numbers (takes a context)."""
    return a + b


async def ctx_mul(ctx: RunContext[Any], a: float, b: float) -> float:
    """Multiply two numbers (takes a context)."""
    return a * b


_CTX_ROUTES: dict[str, Callable[..., Awaitable[float]]] = {'add': ctx_add, 'mul': ctx_mul}
_CTX = RunContext[Any](deps=None, model=AgenToolModel('arith_ctx'), usage=RunUsage())


async def hand_written_ctx() -> float:
    """The hand-written baseline for tools taking a context: the caller already has one."""
    validated = ArithInput.model_validate_json(PROMPT)
    return await _CTX_ROUTES[validated.operation](_CTX, a=validated.a, b=validated.b)


def _measured(r: Ratio) -> str:
    return f'{duration(r.subject)} vs {duration(r.baseline)}; per-repeat ratios {r.spread}'


async def lean_rows(scale: Scale) -> list[Row]:
    """Lean run vs `TestModel` and vs the forced graph; the direct path with and without a context."""
    with use_registry():
        lean, graph, testmodel = create_arith(), create_arith('arith_graph'), testmodel_agent()
        graph.lean = False
        routing = RoutingConfig(operation_map={'add': 'ctx_add', 'mul': 'ctx_mul'})
        create_agentool('arith_ctx', ArithInput, routing, [ctx_add, ctx_mul])
        await lean.run(PROMPT)  # the first run shows the agent's shape; later runs are lean
        repeats = max(3, scale.repeats)
        runs = await samples(
            {
                'lean': Plan(lambda: _run(lean), scale.run_loops * 20),
                'graph': Plan(lambda: _run(graph), scale.run_loops),
                'testmodel': Plan(lambda: _run(testmodel), scale.run_loops),
            },
            repeats,
            warmup=5,
        )
        injector = get_injector()
        direct = await samples(
            {
                'hand': Plan(hand_written, scale.fast_loops),
                'call': Plan(partial(injector.call, 'arith', PROMPT), scale.fast_loops),
                'hand_ctx': Plan(hand_written_ctx, scale.fast_loops),
                'call_ctx': Plan(partial(injector.call, 'arith_ctx', PROMPT), scale.fast_loops),
            },
            repeats,
        )
        assert lean.lean_runs > 0
        assert graph.lean_runs == 0
    vs_testmodel, vs_graph = ratio(runs, 'lean', 'testmodel'), ratio(runs, 'lean', 'graph')
    graph_row = ratio(runs, 'graph', 'testmodel')
    no_ctx, with_ctx = ratio(direct, 'call', 'hand'), ratio(direct, 'call_ctx', 'hand_ctx')
    return [
        Row(
            benchmark='Lean `agent.run` vs a bare pydantic-ai agent doing the same call with `TestModel`',
            measured=_measured(vs_testmodel),
            ratio=vs_testmodel.median,
            target=0.1,
            cause="a lean run is answered from a capability's `wrap_run` (pydantic-ai's public hook), so it pays "
            "pydantic-ai's run setup before that hook (capabilities, toolsets, the run context, the lifecycle "
            'task): nearly all of its cost. The answer itself (validate, route, call, five messages, the '
            '`AgentRunResult`) is a few dozen microseconds.',
        ),
        Row(
            benchmark='Lean `agent.run` vs the same agentool forced through the graph (`lean=False`)',
            measured=_measured(vs_graph),
            ratio=vs_graph.median,
            target=0.1,
            cause='see the row above: the run setup before `wrap_run` is the graph run setup.',
        ),
        Row(
            benchmark='Graph path (the fallback) vs `TestModel`, repeat by repeat',
            measured=_measured(graph_row),
            ratio=graph_row.median,
            target=1.0,
            cause="nearly all of a graph run is pydantic-ai's agent graph, the same for both agents.",
        ),
        Row(
            benchmark='Direct path, tools without a context: `injector.call` vs hand-written',
            measured=_measured(no_ctx),
            ratio=no_ctx.median,
            target=1.5,
            cause='see the direct path row above for what the call adds.',
        ),
        Row(
            benchmark='Direct path, tools taking a `RunContext`: `injector.call` vs hand-written (context at hand)',
            measured=_measured(with_ctx),
            ratio=with_ctx.median,
            target=1.5,
            cause='the direct path makes a `RunContext` per call, a shallow copy (`copy.copy`) of one built once per '
            "agentool by pydantic-ai's constructor, with its own `deps`, `prompt`, `usage` and `messages` (the "
            'constructor itself costs several times a whole call); the hand-written code reuses one context. The '
            'rest is what every direct call pays (see the row above).',
        ),
    ]
