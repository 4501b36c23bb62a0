"""The `agentool` command line: look at a registry, call an agentool, write catalogs.

```text
agentool [--import MODULE]... COMMAND ...

  list                      registered agentools (--tag, --match, --json)
  show NAME                 one agentool: operations, fields, metadata (--json)
  schema NAME               input JSON schema (--operation OP, --output)
  call NAME JSON            run it through its agent; print the typed output as JSON
  catalog --format F        json | markdown | mermaid | openapi, to stdout or -o FILE
  mcp                       serve the agentools over MCP (needs the `mcp` extra)
  cassette ACTION FILE...   show | diff A B | prune | scrub: review and clean cassettes
```

Nothing is imported implicitly: `--import MODULE` (repeatable, before or after the command)
imports the modules that register agentools; the working directory is importable (after the
standard library and installed packages, so a `queue.py` there shadows nothing), and no
`__pycache__/` is written for what is imported that way. Errors are
one line on stderr and exit status 1 (2 for usage errors), never a traceback.

Each command is a `Command` in `COMMANDS`; a new one is a function taking the parsed arguments
and returning the exit status, plus one entry in that tuple.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pydantic_core import to_json

from ._cli_call import call, read_stdin
from ._interface import check_json_numbers
from ._modules import import_modules
from ._terminal import error_line, terminal_safe
from .catalog import catalog_entry, input_schema
from .catalog import operations as catalog_operations
from .catalog.data import field_requirement
from .core.registry import AgenToolRegistry, get_registry
from .errors import AgenToolError, clip, did_you_mean, quote, suggest

__all__ = ('main', 'Command', 'COMMANDS', 'CLIError', 'UsageError')


class CLIError(Exception):
    """A failure reported as one line on stderr, with exit status 1."""


class UsageError(CLIError):
    """Options that do not go together, found after parsing: one line on stderr, exit status 2."""


@dataclass(frozen=True, kw_only=True)
class Command:
    """One subcommand: its name, one-line help, how to declare its arguments and how to run it."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# --- helpers ---------------------------------------------------------------------------------------


def _registry() -> AgenToolRegistry:
    return get_registry()


def _require(name: str) -> str:
    _registry().require(name)  # raises AgenToolNotFoundError with "did you mean" suggestions
    return name


def _json_text(value: Any) -> str:
    # Always RFC 8259 JSON: a float JSON has no number for, wherever it is left (an enum of floats, a
    # schema's bound), is a string as the catalog writes an infinite default ('Infinity'), never `Infinity`.
    return to_json(value, indent=2, serialize_unknown=True, inf_nan_mode='strings').decode()


def _print_json(value: Any) -> None:
    print(_json_text(value))


def _line(text: str, *, keep_newlines: bool = False) -> None:
    print(terminal_safe(text, keep_newlines=keep_newlines))  # a description's ESC or CR is shown, not obeyed


def _first_line(text: str | None) -> str:
    return (text or '').strip().split('\n', 1)[0]


def _write(text: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(text if text.endswith('\n') else f'{text}\n')
        return
    try:
        Path(output).write_text(text, encoding='utf-8')
    except OSError as error:
        raise CLIError(f'cannot write {output}: {error.strerror or error}') from None


# --- commands --------------------------------------------------------------------------------------


def _configure_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--tag', action='append', default=None, help='only agentools with this tag (repeatable)')
    parser.add_argument('--match', metavar='PATTERN', help='name substring, or shell pattern with * ? [')
    parser.add_argument('--json', action='store_true', help='print JSON instead of a table')


def _run_list(args: argparse.Namespace) -> int:
    registry = _registry()
    names = registry.search(tags=args.tag, name_pattern=args.match)
    rows = [(name, registry.require(name)) for name in names]
    if args.json:
        summary = [
            {'name': n, 'version': c.version, 'description': c.description, 'tags': c.tags}
            | {'operations': list(c.routing_config.operation_map)}
            for n, c in rows
        ]
        _print_json(summary)
        return 0
    if not rows:
        hint = '' if len(registry) else '; use --import MODULE to import the modules that register them'
        print(f'no agentools found{hint}', file=sys.stderr)
        return 0
    width = max(len(name) for name, _ in rows)
    for name, config in rows:
        _line(f'{name:<{width}}  {config.version:<8}  {_first_line(config.description)}'.rstrip())
    return 0


def _configure_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', help='the agentool')
    parser.add_argument('--json', action='store_true', help="print the agentool's catalog entry as JSON")


def _run_show(args: argparse.Namespace) -> int:
    entry = catalog_entry(_registry(), _require(args.name))
    if args.json:
        _print_json(entry)
        return 0
    _line(f'{entry["name"]} {entry["version"]}')
    if entry['description']:
        _line(f'  {entry["description"].strip()}', keep_newlines=True)
    _line(f'  tags: {", ".join(entry["tags"]) or "-"}')
    _line(f'  depends on: {", ".join(entry["dependencies"]) or "-"}')
    _line(f'  output: {entry["output_type"] or "JSON text (untyped)"}')
    _line('  operations:')
    for op in entry['operations']:
        flags = [f for f, on in (('read-only', op['read_only']), ('destructive', op['destructive'])) if on]
        flags += ['deprecated'] if op['deprecated'] else []
        marks = f' [{", ".join(flags)}]' if flags else ''
        _line(f'    {op["name"]} -> {op["tool"]}{marks}  {_first_line(op["description"])}'.rstrip())
        for field in op['fields']:
            required = field_requirement(field, op['request_schema'])  # 'required, may be null' when null is taken
            _line(f'      {field["name"]}: {field["type"]} ({required})  {field["description"] or ""}'.rstrip())
    if problems := _registry().validate_config(args.name):  # errors, and warnings such as an unfilled parameter
        _line('  problems:')
        for problem in problems:
            _line(f'    {problem.severity}: {problem.message}')
    return 0


def _configure_schema(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', help='the agentool')
    which = parser.add_mutually_exclusive_group()
    which.add_argument('--operation', metavar='OP', help='the request schema of one operation')
    which.add_argument('--output', action='store_true', help='the output schema instead of the input schema')


def _run_schema(args: argparse.Namespace) -> int:
    registry = _registry()
    name = _require(args.name)
    if args.output:
        entry = catalog_entry(registry, name)
        _print_json(entry['output_schema'] or {'description': 'untyped: the output is JSON text'})
    elif args.operation is not None:
        operations = catalog_operations(registry, name)
        if args.operation not in operations:
            raise CLIError(
                f'agentool {name!r} has no operation {quote(args.operation)}{_suggest(args.operation, operations)}'
            )
        _print_json(operations[args.operation]['request_schema'])
    else:
        _print_json(input_schema(registry, name))
    return 0


def _configure_call(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', help='the agentool')
    parser.add_argument('input', metavar='JSON', help="the input, a JSON object ('-' reads it from stdin)")


def _run_call(args: argparse.Namespace) -> int:
    registry = _registry()
    name = _require(args.name)
    config = registry.require(name)
    output_type = config.output_type
    prompt = read_stdin(name, config.max_input_bytes) if args.input == '-' else args.input
    output = asyncio.run(call(registry, name, prompt, output_type))
    if output_type is None:
        print(terminal_safe(str(output), keep_newlines=True) if sys.stdout.isatty() else output)
    else:
        # Printed as JSON, so a float JSON has no number for is refused as on every JSON surface.
        manager = registry.get_manager(name)
        operation = manager.operation_of(manager.validate_json(prompt))
        check_json_numbers(output, agentool=name, operation=operation)
        _print_json(output)
    return 0


_FORMATS = ('json', 'markdown', 'mermaid', 'openapi')


def _configure_catalog(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--format', '-f', choices=_FORMATS, default='json', help='output format (default: json)')
    parser.add_argument('--output', '-o', metavar='FILE', help='write to FILE instead of stdout')
    parser.add_argument('--title', help='title of the Markdown document or the OpenAPI info')


def _run_catalog(args: argparse.Namespace) -> int:
    if args.title is not None and args.format not in ('markdown', 'openapi'):  # refused, not ignored
        raise UsageError(f'--title only applies to --format markdown or openapi (the format is {args.format})')
    registry = _registry()
    if args.format == 'json':
        text = _json_text(registry.export_catalog())
    elif args.format == 'markdown':
        text = registry.generate_markdown_docs(title=args.title or 'AgenTool Registry Documentation')
    elif args.format == 'mermaid':
        text = registry.generate_mermaid_graph()
    else:
        text = _json_text(registry.generate_api_spec(title=args.title or 'AgenTool Registry API'))
    _write(text, args.output)
    return 0


def _configure_mcp(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--include', action='append', metavar='SELECTOR', help='expose only these (repeatable)')
    parser.add_argument('--exclude', action='append', metavar='SELECTOR', help='never expose these (repeatable)')
    parser.add_argument('--transport', choices=('stdio', 'streamable-http'), default='stdio', help='default: stdio')
    http = parser.add_argument_group(
        'streamable-http', 'serving over HTTP at http://HOST:PORT/mcp (only with --transport streamable-http)'
    )
    # No defaults here (None = not given), so options given with stdio are refused, not ignored.
    http.add_argument('--host', help='address to listen on (default: 127.0.0.1, loopback)')
    http.add_argument('--port', type=int, help='port (default: 8000; 0 picks a free one)')
    http.add_argument(
        '--token-file', metavar='FILE', help='require this bearer token (default: $AGENTOOL_MCP_TOKEN if set)'
    )
    http.add_argument(
        '--allow-unauthenticated',
        action='store_true',
        default=None,
        help='serve without a token on a non-loopback address (a proxy in front must authenticate)',
    )
    http.add_argument('--max-request-bytes', type=int, metavar='N', help='larger requests get 413 (default: 1 MiB)')
    http.add_argument('--max-sessions', type=int, metavar='N', help='most sessions open at once (default: 1000)')
    http.add_argument('--max-sessions-per-client', type=int, metavar='N', help='per connection (default: 32)')
    http.add_argument('--session-idle-timeout', type=float, metavar='S', help='close idle sessions (default: 300)')
    http.add_argument('--shutdown-timeout', type=float, metavar='S', help='wait for calls on stop (default: 30)')
    http.add_argument('--allowed-origin', dest='allowed_origins', action='append', metavar='ORIGIN', help='repeatable')


_HTTP_OPTIONS = {
    'host': '--host',
    'port': '--port',
    'token_file': '--token-file',
    'allow_unauthenticated': '--allow-unauthenticated',
    'max_request_bytes': '--max-request-bytes',
    'max_sessions': '--max-sessions',
    'max_sessions_per_client': '--max-sessions-per-client',
    'session_idle_timeout': '--session-idle-timeout',
    'shutdown_timeout': '--shutdown-timeout',
    'allowed_origins': '--allowed-origin',
}
"""The `HttpOptions` fields the `mcp` command sets, with their options."""


def _run_mcp(args: argparse.Namespace) -> int:
    from .mcp import HttpOptions, serve

    given = {field: getattr(args, field) for field in _HTTP_OPTIONS if getattr(args, field) is not None}
    if args.transport != 'streamable-http' and given:
        options = ', '.join(_HTTP_OPTIONS[field] for field in given)
        raise UsageError(f'{options} only apply to --transport streamable-http (the transport is {args.transport})')
    # stdio carries the protocol on stdout, so nothing else may be printed there.
    serve(
        _registry(),
        include=args.include or None,
        exclude=args.exclude or (),
        transport=args.transport,
        http=HttpOptions(**given),
    )
    return 0


def _configure_cassette(parser: argparse.ArgumentParser) -> None:
    # Declarations only: agentool.testing.commands does the work, imported when an action runs.
    actions = parser.add_subparsers(dest='action', metavar='ACTION', required=True, parser_class=_Parser)
    helps = ['exchanges, tokens and cost', 'what changed from A to B', 'drop unused exchanges', 'replace secrets']
    for (action, count), text in zip((('show', 1), ('diff', 2), ('prune', '+'), ('scrub', '+')), helps, strict=True):
        actions.add_parser(action, help=text, description=text).add_argument('files', metavar='FILE', nargs=count)


def _run_cassette(args: argparse.Namespace) -> int:
    from .testing.commands import run  # the library only when an action runs

    _write(run(args.action, args.files), None)
    return 0


COMMANDS: tuple[Command, ...] = (
    Command(name='list', help='list registered agentools', configure=_configure_list, run=_run_list),
    Command(name='show', help='describe one agentool', configure=_configure_show, run=_run_show),
    Command(name='schema', help="print an agentool's JSON schema", configure=_configure_schema, run=_run_schema),
    Command(name='call', help='run an agentool on a JSON input', configure=_configure_call, run=_run_call),
    Command(name='catalog', help='write the catalog of every agentool', configure=_configure_catalog, run=_run_catalog),
    Command(name='mcp', help='serve the agentools as an MCP server', configure=_configure_mcp, run=_run_mcp),
    Command(name='cassette', help='show/diff/prune/scrub cassettes', configure=_configure_cassette, run=_run_cassette),
)
"""The subcommands, in the order `--help` lists them."""


# --- parsing and running ---------------------------------------------------------------------------


def _suggest(word: str, choices: Sequence[str] | dict[str, Any]) -> str:
    return did_you_mean(suggest(word, choices))


class _Parser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors are one line, and whose "invalid choice" errors suggest the closest choice."""

    def error(self, message: str) -> NoReturn:
        if match := re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)", message):
            choices = re.findall(r"'([^']*)'", match.group(2)) or [c.strip() for c in match.group(2).split(',')]
            message += _suggest(match.group(1), choices).replace('; did', ' -- did')
        # One line like every other error, rather than argparse's usage block above it: the usage is
        # one `--help` away, and a script reading stderr gets the message alone.
        shown = clip(terminal_safe(message), _MAX_ERROR_LINE - 100)  # an argument's ESC or CR is shown, not obeyed
        self.exit(2, f"{self.prog}: error: {shown} (see '{self.prog} --help')\n")


def _import_option(parser: argparse.ArgumentParser, dest: str) -> None:
    parser.add_argument(
        '--import',
        dest=dest,
        action='append',
        metavar='MODULE',
        default=None if dest == 'imports' else argparse.SUPPRESS,
        help='import MODULE first, registering its agentools (repeatable)',
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog='agentool', description='Inspect, call and document registered agentools.')
    _import_option(parser, 'imports')
    commands = parser.add_subparsers(dest='command', metavar='COMMAND', required=True, parser_class=_Parser)
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help, description=command.help)
        _import_option(sub, 'more_imports')
        command.configure(sub)
        sub.set_defaults(run=command.run)
    return parser


def _import_modules(modules: Sequence[str]) -> None:
    # Appended, never first: a `queue.py` or `sqlite3.py` in the working directory must not replace
    # the standard library's module for everything imported after it.
    if modules and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    # The working directory is the user's: looking at their agentools must not leave `__pycache__/`
    # next to their modules. Only for these imports: a program calling `main()` keeps its setting.
    write_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        import_modules(modules, option='--import')
    finally:
        sys.dont_write_bytecode = write_bytecode


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default `sys.argv[1:]`); returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        _import_modules([*(args.imports or ()), *getattr(args, 'more_imports', ())])
        run: Callable[[argparse.Namespace], int] = args.run
        return run(args)
    except UsageError as error:
        _fail(f'agentool {args.command}: error: {error}')
        return 2
    except (AgenToolError, CLIError) as error:
        _fail(f'agentool: error: {error}')
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        _fail(f'agentool: error: {type(error).__name__}: {error}')
    return 1


_MAX_ERROR_LINE = 1900
"""The longest error line the command writes, whatever the caller sent (an error's message is bounded too)."""


def _fail(line: str) -> None:
    print(error_line(line, _MAX_ERROR_LINE), file=sys.stderr)  # one line, escaped; the full text is logged
