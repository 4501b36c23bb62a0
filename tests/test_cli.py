"""The `agentool` command line: its behaviour through `main()` in-process, and what only a process shows.

Most checks call `agentool.cli.main()` in this process (`cli` below: same arguments, exit status,
stdout and stderr as the console script, without a new interpreter importing pydantic-ai each time).
A handful run real processes (`agentool_process`): the console script and `python -m agentool`, for
exit codes, stdin, the import path and `__pycache__`, and a usage error's single line.

Also here: `--help` and usage errors without pydantic-ai; `--import` puts the working directory after
the standard library; the `agentool mcp` serving flags reach `HttpOptions`; `call NAME -` reads standard
input no further than the limit; and what is printed is terminal-safe (errors on one line, control
characters escaped, the full error text in the `agentool.cli` log). Bad input given as an argument is
the matrix in tests/test_hostile_input.py (its `CLI call` surface).
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from openapi_spec_validator import validate

from agentool import BaseOperationInput, Route, RoutingConfig, create_agentool, use_registry
from agentool.cli import main
from examples.calculator import CalculatorInput, create_calculator
from tests.agentools import ROOT
from tests.notes_agentool import create_notes

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


@dataclass(frozen=True)
class Run:
    """What a command run left: its exit status and output, as `subprocess.CompletedProcess` has them."""

    returncode: int
    stdout: str
    stderr: str


Cli = Callable[..., Run]


def _imported(args: tuple[str, ...]) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == '--import']


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[Cli]:
    """`agentool ARGS...` in this process: a fresh registry per run, the `--import`ed modules imported afresh.

    As in a new process: modules named by `--import` run again (so they register in this run's
    registry), and what the run imported, appended to `sys.path` or changed in the directory is undone after.
    """
    monkeypatch.setattr(sys, 'path', list(sys.path))
    saved = dict(sys.modules)

    def run(*args: str, cwd: Path = ROOT, stdin: str | None = None) -> Run:
        monkeypatch.chdir(cwd)
        if stdin is not None:
            monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(io.BytesIO(stdin.encode())))
        for module in _imported(args):
            sys.modules.pop(module, None)
        with use_registry():
            try:
                status = main(list(args))
            except SystemExit as exit:  # argparse: --help (0) and usage errors (2)
                status = exit.code if isinstance(exit.code, int) else 1
        out, err = capsys.readouterr()
        return Run(status, out, err)

    yield run
    for name in set(sys.modules) - set(saved):
        del sys.modules[name]
    sys.modules.update(saved)


def agentool_process(
    *args: str, cwd: Path = ROOT, stdin: str | None = None, env: Mapping[str, str] = os.environ
) -> subprocess.CompletedProcess[str]:
    """`python -m agentool ARGS...` as a new process."""
    # This checkout first on the path: from another directory, `-m agentool` would find whichever
    # agentool is installed in the environment instead.
    command = [sys.executable, '-m', 'agentool', *args]
    env = {**env, 'PYTHONPATH': os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')]))}
    return subprocess.run(command, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=120)


def calc(cli: Cli, *args: str, stdin: str | None = None, cwd: Path = ROOT) -> Run:
    return cli('--import', 'examples.calculator', *args, stdin=stdin, cwd=cwd)


def assert_error(run: Run | subprocess.CompletedProcess[str], *fragments: str, status: int = 1) -> None:
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


def test_help_everywhere(cli: Cli) -> None:
    for args, expected in HELP.items():
        run = cli(*args, '--help')
        assert run.returncode == 0, args
        assert run.stdout.startswith('usage: agentool'), args
        assert '--import MODULE' in run.stdout, args
        assert expected in ' '.join(run.stdout.split()), args


def test_nothing_is_imported_implicitly(cli: Cli) -> None:
    run = cli('list')
    assert run.returncode == 0
    assert run.stdout == ''
    assert 'use --import MODULE' in run.stderr


def test_list_with_imports_before_or_after_the_command(cli: Cli, tools_dir: Path) -> None:
    before = cli('--import', 'cli_tools', 'list', cwd=tools_dir)
    after = cli('list', '--import', 'cli_tools', cwd=tools_dir)
    assert before.returncode == 0
    assert before.stdout == after.stdout
    assert [line.split()[0] for line in before.stdout.splitlines()] == ['profiles', 'raw']
    tagged = cli('list', '--import', 'cli_tools', '--tag', 'loose', '--json', cwd=tools_dir)
    assert json.loads(tagged.stdout) == [
        {'name': 'raw', 'version': '1.0.0', 'description': None, 'tags': ['loose'], 'operations': ['get']}
    ]
    matched = cli('--import', 'cli_tools', 'list', '--match', 'PRO*', cwd=tools_dir)
    assert matched.stdout.split()[0] == 'profiles'


def test_show(cli: Cli) -> None:
    run = calc(cli, 'show', 'calculator')
    assert run.returncode == 0
    assert run.stdout.startswith('calculator 1.0.0\n  Basic arithmetic on two numbers.')
    assert '    add -> add  Add two numbers.' in run.stdout
    assert '      a (float, required)  The first operand.' in run.stdout
    entry = json.loads(calc(cli, 'show', 'calculator', '--json').stdout)
    assert entry['name'] == 'calculator'
    assert [op['name'] for op in entry['operations']] == ['add', 'subtract', 'multiply', 'divide']


def test_unknown_names_get_did_you_mean(cli: Cli) -> None:
    assert_error(calc(cli, 'show', 'calculater'), "no agentool named 'calculater'", "did you mean 'calculator'?")
    assert_error(calc(cli, 'call', 'calc', '{}'), "did you mean 'calculator'?")
    assert_error(calc(cli, 'schema', 'calculator', '--operation', 'ad'), "no operation 'ad'", "did you mean 'add'?")
    assert_error(cli('lst'), "invalid choice: 'lst'", "did you mean 'list'?", status=2)


def test_schema(cli: Cli) -> None:
    assert json.loads(calc(cli, 'schema', 'calculator').stdout) == CalculatorInput.model_json_schema()
    add = json.loads(calc(cli, 'schema', 'calculator', '--operation', 'add').stdout)
    assert add['properties']['operation']['const'] == 'add'
    assert json.loads(calc(cli, 'schema', 'calculator', '--output').stdout) == {'type': 'number'}


def test_call_prints_the_typed_output_as_json(cli: Cli, tools_dir: Path) -> None:
    run = calc(cli, 'call', 'calculator', '{"operation": "add", "a": 5, "b": 3}')
    assert (run.returncode, run.stdout, run.stderr) == (0, '8.0\n', '')
    piped = calc(cli, 'call', 'calculator', '-', stdin='{"operation": "multiply", "a": 6, "b": 7}')
    assert piped.stdout == '42.0\n'
    typed = cli('--import', 'cli_tools', 'call', 'profiles', '{"operation": "get", "user": "ada"}', cwd=tools_dir)
    assert typed.returncode == 0, typed.stderr
    assert json.loads(typed.stdout) == {'user': 'ada', 'visits': 42}  # deps built by the injector
    untyped = cli('--import', 'cli_tools', 'call', 'raw', '{"operation": "get", "user": "ada"}', cwd=tools_dir)
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


def test_call_with_bad_input_fails_cleanly(cli: Cli) -> None:
    for prompt, fragments in BAD_INPUT.items():
        assert_error(calc(cli, 'call', 'calculator', prompt), 'agentool: error: ', *fragments)


def test_catalog_formats_to_stdout_and_file(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / 'openapi.json'
    imports = ('--import', 'examples.calculator', 'catalog')
    formats = ['json', 'markdown', 'mermaid', 'openapi']
    runs = [cli(*imports, '--format', f) for f in formats]
    written = cli(*imports, '-f', 'openapi', '-o', str(target))
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


def test_catalog_to_an_unwritable_file(cli: Cli, tmp_path: Path) -> None:
    assert_error(calc(cli, 'catalog', '-o', str(tmp_path / 'missing' / 'x.json')), 'cannot write')


def test_import_failures_are_reported(cli: Cli, tools_dir: Path) -> None:
    assert_error(
        cli('--import', 'no_such_module', 'list'), "cannot import module 'no_such_module'", 'ModuleNotFoundError'
    )
    assert_error(cli('--import', '', 'list'), "cannot import module '': ValueError")
    (tools_dir / 'broken_tools.py').write_text('raise RuntimeError("boom")\n')
    assert_error(cli('--import', 'broken_tools', 'list', cwd=tools_dir), 'RuntimeError: boom')


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """`agentool show x | head`: the pipe closes before the output is written; no error, SIGPIPE's status."""
    command = [sys.executable, '-m', 'agentool', '--import', 'examples.calculator', 'show', 'calculator']
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH')]))}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    process.stdout.close()  # long before the command has its answer ready
    _, err = process.communicate(timeout=120)
    assert process.returncode == 141
    assert err == b''


def test_console_script() -> None:
    script = Path(sys.executable).parent / 'agentool'
    if not script.exists():
        pytest.skip('the agentool console script is not installed in this environment')
    command = [str(script), '--import', 'examples.calculator', 'list']
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
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


def test_json_outputs_are_json_even_with_an_infinite_default(cli: Cli, tmp_path: Path) -> None:
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

    for args in commands:
        run = cli('--import', 'inf_tools', *args, cwd=tmp_path)
        assert run.returncode == 0, (args, run.stderr)
        assert '"Infinity"' in run.stdout, args  # written as a string, as pydantic's `ser_json_inf_nan='strings'`
        json.loads(run.stdout, parse_constant=refuse)


def test_importing_from_the_working_directory_writes_nothing_there(tools_dir: Path) -> None:
    # With Python's defaults (bytecode written), `--import` left `__pycache__/` in the user's directory.
    defaults = {name: value for name, value in os.environ.items() if name != 'PYTHONDONTWRITEBYTECODE'}
    run = agentool_process('--import', 'cli_tools', 'list', cwd=tools_dir, env=defaults)
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
def test_usage_errors_are_one_line_with_status_2(cli: Cli, args: tuple[str, ...], message: str) -> None:
    # As the docs say of every error; argparse printed its usage block above the message.
    run = cli(*args)
    assert_error(run, message, status=2)
    assert len(run.stderr.splitlines()) == 1, run.stderr


def test_a_process_reads_stdin_and_exits_with_each_status(tools_dir: Path) -> None:
    # What only a process shows: the input piped in, and the exit status the shell sees.
    piped = agentool_process(
        '--import', 'cli_tools', 'call', 'profiles', '-', cwd=tools_dir, stdin='{"operation": "get", "user": "ada"}'
    )
    assert (piped.returncode, json.loads(piped.stdout), piped.stderr) == (0, {'user': 'ada', 'visits': 42}, '')
    failed = agentool_process('--import', 'cli_tools', 'call', 'profiles', '-', cwd=tools_dir, stdin='{"operation": ')
    assert_error(failed, 'is not valid JSON')
    # Status 2 from a process: below (usage errors through the console script's path).


@pytest.mark.parametrize('fmt', ['json', 'mermaid'])
def test_catalog_title_with_a_format_that_has_none_is_a_usage_error(cli: Cli, fmt: str, tmp_path: Path) -> None:
    """Refused, not ignored (as `mcp` refuses HTTP options with stdio), and nothing is written."""
    run = calc(cli, 'catalog', '--format', fmt, '--title', 'Ours', '-o', 'out.txt', cwd=tmp_path)
    assert_error(run, '--title', fmt, status=2)
    assert run.stderr.count('\n') == 1
    assert list(tmp_path.iterdir()) == []
    assert calc(cli, 'catalog', '--format', 'markdown', '--title', 'Ours').stdout.startswith('# Ours\n')


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
    command = [sys.executable, '-c', _PROBE, *args]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
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


def test_a_module_in_the_working_directory_does_not_shadow_the_standard_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / 'sqlite3.py').write_text("raise RuntimeError('the standard library was shadowed')\n")
    (tmp_path / 'shadow_check_tools.py').write_text('import sqlite3\n\nassert sqlite3.connect\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, 'path', [p for p in sys.path if p not in ('', str(tmp_path))])
    monkeypatch.delitem(sys.modules, 'sqlite3', raising=False)  # imported afresh, through `sys.path`
    try:
        assert main(['--import', 'shadow_check_tools', 'list']) == 0, capsys.readouterr().err
    finally:
        sys.modules.pop('shadow_check_tools', None)
    assert sys.path[-1] == str(tmp_path)
    assert 'shadowed' not in capsys.readouterr().err


LIMITS = [
    ('--max-sessions', '0', '5', 'max_sessions'),
    ('--max-sessions-per-client', '-1', '2', 'max_sessions_per_client'),
    ('--session-idle-timeout', 'nan', '1', 'session_idle_timeout'),
    ('--shutdown-timeout', 'inf', '1', 'shutdown_timeout'),
    ('--allowed-origin', 'not-an-origin', 'https://a.example', 'allowed_origins'),
]
"""Each HTTP serving limit: its flag, a bad value, a good one, and the option it sets."""


@pytest.mark.parametrize(('flag', 'bad', 'good', 'option'), LIMITS)
def test_a_bad_limit_is_one_error_line_naming_it(
    flag: str, bad: str, good: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(['mcp', '--transport', 'streamable-http', flag, bad]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert f'invalid HTTP serving options: {option} must be' in err


@pytest.mark.parametrize(('flag', 'bad', 'good', 'option'), LIMITS)
def test_http_limits_without_the_http_transport_are_a_usage_error(
    flag: str, bad: str, good: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(['mcp', flag, good]) == 2
    assert f'{flag} only apply to --transport streamable-http' in capsys.readouterr().err


HUGE = '{"operation": "add", "a": 1, "b": 2, "x": ' + '[' * 15_000_000 + ']' * 15_000_000 + '}'


REFUSED = "agentool: error: input to agentool 'calculator' "


def stdin(monkeypatch: pytest.MonkeyPatch, raw: bytes) -> io.BytesIO:
    buffer = io.BytesIO(raw)
    monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(buffer, encoding='utf-8'))
    return buffer


@pytest.mark.parametrize(
    ('raw', 'status', 'printed'),
    [
        (HUGE.encode(), 1, "agentool: error: input to agentool 'calculator' on standard input is over the limit"),
        (
            b'{"operation": "add", "a": 1, "b": "\xff"}',
            1,
            "agentool: error: input to agentool 'calculator' is not valid JSON",
        ),
        (b'{"operation": "add", "a": 1, "b": 2}', 0, '3.0\n'),
    ],
    ids=['over the limit', 'not UTF-8', 'within the limit'],
)
def test_stdin_is_read_no_further_than_the_limit(
    raw: bytes, status: int, printed: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    create_calculator()
    buffer = stdin(monkeypatch, raw)
    assert main(['call', 'calculator', '-']) == status
    assert buffer.tell() <= 1024 * 1024 + 1 + io.DEFAULT_BUFFER_SIZE  # the rest was never read
    out, err = capsys.readouterr()
    assert (out or err).startswith(printed)


ESC = '\x1b'
HOSTILE = f'{ESC}]0;pwned\a{ESC}[2J\rgone'


class EchoInput(BaseOperationInput):
    operation: Literal['echo', 'fail']
    text: str = ''


async def echo(text: str) -> str:
    return text


async def fail(text: str) -> str:
    raise RuntimeError('line\n' * 300 + text)


@pytest.fixture
def hostile_echo() -> None:
    """An `echo` agentool whose descriptions hold terminal escapes."""
    routing = RoutingConfig(operation_map={'echo': Route(tool='echo', description=f'echoes {HOSTILE}'), 'fail': 'fail'})
    create_agentool('echo', EchoInput, routing, [echo, fail], description=f'An echo.\n{HOSTILE}\nThe end.')


@pytest.mark.usefixtures('hostile_echo')
def test_a_multi_line_tool_error_is_one_escaped_line_and_logged_whole(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger='agentool.cli')
    assert main(['call', 'echo', f'{{"operation": "fail", "text": "{ESC}[31m"}}'.replace(ESC, '\\u001b')]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert err.startswith('agentool: error: ')
    assert 'line\\nline\\n' in err
    assert ESC not in err
    assert len(err) < 2000
    assert ('line\n' * 300) in caplog.text  # the full text, for whoever reads the log


@pytest.mark.usefixtures('hostile_echo')
def test_show_escapes_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['show', 'echo']) == 0
    out = capsys.readouterr().out
    assert ESC not in out
    assert '\r' not in out
    assert '\a' not in out
    assert '\\x1b]0;pwned\\x07\\x1b[2J\\rgone' in out
    assert 'An echo.\n' in out  # a description's own line breaks stay


@pytest.mark.usefixtures('hostile_echo')
def test_list_escapes_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['list']) == 0
    out = capsys.readouterr().out
    assert ESC not in out
    assert out.startswith('echo')


@pytest.mark.usefixtures('hostile_echo')
def test_an_error_quoting_hostile_input_never_writes_it_raw(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['call', 'echo', f'{{"operation": "{HOSTILE}"}}'.replace(ESC, '\\u001b').replace('\r', '\\r')]) == 1
    assert main(['call', f'no{ESC}[2Jsuch', '{}']) == 1
    err = capsys.readouterr().err
    assert ESC not in err
    assert '\r' not in err
    assert err.count('\n') == 2


@pytest.mark.usefixtures('hostile_echo')
def test_json_output_already_escapes_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(['call', 'echo', '{"operation": "echo", "text": "a\\u001bb"}']) == 0
    out = capsys.readouterr().out
    assert ESC not in out


@pytest.mark.usefixtures('hostile_echo')
def test_a_usage_error_never_writes_an_argument_raw(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(['list', f'{ESC}[2J\rextra'])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert ESC not in err
    assert '\\x1b[2J\\rextra' in err
    assert err.count('\n') == 1
