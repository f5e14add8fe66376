"""Who may talk to `countersign mcp --http`, decided before it listens.

Whoever reaches the port acts as the server's proposer. On a loopback host only this machine
can, and the Host and Origin checks stop a web page from reaching it through DNS rebinding.
On any other host the network can too, so a bearer token is required (from the environment,
never a flag: a command line is visible to every user of the machine, and it is never
logged), and the Host and Origin checks are kept for the names clients use. Without them
the server refuses to start, with one line naming the fix. `guard_for` decides (pure);
`BearerGate` enforces the token in front of the SDK's app.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN_ENV = "COUNTERSIGN_MCP_HTTP_TOKEN"
HOSTS_ENV = "COUNTERSIGN_MCP_HTTP_HOSTS"
MIN_TOKEN_CHARS = 32
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
HOST_NAME = re.compile(r"^[A-Za-z0-9.\-:]{1,253}$")
MAKE_TOKEN = "e.g. `openssl rand -hex 32`"


class GuardError(ValueError):
    """Why the server will not start as asked, and what to change (one line)."""


@dataclass(frozen=True)
class HttpGuard:
    token: str | None  # None: no token asked (loopback, none configured)
    security: TransportSecuritySettings


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ipv6(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).version == 6
    except ValueError:
        return False


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def _extra_names(environ: Mapping[str, str]) -> list[str]:
    names = [name.strip() for name in environ.get(HOSTS_ENV, "").split(",") if name.strip()]
    for name in names:
        if not HOST_NAME.fullmatch(name) or (":" in name and not _ipv6(name)):
            raise GuardError(
                f"{HOSTS_ENV}: {name[:60]!r} is not a host name or address: give the names "
                "clients use to reach this server, comma-separated, without scheme or port "
                "(e.g. mcp.internal,10.0.0.5)"
            )
    return names


def _token(environ: Mapping[str, str]) -> str | None:
    token = environ.get(TOKEN_ENV, "").strip()
    if not token:
        return None
    if len(token) < MIN_TOKEN_CHARS:
        raise GuardError(
            f"{TOKEN_ENV} is shorter than {MIN_TOKEN_CHARS} characters: set it to a random "
            f"secret ({MAKE_TOKEN})"
        )
    return token


def guard_for(host: str, environ: Mapping[str, str]) -> HttpGuard:
    """The checks for serving on `host`, from the environment; GuardError when it must not
    start. Reads only TOKEN_ENV and HOSTS_ENV."""
    token, extra = _token(environ), _extra_names(environ)
    if is_loopback(host):
        names = [*dict.fromkeys([*LOOPBACK_NAMES, host, *extra])]
    else:
        if token is None:
            raise GuardError(
                f"--host {host} is not a loopback address, so anyone who can reach it would "
                f"act as this proposer: set {TOKEN_ENV} to a random secret of "
                f"{MIN_TOKEN_CHARS}+ characters ({MAKE_TOKEN}) that clients send as "
                "'Authorization: Bearer <token>', or use --host 127.0.0.1"
            )
        if host in WILDCARDS and not extra:
            raise GuardError(
                f"--host {host or '(empty)'} listens on every address, so the Host header "
                f"clients send cannot be checked against it: set {HOSTS_ENV} to the names "
                "clients use (comma-separated, e.g. mcp.internal,10.0.0.5), or bind one address"
            )
        names = [*dict.fromkeys([*([] if host in WILDCARDS else [host]), *extra])]
    hosts = [_bracketed(name) for name in names]
    return HttpGuard(
        token,
        TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[form for name in hosts for form in (name, f"{name}:*")],
            allowed_origins=[
                f"{scheme}://{name}{port}"
                for name in hosts
                for scheme in ("http", "https")
                for port in ("", ":*")
            ],
        ),
    )


UNAUTHORIZED = json.dumps(
    {
        "code": "unauthorized",
        "message": "this MCP server needs 'Authorization: Bearer <token>' with its token",
    }
).encode()


class BearerGate:
    """Lets through only requests that carry the token (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._carries_token(scope):
            await self.app(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="countersign-mcp"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": UNAUTHORIZED})

    def _carries_token(self, scope: Scope) -> bool:
        given = [value for name, value in scope["headers"] if name == b"authorization"]
        return len(given) == 1 and hmac.compare_digest(given[0], self._expected)
