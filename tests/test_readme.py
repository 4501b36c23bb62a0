"""The README as a new user meets it: its quickstart and CLI commands run as copied, writing nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agentools import python_env, run_python

ROOT = Path(__file__).resolve().parents[1]


def _readme_quickstart() -> str:
    readme = (ROOT / 'README.md').read_text()
    found = re.search(r'## Quickstart\n.*?```python\n(.*?)```', readme, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_readme_quickstart_runs_as_copied_in_a_fresh_interpreter_and_writes_nothing(tmp_path: Path) -> None:
    run_python(_readme_quickstart() + "print('ran')\n", cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ('command', 'expected'),
    [
        (['list'], 'storage'),
        (['show', 'storage'], 'storage 1.0.0'),
        (['schema', 'storage'], '"additionalProperties": false'),
        (['catalog'], '"total_agentools": 1'),
    ],
)
def test_the_readme_cli_commands_answer_and_write_nothing_to_the_working_directory(
    command: list[str], expected: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, '-m', 'agentool', '--import', 'examples.storage', *command],
        env=python_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_the_quickstart_cli_call(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            '-m',
            'agentool',
            '--import',
            'examples.calculator',
            'call',
            'calculator',
            '{"operation": "add", "a": 5, "b": 3}',
        ],
        env=python_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, '8.0'), done.stderr
    assert list(tmp_path.iterdir()) == []
