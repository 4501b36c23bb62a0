"""Offline evaluation: a recorded case scored by replay vs the same case run live on `FunctionModel`.

The case is the cassette benchmark's run (a plain agent with two tools, three requests). The
subject is what `agentool.testing.evals.span_tree` does per case: replay the cassette through the
instrumented agent (model answered by `CassetteModel`, tools by the recording) and build
pydantic-evals' `SpanTree`. The baseline runs the same agent live on the scripted `FunctionModel`,
its tools running, instrumented the same way, and builds the same tree: what evaluating the case
live costs when the model costs nothing. Needs pydantic-evals (the `evals` extra); no row without it.
"""

from __future__ import annotations

import importlib.util

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from agentool.testing import Cassette, CassetteModel, CassetteTools

from ._table import Row, duration
from ._timing import Plan, Scale, ratio, samples
from .cassette import PROMPT, run_weather, script, weather_agent

__all__ = ('evals_rows',)


async def evals_rows(scale: Scale) -> list[Row]:
    """Scoring a recorded case offline vs running it live, repeat by repeat."""
    if importlib.util.find_spec('pydantic_evals') is None:
        return []
    from pydantic_evals.otel.span_tree import SpanTree

    from agentool.testing.evals import span_tree

    cassette = Cassette()
    model = CassetteModel(FunctionModel(script), cassette=cassette, mode='all')
    await weather_agent(model).run(PROMPT, capabilities=[CassetteTools(model)])
    replayed, live = weather_agent(FunctionModel(script)), weather_agent(FunctionModel(script))

    async def offline() -> SpanTree:
        return await span_tree(replayed, cassette)

    async def online() -> SpanTree:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        settings = InstrumentationSettings(tracer_provider=provider)
        await live.run(PROMPT, capabilities=[Instrumentation(settings)])
        tree = SpanTree()
        tree.add_readable_spans(list(exporter.get_finished_spans()))
        return tree

    await run_weather(live)  # the live side answers as recorded
    taken = await samples(
        {'offline': Plan(offline, scale.run_loops), 'live': Plan(online, scale.run_loops)},
        max(3, scale.repeats),
        warmup=5,
    )
    row = ratio(taken, 'offline', 'live')
    return [
        Row(
            benchmark='Offline evaluation of a recorded case (replay to a span tree) vs the case run live '
            'on `FunctionModel`',
            measured=f'{duration(row.subject)} vs {duration(row.baseline)}; per-repeat ratios {row.spread}',
            ratio=row.median,
            target=1.5,
            cause='each replayed request is fingerprinted to find its exchange and each tool call is '
            'looked up by canonical arguments, on top of the same instrumented run.',
        )
    ]


if __name__ == '__main__':
    import asyncio

    from ._table import render_markdown

    print(render_markdown(asyncio.run(evals_rows(Scale()))), end='')
