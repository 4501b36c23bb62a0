"""Who may reach the MCP HTTP app and how fairly: loopback, Host/Origin, tokens, session limits, a graceful stop.

`is_loopback`, `transport_security` and `StaticTokens` configure the SDK's own checks; `HttpGuard`
admits each new session by the fair rules of the MCP guide, so no client can lock out the others.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio

from ._terminal import SafeLogRecords
from .errors import SessionLimitError

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

Headers = list[tuple[bytes, bytes]]

LOGGER = logging.getLogger('agentool.mcp')
"""Where serving logs what it refused or cut (stderr by default, as every warning), escaped and bounded."""
LOGGER.addFilter(SafeLogRecords())

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Client = tuple[str, str]
"""Who a client is: its address and the name of the token it sent ('' with one token or none)."""

_SESSION_HEADER = b'mcp-session-id'
_BODY_HEADERS = (_SESSION_HEADER, b'content-type', b'content-length', b'mcp-protocol-version')


@dataclass
class _Session:
    client: Client
    headers: Headers
    """The opening request's headers (Host, Origin, Authorization), to close the session as its client would."""
    last: float
    busy: int = 0
    calls: int = 0
    """POST requests in progress (calls, not event streams)."""


@dataclass
class SessionTable:
    """The MCP sessions open through one app, least recently used first (the app's `state.mcp_sessions`)."""

    max_sessions: int
    max_sessions_per_client: int
    idle_timeout: float
    sessions: OrderedDict[str, _Session] = field(default_factory=OrderedDict[str, _Session])
    per_client: Counter[Client] = field(default_factory=Counter[Client])
    evicted: int = 0  # idle sessions closed to make room
    refused: int = 0  # new sessions refused (`SessionLimitError`)

    @property
    def open(self) -> int:
        """How many sessions are open (admitted, or being opened)."""
        return sum(self.per_client.values())

    def touch(self, session_id: str, busy: int, calls: int) -> _Session | None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.busy += busy
            session.calls += calls
            session.last = time.monotonic()
            self.sessions.move_to_end(session_id)
        return session

    def forget(self, session_id: str) -> None:
        if (session := self.sessions.pop(session_id, None)) is not None:
            self.release(session.client)

    def release(self, client: Client) -> None:
        self.per_client[client] -= 1
        if self.per_client[client] <= 0:
            del self.per_client[client]

    def expire(self) -> None:
        """Forget the sessions the SDK has closed for idleness."""
        # A second past the SDK's idle timeout, so this table never undercounts its sessions.
        deadline = time.monotonic() - self.idle_timeout - 1.0
        for session_id, session in list(self.sessions.items()):
            if session.last > deadline:
                break
            if not session.busy:
                self.forget(session_id)

    def idlest(self, client: Client) -> str | None:
        """`client`'s least recently used idle session, or `None` when all of its sessions are busy."""
        idle = (id for id, session in self.sessions.items() if not session.busy and session.client == client)
        return next(idle, None)

    def idlest_of_largest(self, than: int) -> str | None:
        """The idlest session of the client holding the most sessions (with one idle), if more than `than`."""
        largest: dict[Client, str] = {}
        for session_id, session in self.sessions.items():
            if not session.busy and self.per_client[session.client] > than:
                largest.setdefault(session.client, session_id)
        if not largest:
            return None
        return largest[max(largest, key=lambda client: self.per_client[client])]


class HttpGuard:
    """ASGI middleware in front of the SDK's app: session limits, `allowed_origins`, a graceful stop."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str,
        table: SessionTable,
        tokens: dict[str, str] | None,
        allowed_origins: Sequence[str] = (),
        trusted_proxies: Sequence[Network] = (),
        legacy_versions: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.path = path
        self.table = table
        # Token bytes to the name a client is counted under: '' when there is one token (all alike).
        named = tokens is not None and len(tokens) > 1
        self._tokens = [(token.encode(), name if named else '') for name, token in (tokens or {}).items()]
        self._origins = frozenset(origin.encode('latin-1') for origin in allowed_origins)
        self._proxies = tuple(trusted_proxies)
        self._legacy = frozenset(version.encode('latin-1') for version in legacy_versions)
        self.stopping = False
        """Set when the server stops: a request cancelled from then on was cut by the shutdown limit."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope['type'] != 'http':
            return await self.app(scope, receive, send)
        send = _json_refusals(send)
        headers: Headers = scope['headers']
        if self._origins and (origin := _header(headers, b'origin')) is not None and origin not in self._origins:
            LOGGER.warning('agentool mcp: refused a request from origin %.200r (not in allowed_origins)', origin)
            return await _answer(send, 403, 'Origin not allowed', {'type': 'ForbiddenOrigin'})
        if scope['path'] != self.path:
            return await self.app(scope, receive, send)
        if (version := _header(headers, b'mcp-protocol-version')) is not None and version not in self._legacy:
            # Routed as the SDK routes it: a sessionless (2026-07-28) exchange holds no session.
            return await self.app(scope, receive, send)
        if (session_id := _header(headers, _SESSION_HEADER)) is not None:
            return await self._in_session(session_id.decode('latin-1'), scope, receive, send)
        token_name = self._token_name(headers)
        if scope['method'] != 'POST' or token_name is None:
            return await self.app(scope, receive, send)  # the SDK refuses it; no session can open
        return await self._opening((self._address(scope, headers), token_name), scope, receive, send)

    async def close_idle(self) -> None:
        """Close every session with no call in progress (the server is stopping)."""
        self.stopping = True
        for session_id, session in list(self.table.sessions.items()):
            if not session.calls:
                await self._close(session_id, session)

    async def _opening(self, client: Client, scope: Scope, receive: Receive, send: Send) -> None:
        table = self.table
        table.expire()
        if (refusal := await self._make_room(client)) is not None:
            table.refused += 1
            status = 429 if refusal.details['option'] == 'max_sessions_per_client' else 503
            data = {'type': type(refusal).__name__, 'details': refusal.details}
            return await _answer(send, status, refusal.message, data)
        table.per_client[client] += 1  # counted while it opens: concurrent openings cannot overshoot
        opened: list[bytes] = []

        async def watch(message: Message) -> None:
            if message['type'] == 'http.response.start' and message['status'] < 400:
                opened.extend(value for key, value in message.get('headers', ()) if key == _SESSION_HEADER)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if opened:
                kept = [(key, value) for key, value in scope['headers'] if key not in _BODY_HEADERS]
                table.sessions[opened[0].decode('latin-1')] = _Session(client, kept, time.monotonic())
            else:
                table.release(client)  # refused or failed: nothing opened

    async def _in_session(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        table = self.table
        call = int(scope['method'] == 'POST')
        if table.touch(session_id, +1, call) is None:
            return await self.app(scope, receive, send)
        status: list[int] = []
        answered: list[bool] = []

        async def watch(message: Message) -> None:
            if message['type'] == 'http.response.start':
                status.append(message['status'])
            elif message['type'] == 'http.response.body' and not message.get('more_body', False):
                answered.append(True)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if self.stopping and call and not answered:  # a call (not an event stream) the stop ended early
                LOGGER.warning('agentool mcp: the shutdown limit (shutdown_timeout) passed: cut a call still running')
            session = table.touch(session_id, -1, -call)
            ended = scope['method'] == 'DELETE' and status and status[0] < 400
            if ended or (status and status[0] == 404):
                table.forget(session_id)
            elif self.stopping and session is not None and call and not session.calls:
                with anyio.CancelScope(shield=True):
                    await self._close(session_id, session)  # its last call is done: let the stop finish

    async def _make_room(self, client: Client) -> SessionLimitError | None:
        table = self.table
        mine = table.per_client[client]
        if mine >= table.max_sessions_per_client:
            if await self._recycle(table.idlest(client)):
                return None
            return self._refusal('this client', 'max_sessions_per_client', table.max_sessions_per_client, mine)
        if table.open < table.max_sessions:
            return None
        # Full: a client holding more than this one gives up its idlest session, else this one does.
        if await self._recycle(table.idlest_of_largest(than=mine)) or await self._recycle(table.idlest(client)):
            return None
        return self._refusal('the server', 'max_sessions', table.max_sessions, table.open)

    async def _recycle(self, session_id: str | None) -> bool:
        """Close `session_id` (if any) to make room; whether it is gone."""
        if session_id is None or not await self._close(session_id, self.table.sessions[session_id]):
            return False
        self.table.evicted += 1
        return True

    @staticmethod
    def _refusal(whose: str, option: str, limit: int, count: int) -> SessionLimitError:
        return SessionLimitError(
            f'{whose} has {count} MCP sessions open, the most allowed ({option}={limit}), and none can be '
            'closed; close one (DELETE) or retry later',
            option=option,
            limit=limit,
            open=count,
        )

    def _address(self, scope: Scope, headers: Headers) -> str:
        """The client's address: the peer's, or the one a trusted proxy forwarded (its nearest untrusted hop)."""
        address = str((scope.get('client') or ('?', 0))[0])
        if not self._proxies or not self._trusted(address):
            return address
        hops = b','.join(value for key, value in headers if key == b'x-forwarded-for').split(b',')
        for hop in reversed(hops):
            address = hop.strip().decode('latin-1')[:64]  # longer is no address: kept short in logs
            if not self._trusted(address):
                break
        return address

    def _trusted(self, address: str) -> bool:
        with suppress(ValueError):  # not an address: never a trusted proxy
            parsed = ipaddress.ip_address(address)
            return any(parsed in network for network in self._proxies)
        return False

    async def _close(self, session_id: str, session: _Session) -> bool:
        """Close a session as its client would (a DELETE through the app); whether it is gone."""
        headers = [*session.headers, (_SESSION_HEADER, session_id.encode('latin-1'))]
        scope: Scope = {
            'type': 'http',
            'asgi': {'version': '3.0'},
            'http_version': '1.1',
            'method': 'DELETE',
            'scheme': 'http',
            'path': self.path,
            'raw_path': self.path.encode(),
            'root_path': '',
            'query_string': b'',
            'headers': headers,
            'client': ('127.0.0.1', 0),
            'server': None,
        }
        status: list[int] = []

        async def nothing() -> Message:
            return {'type': 'http.request', 'body': b'', 'more_body': False}

        async def record(message: Message) -> None:
            if message['type'] == 'http.response.start':
                status.append(message['status'])

        try:
            await self.app(scope, nothing, record)
        except Exception:  # the SDK has already stopped (a late close during shutdown): nothing left to free
            return True
        gone = bool(status) and (status[0] < 400 or status[0] == 404)
        if gone:
            self.table.forget(session_id)
        return gone

    def _token_name(self, headers: Headers) -> str | None:
        """The name the request's token is counted under ('' without names), or `None`: not authorised."""
        if not self._tokens:
            return ''
        # Read as the SDK's bearer middleware reads it (the scheme in any case), so the two agree.
        sent = _header(headers, b'authorization') or b''
        if sent[:7].lower() != b'bearer ':
            return None
        return _token_owner(sent[7:], self._tokens)


def _json_refusals(send: Send) -> Send:
    """`send`, with the SDK's plain-text refusals (421, 403, 400, ...) and its OAuth-style 401 as
    JSON-RPC errors (headers such as `WWW-Authenticate` kept): a client parses one shape of error."""
    held: list[Message] = []
    text = bytearray()

    async def rewrite(message: Message) -> None:
        if message['type'] == 'http.response.start':
            content_type = _header(message.get('headers', []), b'content-type') or b'text/plain'
            if message['status'] == 401 or (message['status'] >= 400 and content_type.startswith(b'text/plain')):
                held.append(message)
                return
        elif held and message['type'] == 'http.response.body':
            text.extend(message.get('body', b'')[: 500 - len(text)])  # the SDK's refusals are one short line
            if message.get('more_body', False):
                return
            start = held.pop()
            said, data = _refusal_text(bytes(text), start['status'])
            return await _answer(send, start['status'], said, data, start.get('headers', []))
        await send(message)

    return rewrite


def _refusal_text(text: bytes, status: int) -> tuple[str, dict[str, Any]]:
    """The message and `data` of the JSON-RPC error standing for a refusal whose body was `text`."""
    data: dict[str, Any] = {'status': status}
    try:
        said: object = json.loads(text)
    except ValueError:
        said = text.decode('utf-8', 'replace').strip()
    if isinstance(said, dict):  # the bearer middleware's {"error": ..., "error_description": ...}
        fields = cast('dict[str, object]', said)
        if isinstance(code := fields.get('error'), str):
            data['error'] = code
        said = fields.get('error_description') or code
    return (said if isinstance(said, str) and said else f'HTTP {status}'), data


def _header(headers: Headers, name: bytes) -> bytes | None:
    return next((value for key, value in headers if key == name), None)


async def _answer(
    send: Send, status: int, message: str, data: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer `status` with a JSON-RPC error body, keeping `headers` but those that describe the body."""
    error = {'code': -32000, 'message': message, 'data': data}
    body = json.dumps({'jsonrpc': '2.0', 'id': None, 'error': error}).encode()
    kept = [(key, value) for key, value in headers if key not in (b'content-type', b'content-length', b'retry-after')]
    kept += [(b'content-type', b'application/json'), (b'content-length', str(len(body)).encode())]
    if status in (429, 503):
        kept.append((b'retry-after', b'1'))
    await send({'type': 'http.response.start', 'status': status, 'headers': kept})
    await send({'type': 'http.response.body', 'body': body})


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only: `localhost` or a loopback IP address."""
    if host.lower() == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host.strip('[]')).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve to anything


def transport_security(host: str, port: int) -> TransportSecuritySettings | None:
    """Host and Origin checks for a loopback `host` listening on `port` (`0`: any port); `None` elsewhere.

    The SDK checks only the exact strings `127.0.0.1`, `localhost` and `::1`, not `127.0.0.2`.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(host):
        return None
    names = {'127.0.0.1', 'localhost', '[::1]', host, host.lower()}
    with suppress(ValueError):  # a name (localhost) has no canonical address form
        names.add(str(ipaddress.ip_address(host)))
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


class StaticTokens:
    """The SDK's `TokenVerifier` for shared secrets by name, each compared in constant time."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._expected = [(token.encode(), name) for name, token in tokens.items()]

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        # Starlette decodes header bytes as Latin-1: encoding back gives the bytes the client sent.
        try:
            sent = token.encode('latin-1')
        except UnicodeEncodeError:
            sent = token.encode()
        found = _token_owner(sent, self._expected)
        return None if found is None else AccessToken(token=token, client_id=found, scopes=[])


def _token_owner(sent: bytes, tokens: Sequence[tuple[bytes, str]]) -> str | None:
    """The name of the token `sent` is, comparing every one in constant time: the time says nothing of which."""
    found: str | None = None
    for token, name in tokens:
        if hmac.compare_digest(sent, token):
            found = name
    return found
