"""Serving an MCP server over Streamable HTTP, safely by default.

Loopback by default; off loopback, serving without a token is an `UnsafeServingError` unless
`allow_unauthenticated`. Host and Origin validated, bodies over `max_request_bytes` answered 413
before parsing, sessions limited fairly, logs escaped and bounded (the MCP guide gives each rule).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.abc import TaskStatus

from ._http_guards import HttpGuard, Network, SessionTable, StaticTokens, is_loopback, transport_security
from ._modules import without_working_directory
from ._options import (
    check_flag,
    check_instance,
    check_limit,
    check_one_of,
    check_origins,
    check_path,
    check_proxies,
    check_seconds,
    check_share,
    check_text,
    check_tokens,
    check_url_path,
    refusals,
    unsendable,
)
from ._terminal import SafeLogRecords
from .errors import ServingError, UnsafeServingError, quote

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from starlette.applications import Starlette

__all__ = (
    'TOKEN_ENV',
    'DEFAULT_MAX_REQUEST_BYTES',
    'MAX_TOKEN_FILE_BYTES',
    'MAX_TOKENS_FILE_BYTES',
    'HttpOptions',
    'http_app',
    'is_loopback',
    'serve_http',
    'until_signalled',
)

TOKEN_ENV = 'AGENTOOL_MCP_TOKEN'
"""Environment variable holding the bearer token, used when neither `token` nor `token_file` is given."""

DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024
"""Largest request body accepted by default (1 MiB); a larger one is answered 413."""

DEFAULT_SESSIONS_PER_CLIENT = 32
"""One client's share of the sessions unless told otherwise (less when `max_sessions` is small)."""

_ONE_TOKEN = 'agentool-bearer'  # a single token's holders, as the SDK's auth context knows them

MAX_TOKEN_FILE_BYTES = 4096
"""Largest token file read; a longer one (or `/dev/zero`) is refused, not read whole."""

MAX_TOKENS_FILE_BYTES = 64 * 1024
"""Largest named-tokens file read (`tokens_file`)."""


@dataclass(frozen=True, kw_only=True)
class HttpOptions:
    """Where and how to serve over Streamable HTTP; the MCP guide describes each option.

    `tokens` (or `tokens_file`, one `NAME TOKEN` a line) replaces `token`: any one is accepted,
    and each name is a client of its own for the session limits. `port=0` picks a free port.
    A bad option is a `ServingError` whose `details['options']` names each one.
    """

    host: str = '127.0.0.1'
    port: int = 8000
    path: str = '/mcp'
    token: str | None = None
    token_file: str | os.PathLike[str] | None = None
    tokens: Mapping[str, str] | None = None
    tokens_file: str | os.PathLike[str] | None = None
    allow_unauthenticated: bool = False
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_sessions: int = 1000
    max_sessions_per_client: int | None = None
    session_idle_timeout: float = 300.0
    shutdown_timeout: float = 30.0
    allowed_origins: Sequence[str] = ()
    trusted_proxies: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.max_sessions_per_client is None and isinstance(cast(object, self.max_sessions), int):
            share = min(DEFAULT_SESSIONS_PER_CLIENT, max(1, self.max_sessions // 2))
            object.__setattr__(self, 'max_sessions_per_client', share)
        host = cast(object, self.host)
        if isinstance(host, str) and host.startswith('[') and host.endswith(']'):
            object.__setattr__(self, 'host', host[1:-1])  # '[::1]' as in a URL: bind the address inside
        problems = refusals(
            lambda: check_instance('host', host, str, expected='a string (an address or a name)'),
            lambda: check_limit('port', self.port, minimum=0, maximum=65535),
            lambda: check_url_path('path', self.path),
            lambda: check_text('token', self.token, optional=True),
            lambda: check_path('token_file', self.token_file),
            lambda: check_flag('allow_unauthenticated', self.allow_unauthenticated),  # 'no' is not False
            lambda: check_limit('max_request_bytes', self.max_request_bytes),
            lambda: check_limit('max_sessions', self.max_sessions),
            lambda: check_limit('max_sessions_per_client', self.max_sessions_per_client),
            lambda: check_seconds('session_idle_timeout', self.session_idle_timeout),
            lambda: check_seconds('shutdown_timeout', self.shutdown_timeout),
            lambda: check_origins('allowed_origins', self.allowed_origins),
            lambda: check_share(
                'max_sessions_per_client', self.max_sessions_per_client, 'max_sessions', self.max_sessions
            ),
            lambda: check_tokens('tokens', self.tokens),
            lambda: check_path('tokens_file', self.tokens_file),
            lambda: check_one_of(
                'token',
                {
                    'token or token_file': self.token if self.token is not None else self.token_file,
                    'tokens': self.tokens,
                    'tokens_file': self.tokens_file,
                },
                'the token(s)',
            ),
            lambda: check_proxies('trusted_proxies', self.trusted_proxies),
        )
        if problems:
            listed = list(problems.values())
            raise self._error(
                f'invalid HTTP serving options: {"; ".join(listed)}', options=list(problems), problems=listed
            )
        # Browsers send an origin in lower case, without a trailing '/'.
        object.__setattr__(self, 'allowed_origins', tuple(o.rstrip('/').lower() for o in self.allowed_origins))
        object.__setattr__(self, 'trusted_proxies', tuple(self.trusted_proxies))
        if self.tokens is not None:
            object.__setattr__(self, 'tokens', dict(self.tokens))  # a copy: later edits to the caller's change nothing

    def resolve_token(self) -> str | None:
        """The token in effect: `token`, `token_file`'s, `$AGENTOOL_MCP_TOKEN` or `None`; `ServingError` if unusable."""
        if self.token is not None:
            token, source = self.token, 'token'
        elif self.token_file is not None:
            path = os.fspath(self.token_file)
            token, source = self._read_token_file(path), f'token file {quote(path)}'
        elif TOKEN_ENV in os.environ:
            token, source = os.environ[TOKEN_ENV], f'${TOKEN_ENV}'
        else:
            return None
        token = token.removeprefix('\ufeff').strip()  # a BOM an editor saved is not part of the token
        if not token:
            raise self._error(f'the bearer token from {source} is empty')
        if unsendable(token):
            raise self._error(
                f'the bearer token from {source} holds a control or space character no client can send '
                'in an Authorization header',
                reason='unsendable token',
            )
        return token

    def resolve_tokens(self) -> dict[str, str] | None:
        """The tokens in effect by name: `tokens`, else `tokens_file`'s, else `resolve_token()`'s."""
        if self.tokens is not None:
            return dict(self.tokens)
        if self.tokens_file is not None:
            return self._read_tokens_file(os.fspath(self.tokens_file))
        token = self.resolve_token()
        return None if token is None else {_ONE_TOKEN: token}

    def _read_tokens_file(self, path: str) -> dict[str, str]:
        """The named tokens of a `NAME TOKEN`-a-line file; no error quotes a token."""
        tokens: dict[str, str] = {}
        text = self._read_token_file(path, MAX_TOKENS_FILE_BYTES, 'tokens file', 'named tokens')
        for number, line in enumerate(text.removeprefix('\ufeff').splitlines(), 1):
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            name, _, token = line.strip().partition(' ')
            if not token.strip() or name in tokens:
                problem = 'repeats a name' if name in tokens else 'holds no token'
                raise self._error(
                    f'line {number} of the tokens file {quote(path)} {problem}: write one NAME TOKEN a line',
                    line=number,
                )
            tokens[name] = token.strip()
        problem = refusals(lambda: check_tokens('tokens', tokens)) if tokens else {'tokens': 'it names no token'}
        if problem:
            raise self._error(f'the tokens file {quote(path)} cannot be used: {problem["tokens"]}')
        return tokens

    def _read_token_file(
        self, path: str, limit: int = MAX_TOKEN_FILE_BYTES, what: str = 'token file', holds: str = 'the token'
    ) -> str:
        """The file's text, read up to `limit` bytes (a device or a huge file is refused)."""
        try:
            with open(path, 'rb') as file:
                data = file.read(limit + 1)
        except OSError as error:
            raise self._error(f'cannot read the {what} {quote(path)}: {error.strerror or error}') from None
        if len(data) > limit:
            raise self._error(
                f'the {what} {quote(path)} is over {limit} bytes; it must hold just {holds}',
                reason=f'{what} too large',
                limit=limit,
            )
        try:
            return data.decode('utf-8')
        except UnicodeDecodeError as error:
            raise self._error(f'cannot read the {what} {quote(path)}: not UTF-8 text ({error.reason})') from None

    def url(self, port: int | None = None) -> str:
        """The endpoint's URL (with `port` instead of `self.port` when given, e.g. the one `0` picked)."""
        host = f'[{self.host}]' if ':' in self.host else self.host  # brackets given were removed at construction
        return f'http://{host}:{self.port if port is None else port}{self.path}'

    def _error(self, message: str, **details: Any) -> ServingError:
        token_file = cast(object, self.token_file)  # of any type while __post_init__ refuses it
        shown = os.fspath(cast(str, token_file)) if isinstance(token_file, str | os.PathLike) else token_file
        return ServingError(message, host=self.host, port=self.port, token_file=shown, **details)


def http_app(server: Server[Any], options: HttpOptions = HttpOptions()) -> Starlette:
    """The ASGI app serving `server` at `options.path`, with the checks of this module's rules."""
    return _app(server, options, _checked_tokens(server, options), options.port)


def _checked_tokens(server: object, options: object) -> dict[str, str] | None:
    """The tokens in effect, once `server` and `options` are what serving needs and serving is safe."""
    from mcp.server.lowlevel import Server

    if not isinstance(server, Server):
        raise ServingError(
            f'the server must be an MCP Server (agentool.mcp.create_mcp_server()); got {quote(server)}',
            option='server',
            value=quote(server),
        )
    if not isinstance(options, HttpOptions):
        raise ServingError(
            f'options must be an HttpOptions; got {quote(options)}', option='options', value=quote(options)
        )
    tokens = options.resolve_tokens()
    if tokens is None and not is_loopback(options.host) and not options.allow_unauthenticated:
        raise UnsafeServingError(
            f'refusing to serve MCP without authentication on {quote(options.host)}, which other machines can reach: '
            f'set a bearer token (${TOKEN_ENV} or a token file), serve on 127.0.0.1, or allow it explicitly '
            '(allow_unauthenticated=True, --allow-unauthenticated) when a proxy in front authenticates',
            host=options.host,
            port=options.port,
        )
    return tokens


def _app(server: Server[Any], options: HttpOptions, tokens: dict[str, str] | None, port: int) -> Starlette:
    from mcp.server.auth.settings import AuthSettings
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
    from starlette.middleware import Middleware

    auth: dict[str, Any] = {}
    if tokens is not None:
        # Resource-server mode without OAuth: no metadata routes; the issuer URL is required but unused.
        settings = AuthSettings(issuer_url=options.url(), resource_server_url=None, required_scopes=[])  # pyright: ignore[reportArgumentType]
        auth = {'auth': settings, 'token_verifier': StaticTokens(tokens)}
    served = server.streamable_http_app(
        streamable_http_path=options.path,
        host=options.host,
        max_request_body_size=options.max_request_bytes,
        transport_security=transport_security(options.host, port),
        # The SDK's own cap stays a backstop above the guard's, which closes idle sessions to make room.
        max_sessions=options.max_sessions + 1,
        session_idle_timeout=options.session_idle_timeout,
        **auth,
    )
    per_client = cast(int, options.max_sessions_per_client)  # never None once built (__post_init__)
    table = SessionTable(options.max_sessions, per_client, options.session_idle_timeout)
    served.state.mcp_sessions = table
    proxies: tuple[Network, ...] = tuple(ipaddress.ip_network(p, strict=False) for p in options.trusted_proxies)

    def guard(app: Any) -> HttpGuard:
        made = HttpGuard(
            app,
            path=options.path,
            table=table,
            tokens=tokens,
            allowed_origins=options.allowed_origins,
            trusted_proxies=proxies,
            legacy_versions=HANDSHAKE_PROTOCOL_VERSIONS,
        )
        served.state.mcp_guard = made  # the server closes idle sessions through it when it stops
        return made

    served.user_middleware.insert(0, Middleware(guard))  # outermost: it checks the token itself
    return served


def _to_stderr(line: str) -> None:
    sys.stderr.write(f'{line}\n')
    sys.stderr.flush()


async def serve_http(
    server: Server[Any],
    options: HttpOptions = HttpOptions(),
    *,
    announce: Callable[[str], None] = _to_stderr,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `server` over Streamable HTTP until cancelled, then shut down gracefully.

    Once listening, `announce` gets a line with the URL (by default on stderr) and `task_status` the
    URL: `await task_group.start(serve_http, server, options)` returns when clients can connect.
    `UnsafeServingError` as the module says; `ServingError` when the address cannot be listened on.
    """
    with without_working_directory():  # nothing the server imports comes from the working directory
        import uvicorn

    class _Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Generator[None]:
            yield  # signals stay the caller's (`until_signalled` turns them into a graceful stop)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            guard = cast('HttpGuard | None', getattr(app.state, 'mcp_guard', None))
            if guard is not None:  # None: no request came, so the middleware was never built
                await guard.close_idle()  # an idle session's event stream would hold the stop to its limit
            await super().shutdown(sockets)

    tokens = _checked_tokens(server, options)
    with _listen(options) as listener:  # closed however this ends (uvicorn closes it too on a graceful stop)
        port = listener.getsockname()[1]
        app = _app(server, options, tokens, port)  # Host and Origin checked against the port listened on
        uv = _Server(
            uvicorn.Config(
                app,
                log_level='warning',
                # Named, not 'auto', which would import a `./httptools.py` in the working directory.
                http='h11',
                loop='asyncio',
                ws='none',
                timeout_graceful_shutdown=options.shutdown_timeout,  # pyright: ignore[reportArgumentType]  # a float works
                lifespan='on',
            )
        )
        with without_working_directory():
            uv.config.load()  # imports the protocol modules now, with the working directory out of the way
        url = options.url(port)
        auth = 'no authentication' if tokens is None else 'bearer token required'
        announce(f'agentool mcp: serving at {url} ({auth}; requests up to {options.max_request_bytes} bytes)')
        with _safe_logs():  # every logger is there now: the app is built, uvicorn's modules loaded
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    with anyio.CancelScope(shield=True):  # a cancelled caller gets a graceful shutdown
                        await uv.serve(sockets=[listener])
                    group.cancel_scope.cancel()  # stopped on its own (a signal): end the wait below

                group.start_soon(run)
                task_status.started(url)
                try:
                    await anyio.sleep_forever()
                finally:
                    uv.should_exit = True


@contextmanager
def _safe_logs() -> Generator[None]:
    """While serving, the SDK's and uvicorn's loggers escape and bound their records (which quote clients)."""
    safe = SafeLogRecords()
    names = [name for name in logging.root.manager.loggerDict if name.split('.')[0] in ('mcp', 'uvicorn')]
    loggers = [logging.getLogger(name) for name in names]
    for logger in loggers:
        logger.addFilter(safe)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(safe)


async def until_signalled(serving: Callable[[], Awaitable[None]]) -> None:
    """Await `serving()` until it ends or SIGINT/SIGTERM cancels it (a graceful stop, then a normal return)."""
    failure: Exception | None = None
    async with anyio.create_task_group() as group:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    group.cancel_scope.cancel()
                    return

        group.start_soon(stop_on_signal)
        try:
            await serving()
        except Exception as error:  # re-raised as it is below, not wrapped in the group's ExceptionGroup
            failure = error
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure


def _listen(options: HttpOptions) -> socket.socket:
    """A listening socket, so the port is known (and connections queue) before the server starts."""
    listener: socket.socket | None = None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(options.host, options.port, type=socket.SOCK_STREAM)[0]
        listener = socket.socket(family, kind, proto)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(2048)
    except OSError as error:
        if listener is not None:
            listener.close()
        reason = error.strerror or str(error)
        raise ServingError(
            f'cannot listen on {options.host}:{options.port}: {reason}',
            host=options.host,
            port=options.port,
            reason=reason,
        ) from None
    return listener
