"""The command line answers `--help` and usage errors without pydantic-ai; the frictions a new user met."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from agentool.cli import main
from examples.calculator import create_calculator
from tests.notes_agentool import create_notes

ROOT = Path(__file__).resolve().parent.parent

# The console script's own code path (`agentool_cli.main`), run in a fresh interpreter that then
# reports whether pydantic-ai (or the package's `__init__`) was imported on the way.
_PROBE = """
import sys
import agentool_cli
sys.argv = ['agentool', *sys.argv[1:]]
try:
    status = agentool_cli.main()
except SystemExit as exit:
    status = exit.code
loaded = sorted({'pydantic_ai', 'pydantic', 'agentool.core'} & set(sys.modules))
print('LOADED', loaded, 'STATUS', status, file=sys.stderr)
"""


def _probe(*args: str) -> tuple[list[str], int, str]:
    run = subprocess.run(
        [sys.executable, '-c', _PROBE, *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    *lines, report = run.stderr.strip().splitlines()
    assert report.startswith('LOADED '), run.stderr
    loaded, status = report.removeprefix('LOADED ').split(' STATUS ')
    return json.loads(loaded.replace("'", '"')), int(status), run.stdout + '\n'.join(lines)


@pytest.mark.parametrize(
    ('args', 'status', 'shown'),
    [
        (('--help',), 0, 'Inspect, call and document registered agentools.'),
        (('catalog', '--help'), 0, '--openapi-version'),
        (('lst',), 2, "did you mean 'list'?"),
        (('catalog', '--format', 'yaml'), 2, "invalid choice: 'yaml'"),
        ((), 2, 'the following arguments are required: COMMAND'),
    ],
)
def test_help_and_usage_errors_do_not_import_pydantic_ai(args: tuple[str, ...], status: int, shown: str) -> None:
    loaded, code, output = _probe(*args)
    assert (loaded, code) == ([], status), output
    assert shown in output


def test_a_command_imports_the_library_through_the_console_script_path() -> None:
    # The deferred package `__init__` does run before a command: the version check and the hook.
    loaded, code, output = _probe('--import', 'examples.calculator', 'list')
    assert code == 0, output
    assert {'pydantic_ai', 'agentool.core'} <= set(loaded)
    assert output.startswith('calculator')


def test_call_with_nothing_registered_says_to_import_a_module(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['call', 'calculator', '{}']) == 1
    err = capsys.readouterr().err
    assert err == (
        "agentool: error: no agentool named 'calculator': no agentools are registered; "
        'use --import MODULE to import the modules that register them\n'
    )
    assert main(['show', 'calculator']) == 1
    assert 'use --import MODULE' in capsys.readouterr().err


@pytest.mark.parametrize('version', ['3.0.0', '3.1.0'])
def test_catalog_chooses_the_openapi_version(version: str, capsys: pytest.CaptureFixture[str]) -> None:
    create_calculator()
    assert main(['catalog', '-f', 'openapi', '--openapi-version', version]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert spec['openapi'] == version
    assert '/agentools/calculator/add' in spec['paths']
    validate(spec)


def test_openapi_version_with_another_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['--import', 'examples.calculator', 'catalog', '--openapi-version', '3.1.0']) == 2
    assert capsys.readouterr().err == (
        'agentool catalog: error: --openapi-version only applies to --format openapi (the format is json)\n'
    )


def test_show_words_fields_and_hints_as_the_markdown_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    create_notes()
    assert main(['show', 'notes']) == 0
    shown = capsys.readouterr().out
    assert '    get -> get  Read a note.\n      hints: read-only, idempotent\n' in shown
    assert '      hints: destructive, not concurrency-safe\n' in shown
    assert '      hints: read-only, output cut at 20 characters\n' in shown
    assert '    old -> old  The old reader.\n      hints: deprecated\n' in shown
    assert '      copies (int, optional, default 1)  How many times to repeat the text.\n' in shown
    assert '      key (str, required)  The note key.\n' in shown
    # The same words as the Markdown catalog, without its markup.
    assert main(['catalog', '-f', 'markdown']) == 0
    markdown = capsys.readouterr().out
    assert '**Hints:** read-only, idempotent' in markdown
    assert '`copies` (`int`, optional, default `1`): How many times to repeat the text.' in markdown
