"""A multi-step durable pipeline: a ledger with side effects, an agentool delegating to it, an LLM agent calling both.

The ledger is a SQLite file (`LEDGER_ENV`). Each append commits a row in `executions` (re-executions
included) and, unless its durable unit already did, one in `effects` (at most once per `unit_key()`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Literal

import anyio
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelRequest, ToolReturnPart

from agentool import Route, RoutingConfig, create_agentool, get_injector
from agentool.durable import unit_key
from agentool.testing import AgentDouble, Call, OutputFrom, Script, ScriptRun
from agentool.toolset import AgenToolToolset

LEDGER_ENV = 'AGENTOOL_TEST_LEDGER'
KILL_ENV = 'AGENTOOL_TEST_KILL_AT'
HOLD_ENV = 'AGENTOOL_TEST_HOLD'
"""A file path: while it exists, every job waits before its first batch append (after its first step)."""

ENTRIES = ('first', 'batch0', 'batch1', 'batch2', 'last')
"""The ledger appends of one pipeline run, by entry suffix: two by the LLM agent, three by the delegating agentool."""
STEPS = len(ENTRIES)


def expected_entries(jobs: Sequence[str]) -> list[str]:
    """The ledger entries the pipeline runs of `jobs` append, each exactly once, sorted."""
    return sorted(f'{job}/{entry}' for job in jobs for entry in ENTRIES)


def _connect(path: str | os.PathLike[str] | None = None) -> sqlite3.Connection:
    db = sqlite3.connect(os.environ[LEDGER_ENV] if path is None else path, timeout=30, isolation_level=None)
    # Workers open the ledger at once. Switching to WAL needs an exclusive lock, and SQLite answers
    # "database is locked" at once (without its busy timeout) when waiting could deadlock, so the
    # switch is made only when the file is not in WAL yet (it persists), retried until it is.
    deadline = time.monotonic() + 30
    while True:
        try:
            if db.execute('PRAGMA journal_mode').fetchone()[0] != 'wal':
                db.execute('PRAGMA journal_mode=WAL')
            db.execute('CREATE TABLE IF NOT EXISTS executions (unit TEXT, entry TEXT)')
            db.execute('CREATE TABLE IF NOT EXISTS effects (unit TEXT, entry TEXT, seq INTEGER)')
            break
        except sqlite3.OperationalError as error:
            if 'locked' not in str(error) or time.monotonic() > deadline:
                db.close()
                raise
            time.sleep(0.01)
    db.execute('PRAGMA synchronous=FULL')
    return db


def create_ledger(path: str | os.PathLike[str]) -> None:
    """The ledger at `path` (WAL, tables), before workers open it together."""
    _connect(path).close()


class LedgerInput(BaseModel):
    operation: Literal['append', 'count']
    entry: str = ''


class LedgerResult(BaseModel):
    entry: str
    seq: int


async def ledger_append(entry: str) -> LedgerResult:
    """Append an entry; returns its position among the entries with the same prefix."""
    hold = os.environ.get(HOLD_ENV)
    # A job held in the middle: the file is removed by another process, so there is nothing to await.
    while hold and entry.endswith('/batch0') and await anyio.Path(hold).exists():  # noqa: ASYNC110
        await asyncio.sleep(0.02)
    key = unit_key()
    db = _connect()
    try:
        db.execute('BEGIN IMMEDIATE')
        db.execute('INSERT INTO executions VALUES (?, ?)', (key, entry))
        found = db.execute('SELECT seq FROM effects WHERE unit = ?', (key,)).fetchone() if key else None
        if found is None:
            prefix = entry.split('/')[0]
            (seq,) = db.execute('SELECT COUNT(*) FROM effects WHERE entry LIKE ?', (prefix + '/%',)).fetchone()
            db.execute('INSERT INTO effects VALUES (?, ?, ?)', (key, entry, seq))
        else:
            (seq,) = found
        _maybe_die('before')  # killed here: the transaction rolls back, nothing happened
        db.execute('COMMIT')
        _maybe_die('after')  # killed here: the effect is committed, the engine has not recorded the step
    finally:
        db.close()
    return LedgerResult(entry=entry, seq=seq)


def _maybe_die(phase: str) -> None:
    """SIGKILL this process at the point `KILL_ENV` names (`PHASE:N`: at the N-th committed execution)."""
    target = os.environ.get(KILL_ENV)
    if not target or not target.startswith(phase + ':'):
        return
    db = sqlite3.connect(os.environ[LEDGER_ENV], timeout=30)
    try:
        (executions,) = db.execute('SELECT COUNT(*) FROM executions').fetchone()
    finally:
        db.close()
    # 'before': this execution is not committed yet, so it is number executions + 1.
    if executions + (phase == 'before') == int(target.split(':')[1]):
        os.kill(os.getpid(), signal.SIGKILL)


async def ledger_count(entry: str) -> LedgerResult:
    """How many entries start with this prefix (read-only)."""
    db = _connect()
    try:
        (seq,) = db.execute('SELECT COUNT(*) FROM effects WHERE entry LIKE ?', (entry + '/%',)).fetchone()
    finally:
        db.close()
    return LedgerResult(entry=entry, seq=seq)


class BatchInput(BaseModel):
    operation: Literal['run']
    job: str


class BatchResult(BaseModel):
    job: str
    seqs: list[int]


async def batch_run(job: str) -> BatchResult:
    """Append three entries through the injector: each call is its own durable unit."""
    injector = get_injector()
    seqs: list[int] = []
    for step in range(3):
        result: LedgerResult = await injector.call('ledger', {'operation': 'append', 'entry': f'{job}/batch{step}'})
        seqs.append(result.seq)
    return BatchResult(job=job, seqs=seqs)


def pipeline_prompt(job: str) -> str:
    return f'process {job}'


def build(*, capabilities: Sequence[AbstractCapability[Any]] = ()) -> Agent[None, str]:
    """Register `ledger` and `batch` and return the LLM agent `pipeline` that calls them."""
    create_agentool(
        name='ledger',
        input_schema=LedgerInput,
        routing_config=RoutingConfig(
            operation_map={
                'append': 'ledger_append',
                'count': Route(tool='ledger_count', read_only=True, durable=False),
            }
        ),
        tools=[ledger_append, ledger_count],
        output_type=LedgerResult,
        replace=True,
    )
    create_agentool(
        name='batch',
        input_schema=BatchInput,
        # Orchestration only: it runs in the workflow, and its ledger calls are the durable units.
        routing_config=RoutingConfig(operation_map={'run': Route(tool='batch_run', durable=False)}),
        tools=[batch_run],
        output_type=BatchResult,
        dependencies=['ledger'],
        replace=True,
    )
    double = AgentDouble(
        Script(
            Call('ledger_append', lambda run: {'entry': f'{_job(run.prompt)}/first'}),
            Call('batch_run', lambda run: {'job': _job(run.prompt)}),
            Call('ledger_append', lambda run: {'entry': f'{_job(run.prompt)}/last'}),
            OutputFrom(_summary),
            name='pipeline',
        ),
        name='pipeline-llm',
    )
    return Agent(
        double,
        name='pipeline',
        output_type=str,
        toolsets=[AgenToolToolset(include=['ledger.append', 'batch'])],
        capabilities=list(capabilities),
    )


def _job(prompt: str) -> str:
    return prompt.removeprefix('process ')


def _summary(run: ScriptRun) -> str:
    # From the messages, not the double's memory: a recovered run's earlier calls happened in another process.
    returns = [p for m in run.messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
    return ' | '.join(f'{p.tool_name}={p.model_response_str()}' for p in returns)


def ledger_rows(
    path: str | os.PathLike[str] | None = None,
) -> tuple[list[tuple[str | None, str]], list[tuple[str | None, str, int]]]:
    """Every committed execution and every effect, in insertion order (of the ledger at `path`, else `LEDGER_ENV`'s)."""
    db = _connect(path)
    try:
        executions = db.execute('SELECT unit, entry FROM executions ORDER BY rowid').fetchall()
        effects = db.execute('SELECT unit, entry, seq FROM effects ORDER BY rowid').fetchall()
    finally:
        db.close()
    return executions, effects
