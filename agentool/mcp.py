"""Registered agentools as an MCP server (the `mcp` extra: `pip install 'agentool[mcp]'`).

Each selected operation is one MCP tool (docs/guides/mcp.md); `mcp` is imported only when a
server is built.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, cast

import anyio
import anyio.to_thread
from opentelemetry.trace import Tracer
from pydantic import ValidationError
from pydantic_ai import RunContext
from pydantic_ai.usage import RunUsage

from ._http_guards import LOGGER
from ._interface import OperationInterface, build_interfaces, check_json_numbers
from ._modules import import_modules
from ._options import check_choice, check_function, check_limit, check_text, check_tracer, refusals
from .core.model import AgenToolModel
from .core.operation import Policy, deps_from, run_operation
from .core.registry import AgenToolRegistry, get_registry
from .errors import (
    MAX_MESSAGE_CHARS,
    ConfigurationError,
    InvalidInputError,
    MissingExtraError,
    ServingError,
    clip,
    did_you_mean,
    quote,
    suggest,
)
from .filters import Selectors, select_operations
from .mcp_http import DEFAULT_MAX_REQUEST_BYTES, HttpOptions, serve_http, until_signalled
from .toolset import operation_metadata

if TYPE_CHECKING:
    from mcp import types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

__all__ = (
    'create_mcp_server',
    'serve',
    'run_server',
    'HttpOptions',
    'McpTransport',
    'McpDepsFunc',
    'META_KEY',
    'TOOL_LIST_TTL_MS',
)

McpTransport = Literal['stdio', 'streamable-http']
"""How `serve` talks to clients: stdin/stdout (what MCP hosts launch) or Streamable HTTP."""

McpDepsFunc = Callable[[str], Any]
"""Gives the deps for agentool `name`, called once per tool call (sync or async)."""

META_KEY = 'agentool'
"""Key of the operation's metadata in each MCP tool's `_meta`."""

TOOL_LIST_TTL_MS = 3_600_000
"""How long a client may keep the tool list and `server/discover`: one hour past a restart at most."""


def create_mcp_server(
    registry: AgenToolRegistry | None = None,
    *,
    include: Selectors | None = None,
    exclude: Selectors = (),
    prefix: str = '',
    separator: str = '_',
    deps: McpDepsFunc | None = None,
    name: str = 'agentool',
    instructions: str | None = None,
    tracer: Tracer | None = None,
) -> Server[Any]:
    """An MCP server (the SDK's low-level `Server`) with one tool per operation selected now.

    Selection is `agentool.filters.select_operations` (and raises as it does); without the `mcp`
    package, `MissingExtraError`. By default the injector in effect builds each call's deps,
    `instructions` lists the agentools served and spans go to the global `agentool` tracer.
    """
    check_text('name', name)
    check_text('instructions', instructions, optional=True)
    check_function('deps', deps, optional=True, takes=('agentool',))
    check_tracer('tracer', tracer)
    try:
        from mcp import MCPError, types
        from mcp.server.caching import CacheHint
        from mcp.server.lowlevel import Server
    except ImportError as error:
        raise MissingExtraError(
            "serving agentools over MCP needs the 'mcp' extra: pip install 'agentool[mcp]'", extra='mcp'
        ) from error

    from . import __version__

    registry = get_registry() if registry is None else registry
    policy = Policy(surface='mcp', typed_errors=False, tracer=tracer)
    selected = select_operations(registry, include=include, exclude=exclude, prefix=prefix, separator=separator)
    interfaces = build_interfaces(registry, selected)
    tools = [
        types.Tool(
            name=interface.exposed.name,
            description=interface.description,
            input_schema=interface.parameters_json_schema,
            output_schema=interface.output_json_schema,
            # Every hint is set: MCP's defaults (destructive, not idempotent) would misreport agentool's.
            annotations=types.ToolAnnotations(
                read_only_hint=interface.exposed.route.read_only,
                destructive_hint=interface.exposed.route.destructive,
                idempotent_hint=interface.exposed.route.idempotent,
            ),
            _meta={META_KEY: operation_metadata(interface.exposed)},
        )
        for interface in interfaces.values()
    ]
    if instructions is None:
        served = sorted({op.agentool for op in selected})
        instructions = f'Deterministic agentool operations of: {", ".join(served) or "(none)"}.'

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        interface = interfaces.get(params.name)
        if interface is None:
            # A protocol error, not a tool result (MCP spec); the caller's name is quoted cut short.
            suggestions = suggest(params.name, interfaces)
            data = {'tool': clip(params.name), 'suggestions': suggestions}
            message = f'unknown tool {quote(params.name)}{did_you_mean(suggestions)}'
            raise MCPError(code=types.INVALID_PARAMS, message=message, data=data)
        return await _call(interface, params.arguments or {}, registry, deps, policy)

    return Server(
        name,
        version=__version__,
        instructions=instructions,
        get_tool_input_schema={name: interface.parameters_json_schema for name, interface in interfaces.items()}.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        # The same for every client, whatever its token: a shared cache may keep them too.
        cache_hints={method: CacheHint(ttl_ms=TOOL_LIST_TTL_MS, scope='public') for method in _STABLE},
    )


def serve(
    registry: AgenToolRegistry | None = None,
    *,
    modules: Sequence[str] = (),
    include: Selectors | None = None,
    exclude: Selectors = (),
    transport: McpTransport = 'stdio',
    http: HttpOptions | None = None,
    **server_options: Any,
) -> None:
    """Import `modules` (which register agentools), then serve the registry over MCP until SIGINT or SIGTERM.

    What `agentool mcp --import MODULE` runs; `server_options` (and errors) as `create_mcp_server`'s.
    """
    own = ('registry', 'include', 'exclude')  # taken by `serve` itself
    known = [name for name in inspect.signature(create_mcp_server).parameters if name not in own]
    for option, value in server_options.items():
        if option not in known:
            raise ConfigurationError(
                f'unknown option {option!r}; serve takes modules, include, exclude, transport, http and the '
                f'options of create_mcp_server: {", ".join(known)}',
                option=option,
                value=quote(value),
            )
    _check_transport(transport, http)
    import_modules(modules)
    server = create_mcp_server(registry, include=include, exclude=exclude, **server_options)
    anyio.run(until_signalled, lambda: run_server(server, transport=transport, http=http))


async def run_server(
    server: Server[Any],
    *,
    transport: McpTransport = 'stdio',
    http: HttpOptions | None = None,
    max_line_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> None:
    """Serve `server` over `transport` until the client disconnects (stdio) or the task is cancelled.

    Over stdio, a line over `max_line_bytes` is answered with a JSON-RPC error, never parsed."""
    _check_transport(transport, http)
    if problem := refusals(lambda: check_limit('max_line_bytes', max_line_bytes)):
        raise ServingError(problem['max_line_bytes'], option='max_line_bytes', value=quote(max_line_bytes))
    if transport == 'stdio':
        with _claimed_stdin() as source:
            await _serve_stdio(server, None if source is None else _BoundedLines(source, max_line_bytes))
    else:
        await serve_http(server, http or HttpOptions())


async def _serve_stdio(server: Server[Any], lines: _BoundedLines | None) -> None:
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError

    async with stdio_server(stdin=cast('Any', lines)) as (read, write):

        async def answer(error: ErrorData) -> None:
            await write.send(SessionMessage(JSONRPCError(jsonrpc='2.0', id=None, error=error)))

        if lines is not None:

            async def refuse(size: int) -> None:
                message = f'request of {size} bytes is over the limit of {lines.limit} bytes; not read'
                await answer(ErrorData(code=INVALID_REQUEST, message=message, data={'size': size}))

            lines.refuse = refuse
        # The SDK only logs a line that is no JSON-RPC message: answered here, the client learns it.
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def relay() -> None:
            async with send:
                async for item in read:
                    if isinstance(item, Exception):
                        await answer(_unreadable(item))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            await server.run(receive, write, server.create_initialization_options())


def _unreadable(error: Exception) -> Any:
    """The JSON-RPC error for a stdin line the SDK could not read: not JSON, or not a message."""
    from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData

    details = error.errors(include_url=False, include_input=False) if isinstance(error, ValidationError) else []
    if details and details[0]['type'] == 'json_invalid':
        return ErrorData(code=PARSE_ERROR, message='Parse error: the line is not JSON; not read')
    return ErrorData(
        code=INVALID_REQUEST,
        message=f'Invalid request: the line is not a JSON-RPC message; not read ({type(error).__name__})',
    )


def _check_transport(transport: object, http: object) -> None:
    check_choice('transport', transport, ('stdio', 'streamable-http'))
    if not (http is None or isinstance(http, HttpOptions)):
        raise ServingError(f'http must be an HttpOptions or None; got {quote(http)}', option='http', value=quote(http))
    if http is not None and transport == 'stdio':  # as the CLI's HTTP options: never silently ignored
        raise ServingError(
            "http options only apply to transport='streamable-http' (the transport is stdio)",
            option='http',
            transport=transport,
        )


async def _call(
    interface: OperationInterface,
    arguments: dict[str, Any],
    registry: AgenToolRegistry,
    deps: McpDepsFunc | None,
    policy: Policy,
) -> types.CallToolResult:
    from mcp import types

    exposed = interface.exposed
    try:
        input = interface.validate(arguments)
    except (ValidationError, InvalidInputError) as error:  # the latter before any field is read (too large)
        # Field names only: the rejected values are the caller's data.
        said = (
            sorted({str(e['loc']) for e in error.errors()})
            if isinstance(error, ValidationError)
            else type(error).__name__
        )
        LOGGER.info('tool %r rejected arguments: %s', exposed.name, said)
        return _error(interface.describe(error))
    model = AgenToolModel(exposed.agentool, registry=registry)
    ctx = RunContext[Any](deps=None, model=model, usage=RunUsage(), tool_name=exposed.name)
    # The server's `deps` function, else the injector in effect, for a tool that takes a context.
    provider = None if deps is None else deps_from(lambda: deps(exposed.agentool))
    try:
        result = await run_operation(policy, exposed.manager, input, ctx, provider=provider)
        check_json_numbers(result, agentool=exposed.agentool, operation=exposed.operation)
    except Exception as error:  # a failed call is the client's tool result (MCP spec), not hidden: logged whole
        LOGGER.exception(
            'tool %r (agentool %r, operation %r) raised', exposed.name, exposed.agentool, exposed.operation
        )
        return _error(
            f'tool {exposed.name!r} (agentool {exposed.agentool!r}, operation {exposed.operation!r}) failed: '
            f'{type(error).__name__}: {clip(str(error), MAX_MESSAGE_CHARS)}'
        )
    structured = interface.structured(result) if interface.output_json_schema is not None else None
    return types.CallToolResult(content=[types.TextContent(text=interface.text(result))], structured_content=structured)


def _error(message: str) -> types.CallToolResult:
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


_STABLE = ('tools/list', 'server/discover')  # fixed when the server is made
_CHUNK_BYTES = 64 * 1024  # stdin read at a time: a line is held to its limit plus at most this


class _BoundedLines:
    """stdin's lines (as text), never holding one over `limit` bytes: `refuse(size)` is awaited in its place."""

    def __init__(self, source: BinaryIO, limit: int) -> None:
        self._source = source
        self.limit = limit
        self.refuse: Callable[[int], Awaitable[None]] | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        read = getattr(self._source, 'read1', self._source.read)
        pending = bytearray()
        skipped = 0  # bytes of the current line over the limit, thrown away as they come
        while chunk := await anyio.to_thread.run_sync(read, _CHUNK_BYTES):
            start = 0
            while True:
                newline = chunk.find(b'\n', start)
                piece = chunk[start : len(chunk) if newline < 0 else newline]
                if skipped:
                    skipped += len(piece)
                elif len(pending) + len(piece) > self.limit:
                    skipped = len(pending) + len(piece)
                    pending.clear()
                else:
                    pending += piece
                if newline < 0:
                    break
                if skipped:
                    await self._refused(skipped)
                    skipped = 0
                elif pending.strip():
                    yield pending.decode('utf-8', 'replace')
                pending.clear()
                start = newline + 1
        if skipped:  # the last line, with no newline
            await self._refused(skipped)
        elif pending.strip():
            yield pending.decode('utf-8', 'replace')

    async def _refused(self, size: int) -> None:
        LOGGER.warning('agentool mcp: refused a stdin line of %d bytes, over the limit of %d', size, self.limit)
        if self.refuse is not None:
            await self.refuse(size)


@contextmanager
def _claimed_stdin() -> Generator[BinaryIO | None]:
    """The protocol's stdin, duplicated while fd 0 reads the null device (a tool gets EOF); else `None`."""
    private: int | None = None
    try:
        fd = sys.stdin.fileno()
        private = os.dup(fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        if private is not None:
            os.close(private)
        yield None
        return
    reader = os.fdopen(private, 'rb')
    try:
        yield reader
    finally:
        os.dup2(private, fd)
        reader.close()
