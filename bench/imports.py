"""Import cost of `agentool` against `pydantic_ai`, each in a fresh interpreter."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

from ._table import Row, duration
from ._timing import Scale

__all__ = ('import_row',)

# The child times only the import (CPU time), not interpreter start-up, so the ratio is the modules' own cost.
_PROBE = 'import time; start = time.process_time(); import {module}; print(time.process_time() - start)'


def _import_seconds(module: str, env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, '-c', _PROBE.format(module=module)], check=True, capture_output=True, text=True, env=env
    ).stdout
    return float(out)


def import_row(scale: Scale) -> Row:
    """`import agentool` vs `import pydantic_ai`, medians over interleaved fresh interpreters.

    Both sides import from bytecode caches, as after `pip install`: the caches go to a temporary
    directory (`PYTHONPYCACHEPREFIX`), so nothing is written next to the sources, and a first,
    untimed import of each fills them.
    """
    with tempfile.TemporaryDirectory(prefix='agentool-bench-pycache-') as cache:
        env = {key: value for key, value in os.environ.items() if key != 'PYTHONDONTWRITEBYTECODE'}
        env['PYTHONPYCACHEPREFIX'] = cache
        for module in ('pydantic_ai', 'agentool'):
            _import_seconds(module, env)
        samples: dict[str, list[float]] = {'pydantic_ai': [], 'agentool': []}
        for _ in range(scale.import_repeats):
            for module, values in samples.items():
                values.append(_import_seconds(module, env))
    agentool, pydantic_ai = statistics.median(samples['agentool']), statistics.median(samples['pydantic_ai'])
    return Row(
        benchmark='`import agentool` vs `import pydantic_ai` (fresh interpreter, import only, bytecode cached)',
        measured=f'{duration(agentool)} vs {duration(pydantic_ai)}',
        ratio=agentool / pydantic_ai,
        target=1.1,
        cause=f"agentool's own modules add {duration(agentool - pydantic_ai)}: `import agentool` loads its whole "
        'public API at once (the registry with its catalog, Markdown, graph and OpenAPI exports, the injector, '
        'the LLM toolset); loading those submodules on first use from `agentool/__init__.py` would remove most of it.',
    )
