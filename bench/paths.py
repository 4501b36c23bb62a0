"""The call paths: direct `injector.call`, `agent.run` and `run_stream`, and a chain of three agentools."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.usage import RunUsage

from agentool import AgenToolModel, get_injector, get_registry, manager_tool, use_registry
from agentool.telemetry import operation_span

from ._subjects import PROMPT, create_arith, create_chain, functionmodel_agent, hand_written, testmodel_agent
from ._table import Row, duration
from ._timing import Plan, Scale, medians

__all__ = ('path_rows',)


async def _streamed(agent: Agent[Any, float]) -> float:
    async with agent.run_stream(PROMPT) as result:
        return await result.get_output()


async def _run(agent: Agent[Any, float]) -> float:
    return (await agent.run(PROMPT)).output


def _tools_variant() -> Agent[Any, float]:
    """The `arith` agent built with the manager tool among the agent's own tools rather than as a
    toolset of its own: evidence for the cause of a miss, not something users build."""
    manager = get_registry().get_manager('arith')
    return Agent(AgenToolModel('arith'), output_type=float, tools=[manager_tool(manager)])


async def path_rows(scale: Scale) -> list[Row]:
    """Rows for the direct path, runs against pydantic-ai's test models, streaming and the chain."""
    with use_registry():
        agent = create_arith()
        create_chain()
        injector, manager = get_injector(), get_registry().get_manager('arith')
        ctx = RunContext[Any](deps=None, model=AgenToolModel('arith'), usage=RunUsage())

        async def manager_path() -> float:
            return await manager.execute(ctx, manager.validate_json(PROMPT))

        async def untraced_span() -> None:
            with operation_span('arith', 'add'):
                pass

        async def nothing() -> None:  # the loop's own cost, taken off the span's
            pass

        fast = await medians(
            {
                'hand': Plan(hand_written, scale.fast_loops),
                'call': Plan(lambda: injector.call('arith', PROMPT), scale.fast_loops),
                'manager': Plan(manager_path, scale.fast_loops),
                'span': Plan(untraced_span, scale.fast_loops),
                'nothing': Plan(nothing, scale.fast_loops),
                'chain': Plan(lambda: injector.call('chain_top', PROMPT), scale.fast_loops // 4),
            },
            scale.repeats,
        )
        testmodel, functionmodel, variant = testmodel_agent(), functionmodel_agent(), _tools_variant()
        runs = await medians(
            {
                'run': Plan(lambda: _run(agent), scale.run_loops),
                'testmodel': Plan(lambda: _run(testmodel), scale.run_loops),
                'functionmodel': Plan(lambda: _run(functionmodel), scale.run_loops),
                'tools_variant': Plan(lambda: _run(variant), scale.run_loops),
                'stream': Plan(lambda: _streamed(agent), scale.run_loops),
                'testmodel_stream': Plan(lambda: _streamed(testmodel), scale.run_loops),
            },
            scale.repeats,
            warmup=5,
        )
    direct, chain = _direct_rows(fast)
    return [direct, *_run_rows(runs), chain]  # the order of the list


def _direct_rows(fast: dict[str, float]) -> tuple[Row, Row]:
    return (
        Row(
            benchmark='Direct path: `injector.call` vs hand-written `model_validate_json` + dict route + call',
            measured=f'{duration(fast["call"])} vs {duration(fast["hand"])}',
            ratio=fast['call'] / fast['hand'],
            target=1.5,
            cause=f'the manager alone (`validate_json` + `execute`) measures {fast["manager"] / fast["hand"]:.2f}x; '
            f'the rest ({duration(fast["call"] - fast["manager"])} per call) is `injector.call` itself, of which '
            f'the untraced telemetry span it opens (`agentool.telemetry.operation_span`, which asks OpenTelemetry '
            f'for a tracer on every call) is {duration(fast["span"] - fast["nothing"])}.',
        ),
        Row(
            benchmark='Injector: chain of three agentools (deps handles) vs one direct call',
            measured=f'{duration(fast["chain"])} vs {duration(fast["call"])}',
            ratio=fast['chain'] / fast['call'],
            target=3.5,
            cause=f'three direct calls cost 3x by construction; each delegating hop adds '
            f'{duration((fast["chain"] - 3 * fast["call"]) / 2)} more: its typed deps (the handle) and a '
            "`RunContext` are built for the tool, and the handle's dict input is serialised to JSON and validated "
            'again by the next agentool.',
        ),
    )


def _run_rows(runs: dict[str, float]) -> list[Row]:
    toolset_cause = (
        f'`create_agentool` gives the agent the manager tool as a toolset of its own (`toolsets=[...]`), so '
        f'every step merges two toolsets; the same agent with the manager among its `tools=[...]` measures '
        f'{runs["tools_variant"] / runs["testmodel"]:.2f}x against `TestModel` here.'
    )
    return [
        Row(
            benchmark='`agent.run` vs the same two steps driven by `TestModel`',
            measured=f'{duration(runs["run"])} vs {duration(runs["testmodel"])}',
            ratio=runs['run'] / runs['testmodel'],
            target=1.0,
            cause=toolset_cause,
        ),
        Row(
            benchmark='`agent.run` vs the same two steps driven by `FunctionModel` (a plain function)',
            measured=f'{duration(runs["run"])} vs {duration(runs["functionmodel"])}',
            ratio=runs['run'] / runs['functionmodel'],
            target=0.85,
            cause=f"nearly all of a run is pydantic-ai's agent graph, the same for both agents (agentool's own "
            f"model and routing code is about 1% of a profiled run); `FunctionModel`'s extra cost over "
            f'`TestModel` (running the function in a thread) is {runs["functionmodel"] / runs["testmodel"]:.2f}x '
            f"here, so 0.85x would need a run cheaper than pydantic-ai's own for the same steps. "
            f'With the toolset fix above: {runs["tools_variant"] / runs["functionmodel"]:.2f}x.',
        ),
        Row(
            benchmark="`agent.run_stream` vs `agent.run` (target: pydantic-ai's own ratio, `TestModel`)",
            measured=f'{duration(runs["stream"])} vs {duration(runs["run"])}',
            ratio=runs['stream'] / runs['run'],
            target=round(runs['testmodel_stream'] / runs['testmodel'], 2),
        ),
    ]
