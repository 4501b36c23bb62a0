"""Serving an MCP server over Streamable HTTP, safely by default.

- **Loopback by default**: `HttpOptions()` listens on `127.0.0.1`, reachable from this machine only.
- **Bearer token**: with a token (`token=`, `token_file=`, or `$AGENTOOL_MCP_TOKEN`), every request
  needs `Authorization: Bearer <token>`, compared as UTF-8 bytes in constant time (a non-ASCII
  token works); without it the answer is 401.
  The check is the MCP SDK's own bearer middleware with a static-token verifier.
- **No web page through loopback** (DNS rebinding): on a loopback address, however it is spelled
  (all of `127.0.0.0/8`, `localhost` in any case, `::1` in any spelling), a request whose `Host`
  is not that address and port is answered 421, and one whose `Origin` is another site 403.
- **No open public server by accident**: on an address other than loopback, serving without a token
  raises `UnsafeServingError` unless `allow_unauthenticated=True` says a proxy in front authenticates.
- **Request-size limit**: a request body over `max_request_bytes` is answered 413 before parsing.
- **A startup line** on stderr says where: `agentool mcp: serving at http://127.0.0.1:8000/mcp ...`.

`agentool.mcp.serve(..., transport='streamable-http', http=HttpOptions(...))` and
`agentool mcp --transport streamable-http` run `serve_http`.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.abc import TaskStatus

from .errors import ServingError, UnsafeServingError, quote

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.lowlevel import Server
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette

__all__ = (
    'TOKEN_ENV',
    'DEFAULT_MAX_REQUEST_BYTES',
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


@dataclass(frozen=True, kw_only=True)
class HttpOptions:
    """Where and how to serve over Streamable HTTP.

    Args:
        host: The address to listen on; loopback (`127.0.0.1`, `::1`, `localhost`) by default. An IPv6
            address may be bracketed as in a URL (`[::1]`); the brackets are removed.
        port: The TCP port; `0` picks a free one (the startup line says which).
        path: The MCP endpoint's path.
        token: The bearer token clients must send. Prefer `token_file` or `$AGENTOOL_MCP_TOKEN`,
            which keep it out of process listings and source code.
        token_file: A file whose content (surrounding whitespace removed) is the token.
        allow_unauthenticated: Serve without a token on a non-loopback address (something in front
            must then authenticate); without it that raises `UnsafeServingError`.
        max_request_bytes: Largest request body accepted; larger ones are answered 413.

    Raises:
        ServingError: an option of the wrong type or out of range, checked here; `details['options']`
            names each one (`allow_unauthenticated` must be a real bool: a truthy string is refused).
    """

    host: str = '127.0.0.1'
    port: int = 8000
    path: str = '/mcp'
    token: str | None = None
    token_file: str | os.PathLike[str] | None = None
    allow_unauthenticated: bool = False
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES

    def __post_init__(self) -> None:
        host = cast(object, self.host)
        if isinstance(host, str) and host.startswith('[') and host.endswith(']'):
            object.__setattr__(self, 'host', host[1:-1])  # '[::1]' as in a URL: bind the address inside
        problems = {
            option: problem
            for option, problem in (
                ('host', _host_problem(host)),
                ('port', _int_problem('port', self.port, 0, 65535)),
                ('path', _path_problem(self.path)),
                ('token', _type_problem('token', self.token, 'a string or None', str)),
                (
                    'token_file',
                    _type_problem(
                        'token_file', self.token_file, 'a path (str or os.PathLike) or None', str, os.PathLike
                    ),
                ),
                ('allow_unauthenticated', _flag_problem(self.allow_unauthenticated)),
                ('max_request_bytes', _int_problem('max_request_bytes', self.max_request_bytes, 1, None)),
            )
            if problem is not None
        }
        if problems:
            listed = list(problems.values())
            raise self._error(
                f'invalid HTTP serving options: {"; ".join(listed)}', options=list(problems), problems=listed
            )

    def resolve_token(self) -> str | None:
        """The token in effect: `token`, else `token_file`'s content, else `$AGENTOOL_MCP_TOKEN`, else `None`.

        Raises:
            ServingError: the token file cannot be read, or a token given is empty.
        """
        if self.token is not None:
            token, source = self.token, 'token'
        elif self.token_file is not None:
            try:
                token = Path(self.token_file).read_text(encoding='utf-8')
            except (OSError, UnicodeDecodeError) as error:
                raise self._error(f'cannot read the token file {os.fspath(self.token_file)!r}: {error}') from None
            source = f'token file {os.fspath(self.token_file)!r}'
        elif TOKEN_ENV in os.environ:
            token, source = os.environ[TOKEN_ENV], f'${TOKEN_ENV}'
        else:
            return None
        if not token.strip():
            raise self._error(f'the bearer token from {source} is empty')
        return token.strip()

    def url(self, port: int | None = None) -> str:
        """The endpoint's URL (with `port` instead of `self.port` when given, e.g. the one `0` picked)."""
        host = f'[{self.host}]' if ':' in self.host else self.host  # brackets given were removed at construction
        return f'http://{host}:{self.port if port is None else port}{self.path}'

    def _error(self, message: str, **details: Any) -> ServingError:
        token_file = cast(object, self.token_file)
        shown: object = (
            os.fspath(cast('os.PathLike[str] | str', token_file))
            if isinstance(token_file, str | os.PathLike)
            else token_file
        )
        return ServingError(message, host=self.host, port=self.port, token_file=shown, **details)


# Each gives the problem with one option, or None; the message names the option.


def _host_problem(host: object) -> str | None:
    return None if isinstance(host, str) else f'host must be a string (an address or a name), not {quote(host)}'


def _int_problem(option: str, value: object, low: int, high: int | None) -> str | None:
    """Unless `value` is an int (not a bool) from `low` to `high` (no upper bound when `None`)."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value and (high is None or value <= high):
        return None
    return (
        f'{option} must be a positive int, not {quote(value)}'
        if high is None
        else (f'{option} must be an int from {low} to {high}, not {quote(value)}')
    )


def _path_problem(path: object) -> str | None:
    if not (isinstance(path, str) and path.startswith('/')):
        return f"path must start with '/', not {quote(path)}"
    if any(char.isspace() or not char.isprintable() for char in path):
        return f'path must not contain spaces or control characters, not {quote(path)}'
    return None


def _type_problem(option: str, value: object, expected: str, *kinds: type) -> str | None:
    return None if value is None or isinstance(value, kinds) else f'{option} must be {expected}, not {quote(value)}'


def _flag_problem(value: object) -> str | None:
    # A truthy string such as 'no' must never allow an open public server.
    return None if isinstance(value, bool) else f'allow_unauthenticated must be True or False, not {quote(value)}'


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only: `localhost` or a loopback IP address."""
    if host.lower() == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host.strip('[]')).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve to anything


def http_app(server: Server[Any], options: HttpOptions = HttpOptions()) -> Starlette:
    """The ASGI app serving `server` at `options.path`, with authentication, Host/Origin checks and the size limit.

    Raises:
        UnsafeServingError: no token, a non-loopback host and not `allow_unauthenticated`.
        ServingError: the token file cannot be read, or the token is empty.
    """
    token = options.resolve_token()
    _check_safe(options, token)
    return _app(server, options, token, options.port)


def _check_safe(options: HttpOptions, token: str | None) -> None:
    if token is None and not is_loopback(options.host) and not options.allow_unauthenticated:
        raise UnsafeServingError(
            f'refusing to serve MCP without authentication on {options.host!r}, which other machines can reach: '
            f'set a bearer token (${TOKEN_ENV} or a token file), serve on 127.0.0.1, or allow it explicitly '
            '(allow_unauthenticated=True, --allow-unauthenticated) when a proxy in front authenticates',
            host=options.host,
            port=options.port,
        )


def _app(server: Server[Any], options: HttpOptions, token: str | None, port: int) -> Starlette:
    from mcp.server.auth.settings import AuthSettings

    auth: dict[str, Any] = {}
    if token is not None:
        # Resource-server mode without OAuth: no metadata routes; the issuer URL is required but unused.
        settings = AuthSettings(issuer_url=options.url(), resource_server_url=None, required_scopes=[])  # pyright: ignore[reportArgumentType]
        auth = {'auth': settings, 'token_verifier': _StaticToken(token)}
    return server.streamable_http_app(
        streamable_http_path=options.path,
        host=options.host,
        max_request_body_size=options.max_request_bytes,
        transport_security=_transport_security(options.host, port),
        **auth,
    )


def _transport_security(host: str, port: int) -> TransportSecuritySettings | None:
    """Host and Origin checks for a loopback `host` listening on `port` (`0`: any port); `None` elsewhere.

    The SDK turns its checks on by itself only for the exact strings `127.0.0.1`, `localhost` and
    `::1`; every other spelling of loopback (`127.0.0.2`, `LOCALHOST`, `0:0:0:0:0:0:0:1`) would
    let a web page that rebinds its name to this machine through. Elsewhere a token (or the proxy
    `allow_unauthenticated` promises) authenticates, and the public name is not known here.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(host):
        return None
    names = {'127.0.0.1', 'localhost', '[::1]', host, host.lower()}
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        names.add(str(address))
    names = {f'[{name}]' if ':' in name and not name.startswith('[') else name for name in names}
    where = '*' if port == 0 else str(port)
    hosts = sorted(f'{name}:{where}' for name in names)
    if port == 80:  # a client leaves the default port out of `Host`
        hosts += sorted(names)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f'http://{name}' for name in hosts],
    )


class _StaticToken:
    """The SDK's `TokenVerifier` for one shared secret, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._expected = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        # HTTP header values arrive as bytes that Starlette decodes as Latin-1: encoding them back
        # gives the bytes the client sent, the UTF-8 of a non-ASCII token.
        try:
            sent = token.encode('latin-1')
        except UnicodeEncodeError:
            sent = token.encode()
        if hmac.compare_digest(sent, self._expected):
            return AccessToken(token=token, client_id='agentool-bearer', scopes=[])
        return None


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + '\n')
    sys.stderr.flush()


async def serve_http(
    server: Server[Any],
    options: HttpOptions = HttpOptions(),
    *,
    announce: Callable[[str], None] = _to_stderr,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `server` over Streamable HTTP until cancelled or interrupted, then shut down gracefully.

    Once listening, `announce` gets one line with the URL (by default written to stderr) and
    `task_status` the URL itself, so `url = await task_group.start(serve_http, server, options)`
    returns when clients can connect.

    Raises:
        UnsafeServingError: see `http_app`.
        ServingError: the address cannot be listened on (in use, not local, no permission).
    """
    import uvicorn

    class _Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Generator[None]:
            yield  # signals stay the caller's (`until_signalled` turns them into a graceful stop)

    token = options.resolve_token()
    _check_safe(options, token)
    listener = _listen(options)
    with listener:  # closed however this ends (uvicorn closes it too on a graceful stop)
        port = listener.getsockname()[1]
        app = _app(server, options, token, port)  # Host and Origin checked against the port listened on
        uv = _Server(uvicorn.Config(app, log_level='warning', timeout_graceful_shutdown=5, lifespan='on'))
        url = options.url(port)
        auth = 'no authentication' if token is None else 'bearer token required'
        announce(
            f'agentool mcp: serving at {url} ({auth}; requests up to {options.max_request_bytes} bytes)'
        )  # closed however this ends (uvicorn closes it too on a graceful stop)
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


async def until_signalled(serving: Callable[[], Awaitable[None]]) -> None:
    """Await `serving()` until it ends or SIGINT/SIGTERM arrives, which cancels it (a graceful stop).

    This is how `agentool.mcp.serve` and `agentool mcp` run: Ctrl-C finishes the requests in
    flight and returns normally, so the command exits 0 after a clean shutdown.
    """
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
    try:
        family, kind, proto, _, address = socket.getaddrinfo(options.host, options.port, type=socket.SOCK_STREAM)[0]
        listener = socket.socket(family, kind, proto)
    except OSError as error:
        raise ServingError(
            f'cannot listen on {options.host}:{options.port}: {error}', host=options.host, port=options.port
        ) from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(2048)
    except OSError as error:
        listener.close()
        reason = error.strerror or str(error)
        raise ServingError(
            f'cannot listen on {options.host}:{options.port}: {reason}',
            host=options.host,
            port=options.port,
            reason=reason,
        ) from None
    return listener
