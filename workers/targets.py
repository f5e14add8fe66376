"""Where a result webhook may go: strict URL parsing and the address classifier (pure).

A callback URL is the proposer's word. It is parsed strictly at intake and again at delivery
(`parse_callback_target`: an IP literal inside is refused at both), where its host is resolved
once and every resolved address must pass `refusal`: loopback, private, link-local, multicast, reserved, unspecified and otherwise
non-global addresses are "inside" and refused in every notation (IPv4-mapped IPv6, IPv4
embedded in 6to4, Teredo and NAT64 addresses, and the integer/octal/hex IPv4 forms the system
resolver accepts), unless a configured network allows them (`[deliveries]
allow_internal_targets`). The connection then goes to the address that was checked
(`workers.pinned`), never to a second resolution.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from urllib.parse import urlsplit

import idna

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network

# http:// is for a receiver on this very host (development); anything else must be https
PLAIN_HTTP_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_PORTS = {"https": 443, "http": 80}

# -- strict URL parsing ---------------------------------------------------------------------


class BadUrl(ValueError):
    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


@dataclass(frozen=True)
class CallbackUrl:
    scheme: str
    host: str  # ASCII (IDNA A-labels, lower case), or an IP address without brackets
    port: int
    address: Address | None  # when the host is an IP literal


_AUTHORITY = re.compile(r"(?P<host>\[[^\]]*\]|[^:\[\]]+)(?::(?P<port>[0-9]{1,5}))?")
# what inet_aton reads as an IPv4 address besides a dotted quad: 2130706433, 0x7f.1, 0177.0.0.1
_NUMERIC_HOST = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")


def _hidden(char: str) -> bool:
    # controls, format (zero-width, bidi), separators (every space), surrogates, unassigned
    return unicodedata.category(char)[0] in "CZ"


def parse_callback_url(url: str) -> CallbackUrl:
    """The URL's scheme, host and port, or BadUrl naming what is wrong and how to fix it."""
    for position, char in enumerate(url):
        if _hidden(char):
            raise BadUrl(
                f"contains U+{ord(char):04X} ({unicodedata.name(char, 'unnamed')}) at "
                f"position {position}: no whitespace or invisible characters are allowed",
                "percent-encode it in the path or query, or remove it",
            )
    try:
        parts = urlsplit(url)
    except ValueError as error:  # e.g. an unbalanced [ in the host part
        raise BadUrl(
            f"does not parse as a URL ({error})", "check the brackets and the host part"
        ) from None
    if parts.scheme not in DEFAULT_PORTS:
        raise BadUrl(f"scheme {parts.scheme or '(none)'!r} is not allowed", "use an https:// URL")
    if "@" in parts.netloc:
        raise BadUrl(
            "carries userinfo (user:password@): a callback authenticates by its signature",
            "remove everything up to and including '@' from the host part",
        )
    authority = _AUTHORITY.fullmatch(parts.netloc)
    if not parts.netloc or authority is None:
        raise BadUrl(
            f"the host part {parts.netloc!r} is not host[:port]",
            "write it as https://host.example[:port]/path",
        )
    host, address = _host(authority["host"])
    port = DEFAULT_PORTS[parts.scheme] if authority["port"] is None else int(authority["port"])
    if not 1 <= port <= 65535:
        raise BadUrl(f"port {port} is outside 1..65535", "use a port from 1 to 65535")
    if parts.scheme == "http" and host not in PLAIN_HTTP_HOSTS:
        raise BadUrl(
            "must be an https:// URL (http:// only on the loopback interface)",
            "serve the callback over https",
        )
    return CallbackUrl(parts.scheme, host, port, address)


def _host(raw: str) -> tuple[str, Address | None]:
    if raw.startswith("["):
        try:
            v6 = IPv6Address(raw[1:-1])
        except ValueError:
            v6 = None
        if v6 is None or v6.scope_id:
            raise BadUrl(
                f"{raw} is not an IPv6 address (zone ids are not allowed)",
                "write an IPv6 address in brackets, e.g. [2001:db8::1], or use a host name",
            )
        return str(v6), v6
    try:
        v4 = IPv4Address(raw)
        return str(v4), v4
    except ValueError:
        pass
    if _NUMERIC_HOST.fullmatch(raw.rstrip(".")):
        raise BadUrl(
            f"{raw!r} is a number, not a host name or a dotted-quad IPv4 address",
            "write IPv4 addresses as four decimal numbers (a.b.c.d), or use a host name",
        )
    try:
        return idna.encode(raw, uts46=True).decode("ascii"), None
    except idna.IDNAError as error:
        raise BadUrl(
            f"host {raw!r} is not a valid (IDNA) host name: {error}",
            "use a registered host name: letters, digits and hyphens in labels of 1-63",
        ) from None


# -- the address classifier ------------------------------------------------------------------

# Checked in order; the first that matches names the refusal. The last one catches the rest of
# the special-purpose ranges (shared address space 100.64/10, documentation, benchmarking...).
INSIDE: tuple[tuple[str, Callable[[Address], bool]], ...] = (
    ("unspecified", lambda a: a.is_unspecified),
    ("loopback", lambda a: a.is_loopback),
    ("link-local", lambda a: a.is_link_local),
    ("multicast", lambda a: a.is_multicast),
    ("reserved", lambda a: a.is_reserved),
    ("private", lambda a: a.is_private),
    ("not globally routable", lambda a: not a.is_global),
)

NAT64_PREFIXES = (IPv6Network("64:ff9b::/96"), IPv6Network("64:ff9b:1::/48"))


def translated(address: Address) -> Address:
    """The IPv4 address an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) address
    reaches: it is that address on the wire, so it is judged as that address."""
    if isinstance(address, IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if any(address in prefix for prefix in NAT64_PREFIXES):
            return IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def tunnelled_ipv4(address: Address) -> IPv4Address | None:
    """The IPv4 endpoint of a 6to4 or Teredo address (reached through a relay)."""
    if isinstance(address, IPv6Address):
        if address.sixtofour is not None:
            return address.sixtofour
        if address.teredo is not None:
            return address.teredo[1]
    return None


def _allowed(address: Address, allowed: Sequence[Network]) -> bool:
    return any(address.version == net.version and address in net for net in allowed)


def _inside(address: Address) -> str | None:
    return next((name for name, test in INSIDE if test(address)), None)


def refusal(address: Address, allowed: Sequence[Network] = ()) -> str | None:
    """Why a connection to `address` could reach inside, or None when it may be a target.

    An address in an `allowed` network is a target whatever its class.
    """
    address = translated(address)
    if _allowed(address, allowed):
        return None
    why = _inside(address)
    if why is not None:
        return f"{address} is {why}"
    inner = tunnelled_ipv4(address)
    if inner is not None and not _allowed(inner, allowed) and (why := _inside(inner)):
        return f"{address} embeds {inner}, which is {why}"
    return None


INSIDE_FIX = (
    "use a globally routable host, or ask an administrator to allow its network in "
    "[deliveries] allow_internal_targets (only for receivers you trust)"
)


def parse_callback_target(url: str, allowed: Sequence[Network] = ()) -> CallbackUrl:
    """`parse_callback_url`, and an IP literal must be a target (`refusal`): an address inside
    is refused at intake as at delivery, by this one function (BadUrl names the fix)."""
    target = parse_callback_url(url)
    if target.address is not None and (why := refusal(target.address, allowed)) is not None:
        raise BadUrl(f"{why}: results are never sent inside", INSIDE_FIX)
    return target


def literal_address(host: str) -> Address | None:
    """The address a host names literally, in any notation the system resolver reads.

    None for a host name. `socket.inet_aton` is the C library's parser, so "2130706433",
    "0x7f.1" and "0177.0.0.1" come out as the 127.0.0.1 a resolver would connect to.
    """
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if _NUMERIC_HOST.fullmatch(bare):
        try:
            return IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None
