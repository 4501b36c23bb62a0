"""How fast the `agentool` command answers: `--help` and `list` against `python -c "import pydantic_ai"`.

Each sample is one fresh process, run the way a user runs it (the console script next to this
interpreter), timed in the CPU time the process used (user + system, from `wait4`), so other load
on the machine does not count; wall time is shown beside it for context. The three commands are
interleaved repeat by repeat, with bytecode caches warm (a first, untimed round fills them).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ._table import Row, duration
from ._timing import Scale

__all__ = ('cli_rows',)

ROOT = Path(__file__).resolve().parent.parent


def _run(argv: list[str]) -> tuple[float, float]:
    """CPU seconds and wall seconds of one process running `argv` to its end."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f'bench: {argv} exited with {process.returncode}')
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - started


def _spread(values: list[float]) -> str:
    return f'median {duration(statistics.median(values))} (range {duration(min(values))} to {duration(max(values))})'


def cli_rows(scale: Scale) -> list[Row]:
    """`agentool --help` and `agentool list` vs `import pydantic_ai`, each a fresh process."""
    script = str(Path(sys.executable).parent / 'agentool')
    commands = {
        'help': [script, '--help'],
        'list': [script, '--import', 'examples.calculator', 'list'],
        'import': [sys.executable, '-c', 'import pydantic_ai'],
    }
    for argv in commands.values():  # warm the bytecode caches
        _run(argv)
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(max(3, scale.import_repeats)):
        for name, argv in commands.items():
            seconds, elapsed = _run(argv)
            cpu[name].append(seconds)
            wall[name].append(elapsed)
    baseline = statistics.median(cpu['import'])
    context = f'; `import pydantic_ai` {_spread(cpu["import"])}, wall {duration(statistics.median(wall["import"]))}'

    def row(name: str, subject: str, target: float, cause: str) -> Row:
        return Row(
            benchmark=f'{subject} vs `python -c "import pydantic_ai"` (CPU time)',
            measured=f'{_spread(cpu[name])}, wall {duration(statistics.median(wall[name]))}{context}',
            ratio=statistics.median(cpu[name]) / baseline,
            target=target,
            cause=cause,
        )

    return [
        row(
            'help',
            '`agentool --help` (console script)',
            0.25,
            'the launcher (`agentool_cli`) must not import the `agentool` package before a command runs.',
        ),
        row(
            'list',
            '`agentool --import examples.calculator list`',
            1.3,
            'a command pays the import of pydantic-ai and agentool once; more is a module imported eagerly.',
        ),
    ]


if __name__ == '__main__':
    from ._table import render_markdown
    from ._timing import QUICK

    print(render_markdown(cli_rows(QUICK)), end='')
