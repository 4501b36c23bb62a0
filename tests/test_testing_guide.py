"""The testing guides run as written: blocks in order with their printed output checked (`pytest
--update-examples` rewrites the `#>` comments), and each `title="path"` block, written to a fresh project, under pytest.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_examples import EvalExample, find_examples

DOCS = Path(__file__).resolve().parent.parent / 'docs' / 'guides'
GUIDE = DOCS / 'testing-llm-agents.md'


def test_the_guide_runs_as_written(eval_example: EvalExample) -> None:
    namespace: dict[str, Any] = {}
    blocks = [e for e in find_examples(GUIDE) if e.prefix_settings().get('test') != 'skip' and e.prefix != 'toml']
    assert len(blocks) >= 8
    for example in blocks:
        if eval_example.update_examples:
            namespace = eval_example.run_print_update(example, module_globals=namespace)
        else:
            namespace = eval_example.run_print_check(example, module_globals=namespace)
    # As the guide says: a drift failure is an AssertionError, so pytest reports it as a test failure.
    assert issubclass(namespace['DriftError'], AssertionError)


FENCE = re.compile(r'^```(\w+)[ ]*(\{[^}\n]*\})?\n(.*?)^```', re.MULTILINE | re.DOTALL)


def _blocks(guide: Path) -> list[tuple[str, dict[str, str], str]]:
    """The guide's fenced blocks of any language: (language, settings, source)."""
    return [
        (language, dict(re.findall(r'(\w+)="([^"]*)"', settings or '')), source)
        for language, settings, source in FENCE.findall(guide.read_text(encoding='utf-8'))
    ]


def _write_titled_blocks(guide: Path, project: Path) -> list[str]:
    written: list[str] = []
    for _, settings, source in _blocks(guide):
        if (title := settings.get('title')) is not None:
            target = project / title
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source, encoding='utf-8')
            written.append(title)
    return written


def _python(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in `project`, which alone decides what is importable (no PYTHONPATH from the outer run)."""
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'PYTEST_ADDOPTS', 'PYTEST_PLUGINS')}
    return subprocess.run([sys.executable, *args], cwd=project, env=env, capture_output=True, text=True, timeout=300)


def _pytest(project: Path) -> subprocess.CompletedProcess[str]:
    return _python(project, '-m', 'pytest', '-q', '-p', 'no:cacheprovider')


def _passed(output: str) -> int:
    match = re.search(r'^(\d+) passed', output.strip().splitlines()[-1])
    return int(match.group(1)) if match else 0


@pytest.mark.parametrize(
    ('guide', 'files', 'tests'),
    [
        ('testing.md', ['units_agentools.py', 'tests/conftest.py', 'tests/test_units.py', 'pyproject.toml'], 3),
        ('testing-llm-agents.md', ['trip_advisor.py', 'test_advisor.py'], 1),
    ],
)
def test_the_guides_test_files_pass_under_pytest(tmp_path: Path, guide: str, files: list[str], tests: int) -> None:
    assert _write_titled_blocks(DOCS / guide, tmp_path) == files
    if not (tmp_path / 'pyproject.toml').exists():
        (tmp_path / 'pyproject.toml').write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n', encoding='utf-8')
    result = _pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _passed(result.stdout) == tests, result.stdout


def test_the_layout_serves_the_command_line_as_shown(tmp_path: Path) -> None:
    _write_titled_blocks(DOCS / 'testing.md', tmp_path)
    (bash,) = [source for language, _, source in _blocks(DOCS / 'testing.md') if language == 'bash']
    command, expected = bash.strip().splitlines()
    assert command.startswith('agentool --import units_agentools call units ')
    payload = command.split(' call units ', 1)[1].strip("'")
    result = _python(tmp_path, '-m', 'agentool', '--import', 'units_agentools', 'call', 'units', payload)
    assert result.returncode == 0, result.stderr
    assert f'# {result.stdout.strip()}' == expected


def test_a_guide_test_that_fails_is_reported(tmp_path: Path) -> None:
    """The runner above can fail: a broken expectation in a guide's test file makes pytest exit non-zero."""
    _write_titled_blocks(DOCS / 'testing.md', tmp_path)
    tests = tmp_path / 'tests' / 'test_units.py'
    tests.write_text(tests.read_text().replace('== 42.164813', '== 42.0'), encoding='utf-8')
    result = _pytest(tmp_path)
    assert result.returncode == 1
    assert '1 failed, 2 passed' in result.stdout
