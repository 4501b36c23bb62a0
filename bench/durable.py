"""`python -m bench.durable` (`make bench-durable`): what durability costs and what workers buy, as ratios.

- **Rows** (`bench.durable_rows`): one durable operation against a bare DBOS step and against
  pydantic-ai's own DBOS durability, and an LLM agent with `AgenToolToolset` against pydantic-ai's run.
- **Overhead**: wall time per run of an agentool's agent inside a DBOS workflow on SQLite (each
  model request and operation a journaled step) against the same agent run plainly, in one process.
- **Throughput**: wall time for one batch of queued pipeline runs (`tests.durable_agentools`) with 1
  and with 2 worker processes on a PostgreSQL server started for the bench (`tests.postgres_server`).

Wall time, not CPU time: the journal's cost is I/O and DBOS's threads. Samples are interleaved and
the median of `--repeats` (at least 3) is reported with its spread (min-max).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dbos import DBOSClient

import agentool.dbos as durable_dbos
from agentool import get_injector
from bench._page_sections import with_section
from bench.durable_engines import measure_prefect, measure_temporal, section
from bench.durable_engines import report as report_engine
from bench.durable_rows import Rows, create_adder, measure, report
from tests.durable_agentools import LEDGER_ENV, pipeline_prompt
from tests.durable_worker import EXECUTOR_ENV
from tests.postgres_server import postgres_server

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / 'docs' / 'benchmarks.md'


def _spread(samples: list[float]) -> str:
    low, mid, high = (value * 1000 for value in (min(samples), statistics.median(samples), max(samples)))
    return f'median {mid:.1f} ms (min {low:.1f}, max {high:.1f})'


async def overhead(repeats: int, runs: int) -> tuple[list[float], list[float]]:
    """Seconds per run: (plain, durable) samples."""
    for name in ('adder', 'adder_plain'):
        create_adder(name)
    durable_agent = durable_dbos.durable('adder')
    plain_agent = get_injector().get('adder_plain')
    prompt = '{"operation": "add", "a": 2, "b": 3}'
    plain: list[float] = []
    durable: list[float] = []
    with tempfile.TemporaryDirectory(prefix='agentool-bench-') as directory:
        await durable_dbos.launch(Path(directory) / 'dbos.sqlite3')
        try:
            await durable_dbos.run(durable_agent, prompt)  # warm up
            for _ in range(repeats):
                start = time.perf_counter()
                for _ in range(runs):
                    await plain_agent.run(prompt)
                plain.append((time.perf_counter() - start) / runs)
                start = time.perf_counter()
                for _ in range(runs):
                    await durable_dbos.run(durable_agent, prompt)
                durable.append((time.perf_counter() - start) / runs)
        finally:
            durable_dbos.shutdown()
    return plain, durable


def _workers(database: str, outputs: Path, ledger: Path, count: int) -> list[subprocess.Popen[str]]:
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    env[LEDGER_ENV] = str(ledger)
    workers: list[subprocess.Popen[str]] = []
    for n in range(count):
        worker = subprocess.Popen(
            [sys.executable, '-m', 'tests.durable_worker', database, str(outputs), '--queue'],
            cwd=ROOT,
            env={**env, EXECUTOR_ENV: f'bench{n}'},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert worker.stdout is not None
        worker.stdout.readline()  # 'launched'
        workers.append(worker)
    return workers


def batch_seconds(server: str, count: int, jobs: int, tag: str) -> float:
    """Wall seconds from enqueueing `jobs` pipeline runs to their last result, with `count` workers."""
    with tempfile.TemporaryDirectory(prefix='agentool-bench-') as directory:
        outputs = Path(directory)
        database = f'{server.rsplit("/", 1)[0]}/bench_{tag}'
        workers = _workers(database, outputs, outputs / 'ledger.sqlite', count)
        client = DBOSClient(system_database_url=database)
        try:
            start = time.perf_counter()
            for n in range(jobs):
                client.enqueue(
                    {
                        'queue_name': durable_dbos.QUEUE_NAME,
                        'workflow_name': durable_dbos.WORKFLOW_NAME,
                        'workflow_id': f'{tag}-{n}',
                        'app_version': 'agentool-1',
                    },
                    'pipeline',
                    pipeline_prompt(f'{tag}-{n}'),
                )
            for n in range(jobs):
                client.retrieve_workflow(f'{tag}-{n}').get_result(polling_interval_sec=0.05)
            return time.perf_counter() - start
        finally:
            client.destroy()
            (outputs / 'STOP').touch()
            for worker in workers:
                worker.wait(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--runs', type=int, default=40, help='runs per overhead sample')
    parser.add_argument('--jobs', type=int, default=16, help='pipeline runs per throughput batch')
    parser.add_argument('--engine-runs', type=int, default=20, help='runs per Temporal and Prefect sample')
    parser.add_argument('--output', default=str(PAGE), help='the page the engine rows go to; "-": print only')
    parser.add_argument('--engines-only', action='store_true', help='only the Temporal and Prefect rows')
    parser.add_argument('--rows-only', action='store_true', help='only the per-operation rows (no workers)')
    args = parser.parse_args()
    if not args.engines_only:
        print(f'one durable operation on DBOS (SQLite), {args.repeats} interleaved rounds of {args.runs} runs:')
        wall, cpu = asyncio.run(measure(args.repeats, args.runs))
        for title, rows in (('wall time', wall), ('CPU time of the process', cpu)):
            print(f' {title}, per run:')
            for line in report(rows):
                print(line)
    engines: dict[str, Rows] = {}
    for engine, measure_engine in (('Temporal', measure_temporal), ('Prefect', measure_prefect)):
        rounds = f'{args.repeats} interleaved rounds of {args.engine_runs} runs'
        print(f'one durable operation on {engine} (a local server), {rounds}:')
        engines[engine] = asyncio.run(measure_engine(args.repeats, args.engine_runs))
        for line in report_engine(engines[engine], engine):
            print(line)
    if args.output != '-':
        body = section(engines, repeats=args.repeats, runs=args.engine_runs)
        page = Path(args.output)
        page.write_text(with_section(page.read_text(encoding='utf-8'), 'durable', body), encoding='utf-8')
        print(f'written to {args.output} (its durable execution section)')
    if args.rows_only or args.engines_only:
        return
    plain, durable = asyncio.run(overhead(args.repeats, args.runs))
    ratio = statistics.median(durable) / statistics.median(plain)
    print(f'overhead: plain run {_spread(plain)}; durable run (DBOS, SQLite) {_spread(durable)}')
    print(f'  durable / plain = {ratio:.1f}x per run (1 operation step + the workflow)')
    one: list[float] = []
    two: list[float] = []
    with postgres_server() as server:
        for repeat in range(args.repeats):  # interleaved: 1 worker, 2 workers, 1, 2, ...
            one.append(batch_seconds(server, 1, args.jobs, f'r{repeat}w1'))
            two.append(batch_seconds(server, 2, args.jobs, f'r{repeat}w2'))
    speedup = statistics.median(one) / statistics.median(two)
    print(f'throughput ({args.jobs} pipeline runs on Postgres): 1 worker {_spread(one)}; 2 workers {_spread(two)}')
    print(f'  2 workers / 1 worker = {speedup:.2f}x throughput')


if __name__ == '__main__':
    main()
