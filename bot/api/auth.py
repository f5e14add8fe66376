"""Proposer authentication (constant-time) and a per-proposer token bucket."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.config import Proposer


def _fingerprint(token: str) -> bytes:
    # Hashing first gives every comparison the same length, so timing reveals nothing.
    return hashlib.sha256(token.encode("utf-8")).digest()


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
    updated: float = field(default_factory=time.monotonic)


class RateLimiter:
    def __init__(self, rate_per_s: float, burst: int) -> None:
        self.rate = rate_per_s
        self.burst = burst
        self._buckets: dict[str, _Bucket] = {}

    def take(self, key: str) -> float:
        """0 if allowed, else seconds until a request would be."""
        now = time.monotonic()
        bucket = self._buckets.setdefault(key, _Bucket(float(self.burst), now))
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.rate
