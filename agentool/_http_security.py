"""Who may reach an HTTP server: loopback addresses, the Host/Origin settings, named bearer tokens.

Kept apart from `agentool.mcp_http` (which re-exports `is_loopback`) so that module holds the
options and the serving itself; the options are checked by `agentool._options`.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = ('is_loopback', 'transport_security', 'StaticTokens')


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
