"""The `agentool` command line: look at a registry, call an agentool, write catalogs.

```text
agentool [--import MODULE]... COMMAND ...

  list                      registered agentools (--tag, --match, --json)
  show NAME                 one agentool: operations, fields, metadata (--json)
  schema NAME               input JSON schema (--operation OP, --output)
  call NAME JSON            run it through its agent; print the typed output as JSON
  catalog --format F        json | markdown | mermaid | openapi, to stdout or -o FILE
  mcp                       serve the agentools over MCP (needs the `mcp` extra)
```

Nothing is imported implicitly: `--import MODULE` (repeatable, before or after the command)
imports the modules that register agentools; the working directory is importable (after the
standard library and installed packages, so a `queue.py` there shadows nothing), and no
`__pycache__/` is written for what is imported that way. Errors are
one line on stderr and exit status 1 (2 for usage errors), never a traceback.

`agentool --help`, `agentool COMMAND --help` and usage errors answer without importing pydantic-ai:
this module imports only the standard library and `agentool._bounds` at module level, and the
console script (`agentool_cli`) defers the package's `__init__` until a command runs.

Adding a command (keep it import-light):

- declare its arguments in a `configure(parser)` function using argparse only;
- write its handler `run(args) -> int` (the exit status) and import what it needs from the library
  *inside* the handler (`from .catalog import ...`), never at the top of this module;
- add one `Command(...)` to `COMMANDS`. A command group (`agentool cassette diff|show ...`) is one
  `Command` whose `configure` adds sub-parsers, each with `set_defaults(run=handler)`; its handlers may
  live in another module, imported by a thin handler here.

`tests/test_cli_fast.py` checks that `--help` and usage errors never import pydantic-ai.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ._bounds import clip, did_you_mean, quote, suggest

if TYPE_CHECKING:
    from .core.registry import AgenToolRegistry

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
    from .core.registry import get_registry

    return get_registry()


_NOTHING_IMPORTED = 'use --import MODULE to import the modules that register them'


def _require(name: str) -> str:
    registry = _registry()
    if not len(registry):  # the usual first mistake: nothing was imported, so no name can match
        raise CLIError(f'no agentool named {quote(name)}: no agentools are registered; {_NOTHING_IMPORTED}')
    registry.require(name)  # raises AgenToolNotFoundError with "did you mean" suggestions
    return name


def _json_text(value: Any) -> str:
    from pydantic_core import to_json

    # Always RFC 8259 JSON: a float JSON has no number for, wherever it is left (an enum of floats, a
    # schema's bound), is a string as the catalog writes an infinite default ('Infinity'), never `Infinity`.
    return to_json(value, indent=2, serialize_unknown=True, inf_nan_mode='strings').decode()


def _print_json(value: Any) -> None:
    print(_json_text(value))


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
        hint = '' if len(registry) else f'; {_NOTHING_IMPORTED}'
        print(f'no agentools found{hint}', file=sys.stderr)
        return 0
    width = max(len(name) for name, _ in rows)
    for name, config in rows:
        print(f'{name:<{width}}  {config.version:<8}  {_first_line(config.description)}'.rstrip())
    return 0


def _configure_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', help='the agentool')
    parser.add_argument('--json', action='store_true', help="print the agentool's catalog entry as JSON")


def _run_show(args: argparse.Namespace) -> int:
    from .catalog import catalog_entry
    from .catalog.data import field_wording, operation_hints

    entry = catalog_entry(_registry(), _require(args.name))
    if args.json:
        _print_json(entry)
        return 0
    print(f'{entry["name"]} {entry["version"]}')
    if entry['description']:
        print(f'  {entry["description"].strip()}')
    print(f'  tags: {", ".join(entry["tags"]) or "-"}')
    print(f'  depends on: {", ".join(entry["dependencies"]) or "-"}')
    print(f'  output: {entry["output_type"] or "JSON text (untyped)"}')
    print('  operations:')
    for op in entry['operations']:
        print(f'    {op["name"]} -> {op["tool"]}  {_first_line(op["description"])}'.rstrip())
        # Worded as the Markdown catalog words them (one home: `agentool.catalog.data`), without its markup.
        hints = (['deprecated'] if op['deprecated'] else []) + operation_hints(op)
        if hints:
            print(f'      hints: {", ".join(hints)}')
        for field in op['fields']:
            wording = field_wording(field, op['request_schema'])  # e.g. 'int, optional, default 50'
            print(f'      {field["name"]} ({wording})  {field["description"] or ""}'.rstrip())
    if problems := _registry().validate_config(args.name):  # errors, and warnings such as an unfilled parameter
        print('  problems:')
        for problem in problems:
            print(f'    {problem.severity}: {problem.message}')
    return 0


def _configure_schema(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', help='the agentool')
    which = parser.add_mutually_exclusive_group()
    which.add_argument('--operation', metavar='OP', help='the request schema of one operation')
    which.add_argument('--output', action='store_true', help='the output schema instead of the input schema')


def _run_schema(args: argparse.Namespace) -> int:
    from .catalog import catalog_entry, input_schema
    from .catalog import operations as catalog_operations

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
    import asyncio

    from ._cli_call import call, read_stdin
    from ._interface import check_json_numbers

    registry = _registry()
    name = _require(args.name)
    config = registry.require(name)
    output_type = config.output_type
    prompt = read_stdin(name, config.max_input_bytes) if args.input == '-' else args.input
    output = asyncio.run(call(registry, name, prompt, output_type))
    if output_type is None:
        print(output)
    else:
        # Printed as JSON, so a float JSON has no number for is refused as on every JSON surface.
        manager = registry.get_manager(name)
        operation = manager.operation_of(manager.validate_json(prompt))
        check_json_numbers(output, agentool=name, operation=operation)
        _print_json(output)
    return 0


_FORMATS = ('json', 'markdown', 'mermaid', 'openapi')
_OPENAPI_VERSIONS = ('3.0.0', '3.1.0')


def _configure_catalog(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--format', '-f', choices=_FORMATS, default='json', help='output format (default: json)')
    parser.add_argument('--output', '-o', metavar='FILE', help='write to FILE instead of stdout')
    parser.add_argument('--title', help='title of the Markdown document or the OpenAPI info')
    parser.add_argument(
        '--openapi-version', choices=_OPENAPI_VERSIONS, default=None, help='OpenAPI version (default: 3.0.0)'
    )


def _run_catalog(args: argparse.Namespace) -> int:
    if args.title is not None and args.format not in ('markdown', 'openapi'):  # refused, not ignored
        raise UsageError(f'--title only applies to --format markdown or openapi (the format is {args.format})')
    if args.openapi_version is not None and args.format != 'openapi':
        raise UsageError(f'--openapi-version only applies to --format openapi (the format is {args.format})')
    registry = _registry()
    if args.format == 'json':
        text = _json_text(registry.export_catalog())
    elif args.format == 'markdown':
        text = registry.generate_markdown_docs(title=args.title or 'AgenTool Registry Documentation')
    elif args.format == 'mermaid':
        text = registry.generate_mermaid_graph()
    else:
        title, version = args.title or 'AgenTool Registry API', args.openapi_version or '3.0.0'
        text = _json_text(registry.generate_api_spec(title=title, openapi_version=version))
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


_HTTP_OPTIONS = {
    'host': '--host',
    'port': '--port',
    'token_file': '--token-file',
    'allow_unauthenticated': '--allow-unauthenticated',
    'max_request_bytes': '--max-request-bytes',
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


COMMANDS: tuple[Command, ...] = (
    Command(name='list', help='list registered agentools', configure=_configure_list, run=_run_list),
    Command(name='show', help='describe one agentool', configure=_configure_show, run=_run_show),
    Command(name='schema', help="print an agentool's JSON schema", configure=_configure_schema, run=_run_schema),
    Command(name='call', help='run an agentool on a JSON input', configure=_configure_call, run=_run_call),
    Command(name='catalog', help='write the catalog of every agentool', configure=_configure_catalog, run=_run_catalog),
    Command(name='mcp', help='serve the agentools as an MCP server', configure=_configure_mcp, run=_run_mcp),
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
        self.exit(2, f"{self.prog}: error: {clip(message, _MAX_ERROR_LINE - 100)} (see '{self.prog} --help')\n")


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


def _load_package() -> None:
    # The console script (`agentool_cli`) leaves `agentool/__init__.py` unrun so that `--help` and usage
    # errors need no pydantic-ai; run it now, before any command uses the library (it checks the
    # pydantic-ai release, raising the typed `PydanticAIVersionError`). A no-op when imported normally.
    package = sys.modules['agentool']
    if getattr(package, '__agentool_deferred__', False):  # the name `agentool_cli.DEFERRED` sets
        delattr(package, '__agentool_deferred__')
        loader = package.__spec__.loader if package.__spec__ else None  # set by the launcher from `find_spec`
        if loader is not None:
            loader.exec_module(package)


def _import_modules(modules: Sequence[str]) -> None:
    from ._modules import import_modules

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
    from .errors import AgenToolError  # light: the errors module imports no pydantic-ai

    try:
        _load_package()
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
    print(clip(line, _MAX_ERROR_LINE), file=sys.stderr)
