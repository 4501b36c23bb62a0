"""The `agentool` command line, run as a subprocess (`python -m agentool` and the console script)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from examples.calculator import CalculatorInput

ROOT = Path(__file__).resolve().parent.parent

TOOLS = '''
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_ai import RunContext

from agentool import BaseOperationInput, RoutingConfig, create_agentool


class ProfileInput(BaseOperationInput):
    operation: Literal['get']
    user: str


class Profile(BaseModel):
    user: str
    visits: int


@dataclass
class Counter:
    start: int = 41


async def get(ctx: RunContext[Counter], user: str) -> Profile:
    """Get a profile."""
    return Profile(user=user, visits=ctx.deps.start + 1)


async def raw(user: str) -> Any:
    """Untyped output."""
    return {'user': user, 'ok': True}


create_agentool('profiles', ProfileInput, RoutingConfig(operation_map={'get': 'get'}), [get], deps_type=Counter)
create_agentool('raw', ProfileInput, RoutingConfig(operation_map={'get': 'raw'}), [raw], tags=['loose'])
'''


def agentool(
    *args: str, cwd: Path = ROOT, stdin: str | None = None, env: Mapping[str, str] = os.environ
) -> subprocess.CompletedProcess[str]:
    # This checkout first on the path: from another directory, `-m agentool` would find whichever
    # agentool is installed in the environment instead.
    path = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))
    return subprocess.run(
        [sys.executable, '-m', 'agentool', *args],
        cwd=cwd,
        env={**env, 'PYTHONPATH': path},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def in_parallel(calls: list[tuple[str, ...]]) -> list[subprocess.CompletedProcess[str]]:
    """Run `agentool` once per argument tuple, concurrently (each run pays Python's start-up)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda args: agentool(*args), calls))


def calc(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return agentool('--import', 'examples.calculator', *args, stdin=stdin)


def assert_error(run: subprocess.CompletedProcess[str], *fragments: str, status: int = 1) -> None:
    assert run.returncode == status, run.stderr
    assert 'Traceback' not in run.stderr
    assert run.stdout == ''
    for fragment in fragments:
        assert fragment in run.stderr


@pytest.fixture
def tools_dir(tmp_path: Path) -> Path:
    (tmp_path / 'cli_tools.py').write_text(textwrap.dedent(TOOLS))
    return tmp_path


HELP = {
    (): 'Inspect, call and document registered agentools.',
    ('list',): '--match PATTERN',
    ('show',): "print the agentool's catalog entry as JSON",
    ('schema',): '--operation OP',
    ('call',): "'-' reads it from stdin",
    ('catalog',): '{json,markdown,mermaid,openapi}',
}


def test_help_everywhere() -> None:
    runs = in_parallel([(*args, '--help') for args in HELP])
    for (args, expected), run in zip(HELP.items(), runs, strict=True):
        assert run.returncode == 0, args
        assert run.stdout.startswith('usage: agentool'), args
        assert '--import MODULE' in run.stdout, args
        assert expected in ' '.join(run.stdout.split()), args


def test_nothing_is_imported_implicitly() -> None:
    run = agentool('list')
    assert run.returncode == 0
    assert run.stdout == ''
    assert 'use --import MODULE' in run.stderr


def test_list_with_imports_before_or_after_the_command(tools_dir: Path) -> None:
    before = agentool('--import', 'cli_tools', 'list', cwd=tools_dir)
    after = agentool('list', '--import', 'cli_tools', cwd=tools_dir)
    assert before.returncode == 0
    assert before.stdout == after.stdout
    assert [line.split()[0] for line in before.stdout.splitlines()] == ['profiles', 'raw']
    tagged = agentool('list', '--import', 'cli_tools', '--tag', 'loose', '--json', cwd=tools_dir)
    assert json.loads(tagged.stdout) == [
        {'name': 'raw', 'version': '1.0.0', 'description': None, 'tags': ['loose'], 'operations': ['get']}
    ]
    matched = agentool('--import', 'cli_tools', 'list', '--match', 'PRO*', cwd=tools_dir)
    assert matched.stdout.split()[0] == 'profiles'


def test_show() -> None:
    run = calc('show', 'calculator')
    assert run.returncode == 0
    assert run.stdout.startswith('calculator 1.0.0\n  Basic arithmetic on two numbers.')
    assert '    add -> add  Add two numbers.' in run.stdout
    assert '      a (float, required)  The first operand.' in run.stdout
    entry = json.loads(calc('show', 'calculator', '--json').stdout)
    assert entry['name'] == 'calculator'
    assert [op['name'] for op in entry['operations']] == ['add', 'subtract', 'multiply', 'divide']


def test_unknown_names_get_did_you_mean() -> None:
    assert_error(calc('show', 'calculater'), "no agentool named 'calculater'", "did you mean 'calculator'?")
    assert_error(calc('call', 'calc', '{}'), "did you mean 'calculator'?")
    assert_error(calc('schema', 'calculator', '--operation', 'ad'), "no operation 'ad'", "did you mean 'add'?")
    assert_error(agentool('lst'), "invalid choice: 'lst'", "did you mean 'list'?", status=2)


def test_schema() -> None:
    assert json.loads(calc('schema', 'calculator').stdout) == CalculatorInput.model_json_schema()
    add = json.loads(calc('schema', 'calculator', '--operation', 'add').stdout)
    assert add['properties']['operation']['const'] == 'add'
    assert json.loads(calc('schema', 'calculator', '--output').stdout) == {'type': 'number'}


def test_call_prints_the_typed_output_as_json(tools_dir: Path) -> None:
    run = calc('call', 'calculator', '{"operation": "add", "a": 5, "b": 3}')
    assert (run.returncode, run.stdout, run.stderr) == (0, '8.0\n', '')
    piped = calc('call', 'calculator', '-', stdin='{"operation": "multiply", "a": 6, "b": 7}')
    assert piped.stdout == '42.0\n'
    typed = agentool('--import', 'cli_tools', 'call', 'profiles', '{"operation": "get", "user": "ada"}', cwd=tools_dir)
    assert typed.returncode == 0, typed.stderr
    assert json.loads(typed.stdout) == {'user': 'ada', 'visits': 42}  # deps built by the injector
    untyped = agentool('--import', 'cli_tools', 'call', 'raw', '{"operation": "get", "user": "ada"}', cwd=tools_dir)
    assert json.loads(untyped.stdout) == {'user': 'ada', 'ok': True}


BAD_INPUT = {
    '{"operation": "power", "a": 1, "b": 2}': ["has no operation 'power'", 'known operations'],
    '{"operation": "ad", "a": 1, "b": 2}': ["did you mean 'add'?"],
    '{"operation": "add", "a": 1}': ["invalid input for agentool 'calculator' operation 'add'", "field 'b'"],
    '{"operation": "add", "a": 1, "b": ': ['is not valid JSON'],
    '[1, 2]': ['must be a JSON object'],
    '{"operation": "divide", "a": 1, "b": 0}': ['ZeroDivisionError'],
    # JSON has no number for the result: refused as on MCP, not printed as `Infinity`.
    '{"operation": "multiply", "a": 1e308, "b": 10}': ["operation 'multiply'", 'infinite or NaN number'],
}


def test_call_with_bad_input_fails_cleanly() -> None:
    runs = in_parallel([('--import', 'examples.calculator', 'call', 'calculator', p) for p in BAD_INPUT])
    for fragments, run in zip(BAD_INPUT.values(), runs, strict=True):
        assert_error(run, 'agentool: error: ', *fragments)


def test_catalog_formats_to_stdout_and_file(tmp_path: Path) -> None:
    target = tmp_path / 'openapi.json'
    imports = ('--import', 'examples.calculator', 'catalog')
    formats = ['json', 'markdown', 'mermaid', 'openapi']
    *runs, written = in_parallel(
        [*((*imports, '--format', f) for f in formats), (*imports, '-f', 'openapi', '-o', str(target))]
    )
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    as_json, as_markdown, as_mermaid, as_openapi = (run.stdout for run in runs)
    assert json.loads(as_json)['agentools'][0]['name'] == 'calculator'
    assert as_markdown.startswith('# AgenTool Registry Documentation\n\nTotal AgenTools: 1\n')
    assert '## calculator' in as_markdown
    assert as_mermaid.startswith('graph LR\n    a0("calculator")')
    spec = json.loads(as_openapi)
    validate(spec)
    assert '/agentools/calculator/divide' in spec['paths']
    assert (written.returncode, written.stdout) == (0, '')
    assert json.loads(target.read_text()) == spec


def test_catalog_to_an_unwritable_file(tmp_path: Path) -> None:
    assert_error(calc('catalog', '-o', str(tmp_path / 'missing' / 'x.json')), 'cannot write')


def test_import_failures_are_reported(tools_dir: Path) -> None:
    assert_error(
        agentool('--import', 'no_such_module', 'list'), "cannot import module 'no_such_module'", 'ModuleNotFoundError'
    )
    assert_error(agentool('--import', '', 'list'), "cannot import module '': ValueError")
    (tools_dir / 'broken_tools.py').write_text('raise RuntimeError("boom")\n')
    assert_error(agentool('--import', 'broken_tools', 'list', cwd=tools_dir), 'RuntimeError: boom')


def test_console_script() -> None:
    script = Path(sys.executable).parent / 'agentool'
    if not script.exists():
        pytest.skip('the agentool console script is not installed in this environment')
    run = subprocess.run(
        [str(script), '--import', 'examples.calculator', 'list'], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith('calculator')


@pytest.mark.parametrize(
    ('options', 'named'),
    [
        (
            ['--host', '0.0.0.0', '--allow-unauthenticated', '--token-file', 'token'],
            '--host, --token-file, --allow-unauthenticated',
        ),
        (['--port', '9000'], '--port'),
        (['--max-request-bytes', '10', '--transport', 'stdio'], '--max-request-bytes'),
    ],
)
def test_http_options_with_stdio_are_a_usage_error(
    options: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentool.cli import main

    assert main(['--import', 'examples.calculator', 'mcp', *options]) == 2
    err = capsys.readouterr().err
    assert err == (f'agentool mcp: error: {named} only apply to --transport streamable-http (the transport is stdio)\n')


INFINITE_DEFAULT = """
from typing import Literal

from agentool import BaseOperationInput, RoutingConfig, create_agentool


class LimitInput(BaseOperationInput):
    operation: Literal['go']
    limit: float = float('inf')


async def go(limit: float = float('inf')) -> float:
    return 1.0


create_agentool('inf', LimitInput, RoutingConfig(operation_map={'go': 'go'}), [go])
"""


def test_json_outputs_are_json_even_with_an_infinite_default(tmp_path: Path) -> None:
    # JSON has no number for infinity: these printed `Infinity` and exited 0.
    (tmp_path / 'inf_tools.py').write_text(INFINITE_DEFAULT)
    commands = [
        ('catalog', '--format', 'json'),
        ('catalog', '--format', 'openapi'),
        ('schema', 'inf'),
        ('schema', 'inf', '--operation', 'go'),
        ('show', 'inf', '--json'),
    ]

    def refuse(constant: str) -> object:
        raise ValueError(f'not JSON: {constant}')

    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda args: agentool('--import', 'inf_tools', *args, cwd=tmp_path), commands))
    for args, run in zip(commands, runs, strict=True):
        assert run.returncode == 0, (args, run.stderr)
        assert '"Infinity"' in run.stdout, args  # written as a string, as pydantic's `ser_json_inf_nan='strings'`
        json.loads(run.stdout, parse_constant=refuse)


def test_importing_from_the_working_directory_writes_nothing_there(tools_dir: Path) -> None:
    # With Python's defaults (bytecode written), `--import` left `__pycache__/` in the user's directory.
    defaults = {name: value for name, value in os.environ.items() if name != 'PYTHONDONTWRITEBYTECODE'}
    run = agentool('--import', 'cli_tools', 'list', cwd=tools_dir, env=defaults)
    assert run.returncode == 0, run.stderr
    assert sorted(path.name for path in tools_dir.iterdir()) == ['cli_tools.py']


@pytest.mark.parametrize(
    ('args', 'message'),
    [
        ((), "agentool: error: the following arguments are required: COMMAND (see 'agentool --help')"),
        (('catalog', '--format', 'yaml'), "agentool catalog: error: argument --format/-f: invalid choice: 'yaml'"),
        (('schema', 'x', '--operation', 'a', '--output'), 'agentool schema: error: argument --output: not allowed'),
        (('mcp', '--transport', 'streamable-http', '--port', 'abc'), "argument --port: invalid int value: 'abc'"),
    ],
)
def test_usage_errors_are_one_line_with_status_2(args: tuple[str, ...], message: str) -> None:
    # As the docs say of every error; argparse printed its usage block above the message.
    run = agentool(*args)
    assert_error(run, message, status=2)
    assert len(run.stderr.splitlines()) == 1, run.stderr
