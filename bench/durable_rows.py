"""What one durable operation costs on DBOS (SQLite), against the engine's floor and pydantic-ai's own.

Rows, each the median wall time per run of interleaved rounds with its spread (min-max):

- **agentool vs bare DBOS**: `agentool.dbos.durable('adder')` + `run` against a bare `@DBOS.workflow`
  calling one `@DBOS.step` that adds (the floor for one journaled effect). Target <= 1.2x.
- **agentool vs pydantic-ai's DBOS**: the same against a pydantic-ai agent (`TestModel` calling
  a function tool `add` once) with `DBOSDurability`, in a workflow. Target <= 1.0x.
- **model string**: `Agent('agentool:adder', capabilities=capabilities())` + `run`, against the floor.
- **LLM agent + AgenToolToolset**: a `TestModel` agent calling `adder_add` with `capabilities()`,
  against pydantic-ai's own DBOS run of the same agent (`DBOSDurability` only, so its tool call is
  not journaled); the excess over one journaled step (a bare workflow with one step less one
  without) is what the agentool adds beyond the step it is there for.

Each sample is timed twice: wall time (what a caller waits, including the journal's fsyncs, but
also whatever else the machine runs) and this process's CPU time (DBOS's threads included, steadier
on a shared machine). Ratios are taken per round, then their median and spread are reported.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from dbos import DBOS
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.models.test import TestModel

import agentool.dbos as durable_dbos
from agentool import RoutingConfig, create_agentool
from agentool.toolset import AgenToolToolset

__all__ = ('PROMPT', 'Rows', 'add', 'create_adder', 'measure', 'ms', 'ratio', 'report')

PROMPT = '{"operation": "add", "a": 2, "b": 3}'

Subject = Callable[[], Awaitable[Any]]
Rows = dict[str, list[float]]
"""Seconds per run of each subject, one sample per round."""


class _AddInput(BaseModel):
    operation: Literal['add']
    a: int
    b: int


async def _add(a: int, b: int) -> int:
    return a + b


async def add(a: int, b: int) -> int:
    """Add two numbers (pydantic-ai's function tool)."""
    return a + b


@DBOS.step(name='bench.add')
async def _add_step(a: int, b: int) -> int:
    return a + b


@DBOS.workflow(name='bench.bare_step')
async def _bare_step(a: int, b: int) -> int:
    return await _add_step(a, b)


@DBOS.workflow(name='bench.bare_empty')
async def _bare_empty(a: int, b: int) -> int:
    return a + b


_pydantic_agents: dict[str, Agent[None, Any]] = {}


@DBOS.workflow(name='bench.pydantic_ai')
async def _pydantic_ai_run(name: str, prompt: str) -> Any:
    return (await _pydantic_agents[name].run(prompt)).output


def create_adder(name: str = 'adder') -> None:
    """Register the agentool every durable bench row runs: `add` two numbers, one operation."""
    create_agentool(
        name=name,
        input_schema=_AddInput,
        routing_config=RoutingConfig(operation_map={'add': '_add'}),
        tools=[_add],
        output_type=int,
        replace=True,
    )


def _subjects() -> dict[str, Subject]:
    create_adder()
    agentool_agent = durable_dbos.durable('adder')
    model_string = durable_dbos.register(
        Agent('agentool:adder', name='adder_string', capabilities=durable_dbos.capabilities())
    )
    llm_agentool = durable_dbos.register(
        Agent(
            TestModel(call_tools=['adder_add']),
            name='llm_agentool',
            toolsets=[AgenToolToolset(include=['adder'], id='agentools')],
            capabilities=durable_dbos.capabilities(),
        )
    )
    _pydantic_agents['pydantic_ai'] = Agent(
        TestModel(call_tools=['add']),
        name='pydantic_ai_adder',
        tools=[add],
        capabilities=[DBOSDurability(parallel_execution_mode='sequential')],
    )
    # The same LLM agent with pydantic-ai's durability alone: its agentool call is not journaled.
    _pydantic_agents['llm_pydantic_ai'] = Agent(
        TestModel(call_tools=['adder_add']),
        name='llm_pydantic_ai',
        toolsets=[AgenToolToolset(include=['adder'], id='agentools')],
        capabilities=[DBOSDurability(parallel_execution_mode='sequential')],
    )
    return {
        'bare DBOS step': lambda: _bare_step(2, 3),
        'bare DBOS, no step': lambda: _bare_empty(2, 3),
        'agentool durable()': lambda: durable_dbos.run(agentool_agent, PROMPT),
        'agentool model string': lambda: durable_dbos.run(model_string, PROMPT),
        'pydantic-ai DBOSDurability': lambda: _pydantic_ai_run('pydantic_ai', 'add'),
        'LLM + AgenToolToolset': lambda: durable_dbos.run(llm_agentool, 'add'),
        'LLM, pydantic-ai only': lambda: _pydantic_ai_run('llm_pydantic_ai', 'add'),
    }


async def measure(repeats: int, runs: int) -> tuple[Rows, Rows]:
    """Wall and CPU seconds per run of each subject: `repeats` interleaved rounds of `runs` runs each."""
    subjects = _subjects()
    wall: Rows = {name: [] for name in subjects}
    cpu: Rows = {name: [] for name in subjects}
    with tempfile.TemporaryDirectory(prefix='agentool-bench-') as directory:
        await durable_dbos.launch(Path(directory) / 'dbos.sqlite3')
        try:
            for subject in subjects.values():  # warm up: imports, plans, first graph runs
                await subject()
                await subject()
            for _ in range(repeats):
                for name, subject in subjects.items():
                    start, start_cpu = time.perf_counter(), time.process_time()
                    for _ in range(runs):
                        await subject()
                    cpu[name].append((time.process_time() - start_cpu) / runs)
                    wall[name].append((time.perf_counter() - start) / runs)
        finally:
            durable_dbos.shutdown()
    return wall, cpu


def ms(samples: list[float]) -> str:
    """The median of `samples` (seconds) in milliseconds, with their spread."""
    low, mid, high = (value * 1000 for value in (min(samples), statistics.median(samples), max(samples)))
    return f'{mid:.1f} ms (min {low:.1f}, max {high:.1f})'


def ratio(rows: Rows, numerator: str, denominator: str) -> str:
    """The median and spread of the per-round ratios of two subjects."""
    # Per round, then the median and spread of the round ratios: a slow round slows both alike.
    ratios = [a / b for a, b in zip(rows[numerator], rows[denominator], strict=True)]
    return f'{statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f})'


def report(rows: Rows) -> list[str]:
    """The table's lines: each subject, then the ratios the targets are about."""
    lines = [f'  {name:<28} {ms(samples)}' for name, samples in rows.items()]
    # The LLM agent's agentool step, less one bare DBOS step: what agentool adds beyond the step.
    excess = [
        (llm - own) - (step - empty)
        for llm, own, step, empty in zip(
            rows['LLM + AgenToolToolset'],
            rows['LLM, pydantic-ai only'],
            rows['bare DBOS step'],
            rows['bare DBOS, no step'],
            strict=True,
        )
    ]
    lines += [
        f'  agentool durable() / bare DBOS step         = {ratio(rows, "agentool durable()", "bare DBOS step")}'
        '  (target <= 1.2x)',
        f'  agentool durable() / pydantic-ai DBOS       = '
        f'{ratio(rows, "agentool durable()", "pydantic-ai DBOSDurability")}  (target <= 1.0x)',
        f'  agentool model string / bare DBOS step      = {ratio(rows, "agentool model string", "bare DBOS step")}',
        f'  LLM + AgenToolToolset / pydantic-ai only    = '
        f'{ratio(rows, "LLM + AgenToolToolset", "LLM, pydantic-ai only")}',
        f'  LLM + AgenToolToolset - pydantic-ai only - one step = {ms(excess)} (target ~0)',
    ]
    return lines
