"""Resolve a webhook's host once, and connect only to the addresses that were checked.

aiohttp would resolve the host again when it connects, and a DNS answer that changed in
between (DNS rebinding: public for the check, 127.0.0.1 for the connection) would walk past the
check. `pinned_session` hands aiohttp a resolver that only ever returns the checked addresses.
The URL is unchanged, so the Host header, TLS SNI and certificate check use the host name.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from ipaddress import ip_address

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from workers.targets import Address

Resolve = Callable[[str, int], Awaitable[list[Address]]]  # (host, port) -> addresses


async def system_resolve(host: str, port: int) -> list[Address]:
    """The system resolver's addresses for a host, de-duplicated, in its order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: dict[Address, None] = {}
    for info in infos:
        found[ip_address(info[4][0])] = None
    return list(found)


class PinnedResolver(AbstractResolver):
    """Answers every lookup with the checked addresses (one request, one host: no redirects)."""

    def __init__(self, addresses: Sequence[Address]) -> None:
        self.addresses = tuple(addresses)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host=str(address),
                port=port,
                family=socket.AF_INET if address.version == 4 else socket.AF_INET6,
                proto=0,
                flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
            )
            for address in self.addresses
        ]

    async def close(self) -> None:
        return None


def pinned_session(
    addresses: Sequence[Address], timeout: aiohttp.ClientTimeout, tls: ssl.SSLContext | None = None
) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(
        resolver=PinnedResolver(addresses),
        use_dns_cache=False,
        force_close=True,
        ssl=True if tls is None else tls,  # verified either way: never ssl=False
    )
    # trust_env=False: no proxy from the environment, which would resolve the host itself
    return aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False)
