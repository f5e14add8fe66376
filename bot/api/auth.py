"""Proposer authentication (constant-time) and token buckets: per proposer (its cancels apart),
and per peer address for unknown tokens."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from ipaddress import ip_address, ip_network

from bot.config import Proposer


def _fingerprint(token: str) -> bytes:
    # Hashing first gives every comparison the same length, so timing reveals nothing.
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


class ProposerAuth:
    def __init__(self, proposers: Sequence[Proposer]) -> None:
        self._known = [(_fingerprint(p.token.get_secret_value()), p) for p in proposers]

    def identify(self, authorization: str | None) -> Proposer | None:
        if not authorization or not authorization.startswith("Bearer "):
            return None
        offered = _fingerprint(authorization.removeprefix("Bearer ").strip())
        found = None
        for fingerprint, proposer in self._known:  # no early exit: constant work per request
            if hmac.compare_digest(fingerprint, offered):
                found = proposer
        return found


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """Token buckets by key. Idle keys are forgotten past `max_keys` (a full bucket is the same
    as none; otherwise the least recently used go), so many peers cannot grow it unbounded."""

    def __init__(
        self,
        rate_per_s: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 10_000,
    ) -> None:
        self.rate = rate_per_s
        self.burst = burst
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str, _Bucket] = {}

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str) -> float:
        """0 if allowed, else seconds until a request would be."""
        now = self.clock()
        bucket = self._buckets.pop(key, None) or _Bucket(float(self.burst), now)
        self._buckets[key] = bucket  # most recently used last
        # a clock that stepped back (a wall clock, a test's) refills nothing and takes nothing
        elapsed = max(0.0, now - bucket.updated)
        bucket.tokens = min(self.burst, bucket.tokens + elapsed * self.rate)
        bucket.updated = now
        wait = 0.0
        if bucket.tokens >= 1:
            bucket.tokens -= 1
        else:
            wait = (1 - bucket.tokens) / self.rate
        if len(self._buckets) > self.max_keys:
            self._forget(now)
        return wait

    def _forget(self, now: float) -> None:
        for key, bucket in list(self._buckets.items()):
            if bucket.tokens + (now - bucket.updated) * self.rate >= self.burst:
                del self._buckets[key]
        # down to 90 %, so a stream of new keys pays for this scan once per many requests
        for key in list(self._buckets)[: max(0, len(self._buckets) - self.max_keys * 9 // 10)]:
            del self._buckets[key]


def peer_key(remote: str | None) -> str:
    """The rate-limit key of a peer address: the address, or its /64 for IPv6 (one host
    usually holds a whole /64, so single addresses would be free to rotate)."""
    if not remote:
        return "unknown"
    try:
        address = ip_address(remote)
    except ValueError:
        return remote
    if address.version == 6 and address.ipv4_mapped is not None:  # a dual-stack socket
        return str(address.ipv4_mapped)
    if address.version == 6:
        return str(ip_network(f"{address}/64", strict=False))
    return str(address)
