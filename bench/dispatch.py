"""Dispatch before the model: what a dispatched turn costs, and what dispatch adds to a turn it declines.

Four agents run the same prompts in interleaved repeats: the `arith` agentool's own agent
(`agent.run` through pydantic-ai's graph with the agentool model, `lean=False`: a lean run answers
without the graph and is measured in bench/lean.py), a plain agent whose `TestModel` answers in one request, the
same plain agent with `DispatchCapability` in front (a JSON rule for `arith` and a command rule),
given either the agentool's JSON prompt (dispatched) or free text (declined, so the model answers).
Each row reports the median ratio and, in brackets, the lowest and highest per-repeat ratio.
"""

from __future__ import annotations

import statistics
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from agentool import use_registry
from agentool.dispatch import CommandRule, DispatchCapability, JsonRule

from ._subjects import PROMPT, create_arith
from ._table import Row, duration
from ._timing import Plan, Scale, samples

__all__ = ('dispatch_rows',)

FREE_TEXT = 'What is five plus three?'


def _model_agent(*, dispatch: bool) -> Agent[None, Any]:
    """A plain agent answering in one `TestModel` request, with dispatch in front or not."""
    capabilities: list[DispatchCapability] = []
    if dispatch:
        rules = [
            CommandRule(name='add', pattern=r'/add\s+(?P<a>\S+)\s+(?P<b>\S+)', agentool='arith', operation='add'),
            JsonRule(name='arith-json', agentool='arith'),
        ]
        capabilities.append(DispatchCapability(rules))
    return Agent(TestModel(call_tools=[], custom_output_text='8.0'), output_type=str, capabilities=capabilities)


def _row(benchmark: str, taken: dict[str, list[float]], subject: str, baseline: str, target: float, cause: str) -> Row:
    ratios = [s / b for s, b in zip(taken[subject], taken[baseline], strict=True)]
    median_s, median_b = statistics.median(taken[subject]), statistics.median(taken[baseline])
    return Row(
        benchmark=benchmark,
        measured=f'{duration(median_s)} vs {duration(median_b)} '
        f'(per-repeat ratio {min(ratios):.2f} to {max(ratios):.2f}x, {len(ratios)} repeats)',
        ratio=median_s / median_b,
        target=target,
        cause=cause,
    )


async def dispatch_rows(scale: Scale) -> list[Row]:
    """Rows for a dispatched turn (vs `agent.run` and a `TestModel` turn) and for a declined one."""
    with use_registry():
        agentool_agent = create_arith()
        # Lean runs answer a plain `agent.run` without the graph (bench/lean.py); a dispatched turn
        # runs inside another agent's run, so the comparable cost is the agentool's graph run.
        agentool_agent.lean = False
        plain, dispatching = _model_agent(dispatch=False), _model_agent(dispatch=True)
        dispatched = await dispatching.run(PROMPT)
        assert dispatched.usage.requests == 0, 'the JSON prompt must be dispatched'

        async def run_agentool() -> object:
            return (await agentool_agent.run(PROMPT)).output

        async def run_dispatched() -> object:
            return (await dispatching.run(PROMPT)).output

        async def run_declined() -> object:
            return (await dispatching.run(FREE_TEXT)).output

        async def run_plain() -> object:
            return (await plain.run(FREE_TEXT)).output

        taken = await samples(
            {
                'dispatched': Plan(run_dispatched, scale.run_loops),
                'agentool': Plan(run_agentool, scale.run_loops),
                'model': Plan(run_plain, scale.run_loops),
                'declined': Plan(run_declined, scale.run_loops),
            },
            scale.repeats,
            warmup=5,
        )
    return [
        _row(
            'Dispatch: a dispatched turn vs the same agentool through its own `agent.run` on the graph (`lean=False`)',
            taken,
            'dispatched',
            'agentool',
            0.5,
            'a dispatched turn still pays for pydantic-ai setting up the run before `wrap_run`.',
        ),
        _row(
            'Dispatch: a dispatched turn vs a one-request model turn with `TestModel`',
            taken,
            'dispatched',
            'model',
            0.5,
            'a dispatched turn still pays for pydantic-ai setting up the run before `wrap_run`.',
        ),
        _row(
            'Dispatch: a declined turn (rules tried, then the model) vs the same agent without dispatch',
            taken,
            'declined',
            'model',
            1.1,
            'trying the rules and opening the decision span cost more than a tenth of a model turn.',
        ),
    ]
