"""The compatibility matrix: the full pytest suite against both ends of the supported pydantic-ai range.

Each leg is its own virtual environment under `.venv-matrix/`, built from this checkout alone:

1. `pip install <checkout> <pydantic-ai spec>`, as a user would, and the README quickstart runs from
   an empty temporary directory against that installed package;
2. `pip install '<checkout>[test]' <spec>`, and the full pytest suite runs from the checkout.

A leg's environment is rebuilt when its inputs change (pyproject.toml, the spec, the Python), so a
fresh clone always builds fresh ones and a repeated local `make test` does not reinstall. Timings are
printed per leg. Usage: `python .ci/matrix.py [LEG ...]` (all legs by default).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / '.venv-matrix'

# The newest releases tested. The full `pydantic-ai` package stops at 2.62.0 in the registry this
# project installs from (2.66.0 needs a `pydantic-evals` release that is not published there).
NEWEST_SLIM = '2.68.0'
FULL_PACKAGE = '2.62.0'
# Python versions for the legs: the floor, and the newer ones tried in this order.
FLOOR_PYTHON = (3, 11)
NEWER_PYTHONS = ((3, 13), (3, 12))


@dataclass(frozen=True, kw_only=True)
class Leg:
    """One environment of the matrix: a name, the pydantic-ai requirement and the Python running it."""

    name: str
    spec: str
    python: str


def floor_version() -> str:
    """The lowest supported `pydantic-ai-slim`, read from the `>=` bound in pyproject.toml."""
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    for requirement in project['dependencies']:
        if found := re.fullmatch(r'pydantic-ai-slim\s*>=\s*([\w.]+)\s*,\s*<\s*3', requirement.strip()):
            return found.group(1)
    raise SystemExit('matrix: pyproject.toml declares no `pydantic-ai-slim>=X,<3` dependency')


def _python_version(executable: str) -> tuple[int, int] | None:
    try:
        done = subprocess.run(
            [executable, '-c', 'import sys, venv, ensurepip; print(*sys.version_info[:2])'],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    major, minor = done.stdout.split()
    return int(major), int(minor)


def _candidates(version: tuple[int, int]) -> list[str]:
    name = f'python{version[0]}.{version[1]}'
    found = [path for path in (shutil.which(name),) if path]
    # pyenv keeps versions it does not put on PATH (its shims refuse them): look there too.
    pyenv_root = Path(os.environ.get('PYENV_ROOT', Path.home() / '.pyenv'))
    found += sorted(str(path) for path in pyenv_root.glob(f'versions/{version[0]}.{version[1]}.*/bin/{name}'))
    return found


def find_python(version: tuple[int, int]) -> str | None:
    """An interpreter of exactly this `(major, minor)` with a working `venv`, or None."""
    for executable in _candidates(version):
        if _python_version(executable) == version:
            return executable
    return None


def _python_for(versions: tuple[tuple[int, int], ...]) -> str:
    """The first of `versions` found here; else the running Python, with a loud warning.

    A machine without that Python still tests both ends of the pydantic-ai range, and says which
    Python it used instead (the summary shows each leg's interpreter).
    """
    if sys.version_info[:2] == versions[0]:
        return sys.executable
    for version in versions:
        if found := find_python(version):
            return found
    wanted = ' or '.join(f'{major}.{minor}' for major, minor in versions)
    running = '{}.{}'.format(*sys.version_info[:2])
    print(f'matrix: WARNING: no Python {wanted} on PATH or under pyenv; using {running}', flush=True)
    return sys.executable


def legs() -> list[Leg]:
    """The matrix: lowest slim on the floor Python, newest slim on the newest Python, the full package."""
    return [
        Leg(name='lowest-slim', spec=f'pydantic-ai-slim=={floor_version()}', python=_python_for((FLOOR_PYTHON,))),
        Leg(name='newest-slim', spec=f'pydantic-ai-slim=={NEWEST_SLIM}', python=_python_for(NEWER_PYTHONS)),
        Leg(name='full-package', spec=f'pydantic-ai=={FULL_PACKAGE}', python=_python_for(NEWER_PYTHONS[::-1])),
    ]


def quickstart() -> str:
    """The README's Quickstart code block, exactly as a reader copies it."""
    readme = (ROOT / 'README.md').read_text()
    found = re.search(r'## Quickstart\n.*?```python\n(.*?)```', readme, re.DOTALL)
    if found is None:
        raise SystemExit('matrix: README.md has no Quickstart python block')
    return found.group(1)


def _run(leg: Leg, *args: str, cwd: Path) -> None:
    shown = ' '.join('<script>' if '\n' in arg else arg for arg in args)
    print(f'[{leg.name}] $ {shown}', flush=True)
    done = subprocess.run(args, cwd=cwd, check=False)
    if done.returncode != 0:
        raise SystemExit(f'matrix: leg {leg.name} ({leg.spec}) failed with exit code {done.returncode}')


def _key(leg: Leg) -> str:
    inputs = [(ROOT / 'pyproject.toml').read_text(), leg.spec, leg.python, sys.version]
    return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()


def _pip(leg: Leg, *args: str) -> None:
    python = str(HOME / leg.name / 'bin' / 'python')
    _run(leg, python, '-m', 'pip', '--quiet', '--disable-pip-version-check', *args, cwd=ROOT)


def _quickstart(leg: Leg) -> None:
    python = str(HOME / leg.name / 'bin' / 'python')
    show = 'import pydantic_ai, sys; print("pydantic-ai", pydantic_ai.__version__, "on Python", sys.version)'
    with tempfile.TemporaryDirectory() as empty:  # so `agentool` is the installed one, not the checkout
        _run(leg, python, '-c', show, cwd=Path(empty))
        _run(leg, python, '-c', quickstart(), cwd=Path(empty))


def run(leg: Leg) -> dict[str, float]:
    """Build the leg (unless built from the same inputs), run the quickstart and the suite; seconds per step.

    A new environment first gets agentool alone (`pip install <checkout> <spec>`, as a user would)
    and runs the quickstart there; the test extra comes after, for the suite.
    """
    venv, steps = HOME / leg.name, dict[str, float]()
    stamp = venv / '.matrix-key'
    started = time.perf_counter()
    if stamp.exists() and stamp.read_text() == _key(leg):
        # The environment's agentool is a copy of the checkout made when it was built: refresh it,
        # so the quickstart runs today's code (dependencies are unchanged, or the key would differ).
        _pip(leg, 'install', '--no-deps', '--force-reinstall', str(ROOT))
        _quickstart(leg)
        steps['quickstart'] = time.perf_counter() - started
    else:
        shutil.rmtree(venv, ignore_errors=True)
        _run(leg, leg.python, '-m', 'venv', str(venv), cwd=ROOT)
        _pip(leg, 'install', '--upgrade', 'pip')
        _pip(leg, 'install', str(ROOT), leg.spec)
        steps['install'] = time.perf_counter() - started
        _quickstart(leg)
        steps['quickstart'] = time.perf_counter() - started - steps['install']
        extras = time.perf_counter()
        _pip(leg, 'install', f'{ROOT}[test]', leg.spec)
        stamp.write_text(_key(leg))
        steps['install'] += time.perf_counter() - extras
    suite = time.perf_counter()
    _run(leg, str(venv / 'bin' / 'python'), '-m', 'pytest', '-q', '-p', 'no:cacheprovider', cwd=ROOT)
    steps['pytest'] = time.perf_counter() - suite
    return steps


def main(names: list[str]) -> None:
    chosen = [leg for leg in legs() if not names or leg.name in names]
    if names and len(chosen) != len(names):
        raise SystemExit(f'matrix: unknown leg in {names}; legs: {[leg.name for leg in legs()]}')
    timings: list[tuple[Leg, dict[str, float]]] = []
    for leg in chosen:
        timings.append((leg, run(leg)))
    print('\nmatrix: all legs green')
    for leg, steps in timings:
        parts = ', '.join(f'{step} {seconds:.0f}s' for step, seconds in steps.items())
        parts += '' if 'install' in steps else ' (environment reused)'
        python = '{}.{}'.format(*(_python_version(leg.python) or ('?', '?')))
        print(f'  {leg.name:<13} {leg.spec:<26} Python {python:<5} {parts}, total {sum(steps.values()):.0f}s')


if __name__ == '__main__':
    main(sys.argv[1:])
