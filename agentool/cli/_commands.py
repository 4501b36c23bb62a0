"""What each `agentool` command does: the handlers `agentool.cli` imports only when one runs."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from .._bounds import did_you_mean, quote, suggest
from .._interface import check_json_numbers
from .._terminal import error_line, terminal_safe
from ..catalog import catalog_entry, input_schema
from ..catalog import operations as catalog_operations
from ..catalog.data import field_wording, operation_hints
from ..core.registry import AgenToolRegistry, get_registry
from ..errors import InputTooLargeError
from . import MAX_ERROR_LINE, CLIError, UsageError

_NOTHING_IMPORTED = 'use --import MODULE to import the modules that register them'


def _require(name: str) -> str:
    registry = get_registry()
    if not len(registry):  # the usual first mistake: nothing was imported, so no name can match
        raise CLIError(f'no agentool named {quote(name)}: no agentools are registered; {_NOTHING_IMPORTED}')
    registry.require(name)  # raises AgenToolNotFoundError with "did you mean" suggestions
    return name


def _json_text(value: Any) -> str:
    # Always RFC 8259 JSON: an infinite float left anywhere (a schema's bound) is 'Infinity', as the catalog writes it.
    return to_json(value, indent=2, serialize_unknown=True, inf_nan_mode='strings').decode()


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


def run_list(args: argparse.Namespace) -> int:
    registry = get_registry()
    rows = [(name, registry.require(name)) for name in registry.search(tags=args.tag, name_pattern=args.match)]
    if args.json:
        summary = [
            {'name': n, 'version': c.version, 'description': c.description, 'tags': c.tags}
            | {'operations': list(c.routing_config.operation_map)}
            for n, c in rows
        ]
        print(_json_text(summary))
        return 0
    if not rows:
        hint = '' if len(registry) else f'; {_NOTHING_IMPORTED}'
        print(f'no agentools found{hint}', file=sys.stderr)
        return 0
    width = max(len(name) for name, _ in rows)
    for name, config in rows:
        _line(f'{name:<{width}}  {config.version:<8}  {_first_line(config.description)}'.rstrip())
    return 0


def run_show(args: argparse.Namespace) -> int:
    entry = catalog_entry(get_registry(), _require(args.name))
    if args.json:
        print(_json_text(entry))
        return 0
    _line(f'{entry["name"]} {entry["version"]}')
    if entry['description']:
        _line(f'  {entry["description"].strip()}', keep_newlines=True)
    _line(f'  tags: {", ".join(entry["tags"]) or "-"}')
    _line(f'  depends on: {", ".join(entry["dependencies"]) or "-"}')
    _line(f'  output: {entry["output_type"] or "JSON text (untyped)"}')
    _line('  operations:')
    for op in entry['operations']:
        _line(f'    {op["name"]} -> {op["tool"]}  {_first_line(op["description"])}'.rstrip())
        if hints := (['deprecated'] if op['deprecated'] else []) + operation_hints(op):
            _line(f'      hints: {", ".join(hints)}')
        for field in op['fields']:
            wording = field_wording(field, op['request_schema'])  # e.g. 'int, optional, default 50'
            _line(f'      {field["name"]} ({wording})  {field["description"] or ""}'.rstrip())
    if problems := get_registry().validate_config(args.name):  # errors, and warnings such as an unfilled parameter
        _line('  problems:')
        for problem in problems:
            _line(f'    {problem.severity}: {problem.message}')
    return 0


def run_schema(args: argparse.Namespace) -> int:
    registry = get_registry()
    name = _require(args.name)
    if args.output:
        entry = catalog_entry(registry, name)
        print(_json_text(entry['output_schema'] or {'description': 'untyped: the output is JSON text'}))
    elif args.operation is not None:
        operations = catalog_operations(registry, name)
        if args.operation not in operations:
            raise CLIError(
                f'agentool {name!r} has no operation {quote(args.operation)}'
                f'{did_you_mean(suggest(args.operation, operations))}'
            )
        print(_json_text(operations[args.operation]['request_schema']))
    else:
        print(_json_text(input_schema(registry, name)))
    return 0


def run_call(args: argparse.Namespace) -> int:
    registry = get_registry()
    name = _require(args.name)
    config = registry.require(name)
    prompt = _read_stdin(name, config.max_input_bytes) if args.input == '-' else args.input
    output = asyncio.run(_call(registry, name, prompt))
    if config.output_type is None:
        print(terminal_safe(str(output), keep_newlines=True) if sys.stdout.isatty() else output)
    else:
        # Printed as JSON, so a float JSON has no number for is refused as on every JSON surface.
        manager = registry.get_manager(name)
        operation = manager.operation_of(manager.validate_json(prompt))
        check_json_numbers(output, agentool=name, operation=operation)
        print(_json_text(output))
    return 0


def _read_stdin(name: str, limit: int) -> str:
    """Standard input, read no further than one byte past the agentool's `max_input_bytes`."""
    stream = getattr(sys.stdin, 'buffer', None)
    if stream is None:  # a text stream without bytes underneath (replaced in a program calling `main`)
        return sys.stdin.read(limit + 1)
    data: bytes = stream.read(limit + 1)
    if len(data) > limit:
        raise InputTooLargeError(
            f'input to agentool {name!r} on standard input is over the limit of {limit} bytes (max_input_bytes)',
            agentool=name,
            size=len(data),
            limit=limit,
        )
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        get_registry().get_manager(name).validate_json(data)  # raises the typed `InvalidJSONError`
        raise


async def _call(registry: AgenToolRegistry, name: str, prompt: str) -> Any:
    """Run agentool `name` through its agent, with the deps the injector builds (as on every surface)."""
    from ..core.agent.capability import build_agent
    from ..core.injector import get_injector

    injector = get_injector()
    if name not in injector:  # registered without `create_agentool`
        return (await build_agent(name, registry).run(prompt)).output
    registry.get_manager(name).validate_json(prompt)  # bad input is reported before any resource is made
    return (await injector.get(name).run(prompt)).output


def run_catalog(args: argparse.Namespace) -> int:
    if args.title is not None and args.format not in ('markdown', 'openapi'):  # refused, not ignored
        raise UsageError(f'--title only applies to --format markdown or openapi (the format is {args.format})')
    if args.openapi_version is not None and args.format != 'openapi':
        raise UsageError(f'--openapi-version only applies to --format openapi (the format is {args.format})')
    registry = get_registry()
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


def run_mcp(args: argparse.Namespace) -> int:
    from ..mcp import HttpOptions, serve  # the optional `mcp` extra, imported only here

    flags: dict[str, str] = args.http_options  # `HttpOptions` field -> its option
    given = {field: getattr(args, field) for field in flags if getattr(args, field) is not None}
    if args.transport != 'streamable-http' and given:
        options = ', '.join(flags[field] for field in given)
        raise UsageError(f'{options} only apply to --transport streamable-http (the transport is {args.transport})')
    # stdio carries the protocol on stdout, so nothing else may be printed there.
    serve(
        get_registry(),
        include=args.include or None,
        exclude=args.exclude or (),
        transport=args.transport,
        http=HttpOptions(**given) if args.transport == 'streamable-http' else None,
    )
    return 0


def run_cassette(args: argparse.Namespace) -> int:
    from ..testing.commands import run  # agentool.testing only when an action runs

    # Every file is handled and said, the ones that failed too: a failure does not hide what was rewritten.
    report = run(args.action, args.files)
    if report.lines:
        _write(report.text, None)
    for failure in report.failures:
        print(error_line(f'agentool: error: {failure}', MAX_ERROR_LINE), file=sys.stderr)
    return report.status
