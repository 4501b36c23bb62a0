"""The `agentool` command line: look at a registry, call an agentool, write catalogs.

The catalogs guide describes each command. `--help` and usage errors need no pydantic-ai: this
module imports only the standard library and stdlib-only helpers; each command's handler
`run_NAME(args)` in `agentool.cli._commands` is imported when it runs.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from .._bounds import clip, did_you_mean, suggest
from .._terminal import error_line, terminal_safe

__all__ = ('main', 'Command', 'COMMANDS', 'CLIError', 'UsageError')

MAX_ERROR_LINE = 1900


class CLIError(Exception):
    """A failure reported as one line on stderr, with exit status 1."""


class UsageError(CLIError):
    """Options that do not go together, found after parsing: one line on stderr, exit status 2."""


@dataclass(frozen=True, kw_only=True)
class Command:
    """One subcommand: its name, help line, argument declarations and handler."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _configure_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--tag', action='append', default=None, help='only agentools with this tag (repeatable)')
    parser.add_argument('--match', metavar='PATTERN', help='name substring, or shell pattern with * ? [')
    parser.add_argument('--json', action='store_true', help='print JSON instead of a table')


def _configure_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', help='the agentool')
    parser.add_argument('--json', action='store_true', help="print the agentool's catalog entry as JSON")


def _configure_schema(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', help='the agentool')
    which = parser.add_mutually_exclusive_group()
    which.add_argument('--operation', metavar='OP', help='the request schema of one operation')
    which.add_argument('--output', action='store_true', help='the output schema instead of the input schema')


def _configure_call(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', help='the agentool')
    parser.add_argument('input', metavar='JSON', help="the input, a JSON object ('-' reads it from stdin)")


def _configure_catalog(parser: argparse.ArgumentParser) -> None:
    formats = ('json', 'markdown', 'mermaid', 'openapi')
    parser.add_argument('--format', '-f', choices=formats, default='json', help='output format (default: json)')
    parser.add_argument('--output', '-o', metavar='FILE', help='write to FILE instead of stdout')
    parser.add_argument('--title', help='title of the Markdown document or the OpenAPI info')
    parser.add_argument(
        '--openapi-version', choices=('3.0.0', '3.1.0'), default=None, help='OpenAPI version (default: 3.0.0)'
    )


def _configure_mcp(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--include', action='append', metavar='SELECTOR', help='expose only these (repeatable)')
    parser.add_argument('--exclude', action='append', metavar='SELECTOR', help='never expose these (repeatable)')
    parser.add_argument('--transport', choices=('stdio', 'streamable-http'), default='stdio', help='default: stdio')
    http = parser.add_argument_group(
        'streamable-http', 'serving over HTTP at http://HOST:PORT/mcp (only with --transport streamable-http)'
    )
    # No defaults (None = not given), so options given with stdio are refused, not ignored.
    number, seconds = {'type': int, 'metavar': 'N'}, {'type': float, 'metavar': 'S'}
    flags: list[tuple[str, str, dict[str, Any]]] = [
        ('--host', 'address to listen on (default: 127.0.0.1, loopback)', {}),
        ('--port', 'port (default: 8000; 0 picks a free one)', {'type': int}),
        ('--token-file', 'require this bearer token (default: $AGENTOOL_MCP_TOKEN if set)', {'metavar': 'FILE'}),
        (
            '--allow-unauthenticated',
            'serve without a token on a non-loopback address (a proxy in front must authenticate)',
            {'action': 'store_true', 'default': None},
        ),
        ('--max-request-bytes', 'larger requests get 413 (default: 1 MiB)', number),
        ('--max-sessions', 'most sessions open at once (default: 1000)', number),
        ('--max-sessions-per-client', 'per client (default: 32, or half of a smaller --max-sessions)', number),
        ('--session-idle-timeout', 'close idle sessions (default: 300)', seconds),
        ('--shutdown-timeout', 'wait for calls on stop (default: 30)', seconds),
        ('--allowed-origin', 'repeatable', {'dest': 'allowed_origins', 'action': 'append', 'metavar': 'ORIGIN'}),
        ('--tokens-file', 'named bearer tokens, one NAME TOKEN a line (each name its own client)', {'metavar': 'FILE'}),
        (
            '--trusted-proxy',
            'a proxy whose X-Forwarded-For names the client (address or network; repeatable)',
            {'dest': 'trusted_proxies', 'action': 'append', 'metavar': 'ADDR'},
        ),
    ]
    actions = [http.add_argument(flag, help=help, **options) for flag, help, options in flags]
    parser.set_defaults(http_options={action.dest: action.option_strings[0] for action in actions})


def _configure_cassette(parser: argparse.ArgumentParser) -> None:
    # Declarations only: agentool.testing.commands does the work, imported when an action runs.
    actions = parser.add_subparsers(dest='action', metavar='ACTION', required=True, parser_class=_Parser)
    helps = ['exchanges, tokens and cost', 'what changed from A to B', 'drop unused exchanges', 'replace secrets']
    for (action, count), text in zip((('show', 1), ('diff', 2), ('prune', '+'), ('scrub', '+')), helps, strict=True):
        actions.add_parser(action, help=text, description=text).add_argument('files', metavar='FILE', nargs=count)


def _command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None]) -> Command:
    """Command `name`, whose handler `run_NAME` in `agentool.cli._commands` is imported only when it runs."""

    def run(args: argparse.Namespace) -> int:
        from . import _commands

        handler: Callable[[argparse.Namespace], int] = getattr(_commands, f'run_{name}')
        return handler(args)

    return Command(name=name, help=help, configure=configure, run=run)


COMMANDS: tuple[Command, ...] = (
    _command('list', 'list registered agentools', _configure_list),
    _command('show', 'describe one agentool', _configure_show),
    _command('schema', "print an agentool's JSON schema", _configure_schema),
    _command('call', 'run an agentool on a JSON input', _configure_call),
    _command('catalog', 'write the catalog of every agentool', _configure_catalog),
    _command('mcp', 'serve the agentools as an MCP server', _configure_mcp),
    _command('cassette', 'show/diff/prune/scrub cassettes', _configure_cassette),
)
"""The subcommands, in the order `--help` lists them."""


class _Parser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors are one line, an "invalid choice" suggesting the closest."""

    def error(self, message: str) -> NoReturn:
        if match := re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)", message):
            choices = re.findall(r"'([^']*)'", match.group(2)) or [c.strip() for c in match.group(2).split(',')]
            message += did_you_mean(suggest(match.group(1), choices)).replace('; did', ' -- did')
        shown = clip(terminal_safe(message), MAX_ERROR_LINE - 100)  # an argument's ESC or CR is shown, not obeyed
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


def _load_package() -> None:
    # The console script (`agentool_cli`) leaves `agentool/__init__.py` unrun so that `--help`
    # needs no pydantic-ai; run it now, before any command uses the library.
    package = sys.modules['agentool']
    if getattr(package, '__agentool_deferred__', False):  # the name `agentool_cli.DEFERRED` sets
        delattr(package, '__agentool_deferred__')
        loader = package.__spec__.loader if package.__spec__ else None  # set by the launcher from `find_spec`
        if loader is not None:
            loader.exec_module(package)


def _import_modules(modules: Sequence[str]) -> None:
    from .._modules import import_modules

    # Appended, never first: a `queue.py` in the working directory must not shadow the standard library.
    if modules and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    # Looking at the user's agentools must not leave `__pycache__/` next to their modules.
    write_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        import_modules(modules, option='--import')
    finally:
        sys.dont_write_bytecode = write_bytecode


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default `sys.argv[1:]`); returns the exit status."""
    args = _parser().parse_args(argv)
    from ..errors import AgenToolError  # light: the errors module imports no pydantic-ai

    try:
        _load_package()
        _import_modules([*(args.imports or ()), *getattr(args, 'more_imports', ())])
        status: int = args.run(args)
        sys.stdout.flush()  # here, so a reader gone away is met below, not at interpreter exit
        return status
    except BrokenPipeError:
        # The reader left (`agentool show x | head`): stop quietly like `cat`, stdout at the null device.
        with open(os.devnull, 'wb') as null:
            os.dup2(null.fileno(), sys.stdout.fileno())
        return 141
    except UsageError as error:
        _fail(f'agentool {args.command}: error: {error}')
        return 2
    except (AgenToolError, CLIError) as error:
        _fail(f'agentool: error: {error}')
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # the command's last resort: any other failure is one line and exit status 1
        _fail(f'agentool: error: {type(error).__name__}: {error}')
    return 1


def _fail(line: str) -> None:
    print(error_line(line, MAX_ERROR_LINE), file=sys.stderr)  # one line, escaped; the full text is logged
