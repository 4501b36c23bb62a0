"""Checks for serving over HTTP: each option's problem, loopback, Host/Origin settings, the bearer token.

Kept apart from `agentool.mcp_http` (which re-exports `is_loopback`) so that module holds the
options and the serving itself.
"""

from __future__ import annotations

import hmac
import ipaddress
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from .errors import quote

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = (
    'host_problem',
    'int_problem',
    'seconds_problem',
    'origins_problem',
    'path_problem',
    'type_problem',
    'flag_problem',
    'share_problem',
    'tokens_problem',
    'one_of',
    'proxies_problem',
    'unsendable',
    'is_loopback',
    'transport_security',
    'StaticTokens',
)

# Each gives the problem with one option, or None; the message names the option.


def host_problem(host: object) -> str | None:
    return None if isinstance(host, str) else f'host must be a string (an address or a name), not {quote(host)}'


def int_problem(option: str, value: object, low: int, high: int | None) -> str | None:
    """Unless `value` is an int (not a bool) from `low` to `high` (no upper bound when `None`)."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value and (high is None or value <= high):
        return None
    return (
        f'{option} must be a positive int, not {quote(value)}'
        if high is None
        else (f'{option} must be an int from {low} to {high}, not {quote(value)}')
    )


def seconds_problem(option: str, value: object) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return None
    return f'{option} must be a positive, finite number of seconds, not {quote(value)}'


def origins_problem(origins: object) -> str | None:
    if not isinstance(origins, tuple | list):
        given = quote(origins)
        return f"allowed_origins must be a tuple of origins such as 'https://app.example.com', not {given}"
    for origin in cast('tuple[object, ...]', origins):
        if not (isinstance(origin, str) and _is_origin(origin)):
            return (
                "allowed_origins must be origins such as 'https://app.example.com' (a scheme and a host, with "
                'its port if any, and nothing after: no browser sends a path, a query or credentials in Origin); '
                f'{quote(origin)} is not one'
            )
    return None


def _is_origin(origin: str) -> bool:
    """Whether `origin` is what a browser sends as `Origin`: scheme and host (and port), nothing after.

    One with a path, a query or credentials would never match a request, refusing every browser.
    """
    scheme, separator, rest = origin.rstrip('/').partition('://')
    return (
        bool(scheme and separator and rest)
        and origin.isprintable()
        and origin.isascii()
        and not any(char in rest for char in '/?#@ ')
    )


def path_problem(path: object) -> str | None:
    if not (isinstance(path, str) and path.startswith('/')):
        return f"path must start with '/', not {quote(path)}"
    if any(char.isspace() or not char.isprintable() for char in path):
        return f'path must not contain spaces or control characters, not {quote(path)}'
    return None


def type_problem(option: str, value: object, expected: str, *kinds: type) -> str | None:
    return None if value is None or isinstance(value, kinds) else f'{option} must be {expected}, not {quote(value)}'


def flag_problem(value: object) -> str | None:
    # A truthy string such as 'no' must never allow an open public server.
    return None if isinstance(value, bool) else f'allow_unauthenticated must be True or False, not {quote(value)}'


def share_problem(max_sessions: object, per_client: object) -> str | None:
    """Unless one client's limit is below the server's (so one client can never fill it), or both are 1."""
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (max_sessions, per_client)):
        return None  # the type or range problem is reported instead
    if cast(int, per_client) < cast(int, max_sessions) or max_sessions == per_client == 1:
        return None
    return (
        f'max_sessions_per_client ({per_client}) must be below max_sessions ({max_sessions}), so that one '
        'client can never fill the server'
    )


def unsendable(token: str) -> bool:
    """Whether no client can send `token` in an `Authorization` header (a control or space character)."""
    return any(not (char.isprintable() and (char == ' ' or not char.isspace())) for char in token)


def one_of(given: dict[str, object]) -> str | None:
    """Unless at most one of the options `given` (by name) is set (not `None`)."""
    named = [name for name, value in given.items() if value is not None]
    return None if len(named) <= 1 else f'{" and ".join(named)} each give the token(s): give one of them'


def tokens_problem(tokens: object) -> str | None:
    if tokens is None:
        return None
    if not isinstance(tokens, Mapping) or not tokens:
        given = quote(cast(object, tokens))
        return f"tokens must be a non-empty mapping of names to tokens ({{'alice': '...'}}), not {given}"
    items = cast('Mapping[object, object]', tokens).items()
    for name, value in items:
        if not (isinstance(name, str) and name and name.isprintable() and len(name) <= _NAME_CHARS):
            return f'each token name must be printable text of 1 to {_NAME_CHARS} characters, not {quote(name)}'
        if not (isinstance(value, str) and value.strip() == value and value and not unsendable(value)):
            return (
                f'the token named {quote(name)} must be a non-empty string a client can send in a header '
                '(no control or space characters around or in it)'
            )
    if len({value for _, value in items}) < len(items):
        return 'two names share one token: each name needs its own token (it is how a client is told apart)'
    return None


_NAME_CHARS = 64


def proxies_problem(proxies: object) -> str | None:
    if not isinstance(proxies, tuple | list):
        given = quote(proxies)
        return f"trusted_proxies must be a tuple of addresses or networks ('10.0.0.5', '10.0.0.0/24'), not {given}"
    for proxy in cast('tuple[object, ...]', proxies):
        try:
            ipaddress.ip_network(cast(str, proxy), strict=False)
        except (TypeError, ValueError):
            return f'trusted_proxies must hold IP addresses or networks; {quote(proxy)} is not one'
    return None


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


class StaticTokens:
    """The SDK's `TokenVerifier` for shared secrets by name, each compared in constant time."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._expected = [(token.encode(), name) for name, token in tokens.items()]

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        # HTTP header values arrive as bytes that Starlette decodes as Latin-1: encoding them back
        # gives the bytes the client sent, the UTF-8 of a non-ASCII token.
        try:
            sent = token.encode('latin-1')
        except UnicodeEncodeError:
            sent = token.encode()
        found: str | None = None
        for expected, name in self._expected:  # every one compared: the time says nothing of which
            if hmac.compare_digest(sent, expected):
                found = name
        return None if found is None else AccessToken(token=token, client_id=found, scopes=[])
