"""Which Host names browser-readable pages answer to, and whether a request came through a
proxy. Pure functions of header values.

DNS rebinding: a page on evil.example has its name re-resolved to 127.0.0.1 and then reads
our pages as its own; the browser still sends `Host: evil.example`. So /ops, /readyz and
/metrics (readable without a credential a script could not get) answer only to configured
names. An address literal (`127.0.0.1:8080`, `[::1]`, a pod IP from a health probe) is always
answered: a page can only be served under an address by that address itself, so no rebinding
works through one. The API (Bearer tokens, never ambient), /healthz (a constant) and the Lark
webhook (signed) are not bound to a Host.

One origin for the dashboard: the sign-in cookie and the OAuth state live on [web]
public_url's origin, so a browser that came to the same server by another name (localhost
where public_url says 127.0.0.1) is sent there (`moved_to`) before it signs in on the wrong one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from ipaddress import ip_address

from yarl import URL

ANY_HOST = "*"
LOCAL_NAMES = ("localhost",)
# Headers a reverse proxy adds; a direct client (a browser, curl on the same host) sends none.
PROXY_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-IP", "Via")


def _is_address(text: str) -> bool:
    try:
        ip_address(text)
    except ValueError:
        return False
    return True


def host_name(header: str | None) -> str | None:
    """The name (or address) in a Host header, lower case, without port or final dot; None if
    the header is not a plain `host[:port]`."""
    if not header or any(ch in header for ch in " @/\\?#") or not header.isascii():
        return None
    if header.startswith("["):
        address, bracket, rest = header[1:].partition("]")
        if not bracket or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
        return address.lower() if _is_address(address) else None
    name, colon, port = header.partition(":")
    if colon and not port.isdigit():
        return None
    name = name.lower().removesuffix(".")
    return name or None


def allowed_names(configured: Iterable[str], bind_host: str) -> frozenset[str]:
    """localhost and the bind host (no attacker can make them resolve elsewhere for the
    victim), plus the configured names."""
    names = {*LOCAL_NAMES, bind_host, *configured}
    return frozenset(name.lower().removesuffix(".") for name in names)


def host_allowed(header: str | None, names: frozenset[str]) -> bool:
    name = host_name(header)
    if name is None:
        return False
    return ANY_HOST in names or name in names or _is_address(name)


def proxied(headers: Mapping[str, str]) -> bool:
    return any(name in headers for name in PROXY_HEADERS)


def forwarded_https(headers: Mapping[str, str]) -> bool:
    """A proxy says the client's connection was https. Only used to tighten (a Secure cookie),
    so a client that lies about it harms nobody but itself."""
    if headers.get("X-Forwarded-Proto", "").strip().lower() == "https":
        return True
    forwarded = headers.get("Forwarded", "").lower().replace(" ", "")
    return any(
        part == "proto=https" for element in forwarded.split(",") for part in element.split(";")
    )


def _port(header: str, default: int) -> int:
    """The port in a Host header (checked by `host_name`), else the scheme's."""
    tail = header.rsplit("]", 1)[-1] if header.startswith("[") else header
    _name, colon, port = tail.rpartition(":") if ":" in tail else (tail, "", "")
    return int(port) if colon and port.isdigit() else default


def moved_to(header: str | None, scheme: str, public_url: str, via_proxy: bool) -> str | None:
    """public_url's origin when this request reached the same server under another name (the
    same port, another host: localhost for 127.0.0.1), else None. Behind a proxy nothing is
    moved: the Host it sends may be the upstream's own (nginx's default), and the browser's is
    the proxy's business; nor is a request on another port (a proxy in front, on 443)."""
    name = host_name(header)
    public = URL(public_url)
    if via_proxy or name is None or header is None or public.host is None:
        return None
    wanted = public.host.lower().strip("[]").removesuffix(".")
    port = _port(header, 443 if scheme == "https" else 80)
    if name == wanted or port != public.port:
        return None
    return str(public.origin())
