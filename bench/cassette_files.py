"""Cassette files: the size and load time of a long run's cassette and of a large one, against the
layout of format version 1 (every exchange holding the whole history so far, two-space indent).

Two cassettes are recorded in memory through a `FunctionModel` (async, so no thread):

- a *30-request run*: an agent whose model calls a `lookup` tool 29 times, then answers;
- a *1,000-exchange cassette*: 100 runs of 10 requests each, one prompt per run (a suite's worth).

Each is written by `Cassette.save` and, as the baseline, in the version-1 layout (the same data,
each request whole, indented by two): what this file held before requests became deltas. Both
files load with `Cassette.load`, so their load times compare directly.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool.testing import Cassette, CassetteModel

from ._table import Row, duration, size
from ._timing import Plan, Scale, ratio, samples

__all__ = ('LONG_RUN', 'ANSWER', 'long_run_agent', 'long_run_script', 'cassette_file_rows', 'version_1_text')

LONG_RUN = 30
"""Requests in the long run: 29 tool calls, then the answer."""
ANSWER = 'All items checked.'


async def long_run_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call `lookup` once per request until the last one, then answer."""
    answered = sum(isinstance(message, ModelResponse) for message in messages)
    if answered < LONG_RUN - 1:
        return ModelResponse(parts=[ToolCallPart('lookup', {'item': answered}, tool_call_id=f'call_{answered}')])
    return ModelResponse(parts=[TextPart(ANSWER)])


def long_run_agent(model: Any) -> Agent[None, str]:
    """An agent with one tool returning a small record per item, as a catalogue lookup would."""
    agent = Agent(model, output_type=str, instructions='Check every item in the catalogue, one lookup per item.')

    @agent.tool_plain
    def lookup(item: int) -> dict[str, Any]:
        """The catalogue record of an item."""
        return {'item': item, 'name': f'item {item}', 'price': 10 + item, 'in_stock': item % 3 != 0}

    return agent


async def _long_run(cassette: Cassette) -> None:
    agent = long_run_agent(CassetteModel(FunctionModel(long_run_script), cassette=cassette, mode='all'))
    assert (await agent.run('Check the catalogue.')).output == ANSWER


_RUNS, _PER_RUN = 100, 10


async def _suite_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    answered = sum(isinstance(message, ModelResponse) for message in messages)
    if answered < _PER_RUN - 1:
        return ModelResponse(parts=[ToolCallPart('lookup', {'item': answered}, tool_call_id=f'call_{answered}')])
    return ModelResponse(parts=[TextPart(f'Done after {answered} lookups.')])


async def _suite(cassette: Cassette) -> None:
    agent = long_run_agent(CassetteModel(FunctionModel(_suite_script), cassette=cassette, mode='new_episodes'))
    for index in range(_RUNS):
        await agent.run(f'Check the catalogue for order {index}.')


def version_1_text(cassette: Cassette) -> str:
    """The cassette as format version 1 wrote it: every request whole, two-space indent."""
    data = cassette.model_dump(mode='json', exclude={'runs', 'toolsets'})
    data['version'] = 1
    for exchange in data['exchanges']:
        exchange.pop('types', None)  # version 2's own field
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + '\n'


async def _rows_for(name: str, cassette: Cassette, folder: Path, scale: Scale, size_target: float) -> list[Row]:
    old, new = folder / f'{name}-v1.json', folder / f'{name}.json'
    old.write_text(version_1_text(cassette), encoding='utf-8')
    cassette.save(new)
    old_size, new_size = old.stat().st_size, new.stat().st_size
    assert Cassette.load(old).model_dump() == Cassette.load(new).model_dump()

    async def load_old() -> None:
        Cassette.load(old)

    async def load_new() -> None:
        Cassette.load(new)

    loops = max(1, scale.run_loops // 10)
    taken = await samples({'new': Plan(load_new, loops), 'old': Plan(load_old, loops)}, max(3, scale.repeats), warmup=2)
    loaded = ratio(taken, 'new', 'old')
    exchanges = len(cassette.exchanges)
    return [
        Row(
            benchmark=f'Cassette file size, {name} ({exchanges} exchanges): written vs the version-1 layout',
            measured=f'{size(new_size)} vs {size(old_size)}',
            ratio=new_size / old_size,
            target=size_target,
            cause='every exchange still holds what is new in its request, and its response.',
        ),
        Row(
            benchmark=f'Cassette load time (`Cassette.load`), {name}: written vs the version-1 layout',
            measured=f'{duration(loaded.subject)} vs {duration(loaded.baseline)}; per-repeat ratios {loaded.spread}',
            ratio=loaded.median,
            target=1.0,
            cause='rebuilding each request from the one it continues costs more than the JSON it saves.',
        ),
    ]


async def cassette_file_rows(scale: Scale) -> list[Row]:
    """Size and load time of the two cassettes, written vs the version-1 layout."""
    long_run, suite = Cassette(), Cassette()
    await _long_run(long_run)
    assert len(long_run.exchanges) == LONG_RUN
    await _suite(suite)
    assert len(suite.exchanges) == _RUNS * _PER_RUN
    with tempfile.TemporaryDirectory(prefix='agentool-bench-') as temporary:
        folder = Path(temporary)
        return [
            *await _rows_for('a 30-request run', long_run, folder, scale, 0.5),
            *await _rows_for('a 1,000-exchange cassette', suite, folder, scale, 0.5),
        ]


if __name__ == '__main__':
    import asyncio

    from ._table import render_markdown

    print(render_markdown(asyncio.run(cassette_file_rows(Scale()))), end='')
