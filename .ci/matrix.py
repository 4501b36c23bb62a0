"""The compatibility matrix: what differs between pydantic-ai releases, at both ends of the supported range.

Each leg is its own virtual environment under `.venv-matrix/`, built from this checkout alone:

1. `pip install <checkout> <pydantic-ai spec>`, as a user would, and the README quickstart runs from
   an empty temporary directory against that installed package;
2. `pip install '<checkout>[test]' <spec>`, and the tests marked `seam` run from the checkout
   (`pytest -m seam`): the compatibility canaries (tests/test_compat.py), the docs' examples
   (tests/test_docs.py) and the test modules of the seams a release can change (model requests and
   streams, tools and toolsets, output modes, model strings, capability hooks, MCP, durability,
   provider models); tests/conftest.py lists them. The rest of the suite checks agentool's own logic,
   the same on every release, and runs once in the main `make test` run. `--full` (`make
   matrix-full`) runs the whole suite on every leg instead.

The legs' environments are built concurrently (pip mostly waits on the disk and the cache), then
the legs' tests run one after another, each on both cores (pytest-xdist). A leg's environment is
rebuilt when its inputs change (pyproject.toml, the spec, the Python), so a fresh clone always
builds fresh ones and a repeated local `make test` does not reinstall. Timings are printed per leg.
Usage: `python .ci/matrix.py [--full] [--build-only | --test-only] [LEG ...]` (all legs by default).
"""

from __future__ import annotations

import ast
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
from concurrent.futures import ThreadPoolExecutor
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


def build(leg: Leg) -> dict[str, float]:
    """Build the leg (unless built from the same inputs) and run the quickstart; seconds per step.

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
        return steps
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
    return steps


def seam_files() -> list[str]:
    """The test files holding `seam` tests: `SEAM_MODULES` of tests/conftest.py, and files marking tests themselves.

    Given to pytest with `-m seam`, so a leg collects (imports) these files only, not the whole suite.
    """
    tests = ROOT / 'tests'
    tree = ast.parse((tests / 'conftest.py').read_text())
    listed = {
        node.value
        for assign in ast.walk(tree)
        if isinstance(assign, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == 'SEAM_MODULES' for t in assign.targets)
        for node in ast.walk(assign.value)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    marking = {path.name for path in tests.glob('test_*.py') if 'mark.seam' in path.read_text()}
    return [f'tests/{name}' for name in sorted(listed | marking) if (tests / name).exists()]


def test(leg: Leg, *, full: bool) -> float:
    """Run the leg's tests (the `seam` ones, or the whole suite with `full`); seconds taken."""
    started = time.perf_counter()
    selection = () if full else ('-m', 'seam', *seam_files())
    _run(
        leg,
        str(HOME / leg.name / 'bin' / 'python'),
        '-m',
        'pytest',
        '-q',
        '-p',
        'no:cacheprovider',
        *selection,
        cwd=ROOT,
    )
    return time.perf_counter() - started


def _built(leg: Leg) -> bool:
    stamp = HOME / leg.name / '.matrix-key'
    return stamp.exists() and stamp.read_text() == _key(leg)


def main(argv: list[str]) -> None:
    flags = {'--full', '--build-only', '--test-only'}
    full, build_only, test_only = (flag in argv for flag in ('--full', '--build-only', '--test-only'))
    names = [arg for arg in argv if arg not in flags]
    chosen = [leg for leg in legs() if not names or leg.name in names]
    if names and len(chosen) != len(names):
        raise SystemExit(f'matrix: unknown leg in {names}; legs: {[leg.name for leg in legs()]}')
    HOME.mkdir(exist_ok=True)
    # `--test-only` follows a `--build-only` run (`make test` builds while the main checks run): a leg
    # built from the same inputs is not refreshed again, its quickstart has run.
    to_build = [leg for leg in chosen if not (test_only and _built(leg))]
    # Built concurrently: installs wait mostly on the disk; a failed build fails the matrix.
    with ThreadPoolExecutor(max_workers=max(1, len(to_build))) as pool:
        built = dict(zip([leg.name for leg in to_build], pool.map(build, to_build), strict=True))
    if build_only:
        print('matrix: environments ready')
        return
    timings: list[tuple[Leg, dict[str, float]]] = []
    for leg in chosen:
        steps = built.get(leg.name, {})
        steps['pytest'] = test(leg, full=full)
        timings.append((leg, steps))
    print(f'\nmatrix: all legs green ({"the full suite" if full else "the quickstart and the seam tests"})')
    for leg, steps in timings:
        parts = ', '.join(f'{step} {seconds:.0f}s' for step, seconds in steps.items())
        parts += '' if 'install' in steps else ' (environment reused)' if 'quickstart' in steps else ' (built before)'
        python = '{}.{}'.format(*(_python_version(leg.python) or ('?', '?')))
        print(f'  {leg.name:<13} {leg.spec:<26} Python {python:<5} {parts}, total {sum(steps.values()):.0f}s')


if __name__ == '__main__':
    main(sys.argv[1:])
