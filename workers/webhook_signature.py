"""Signing result webhooks, and the verifier proposers run on their side (stdlib only:
copy this file). The signature is HMAC-SHA256 over `<timestamp>.<raw body>` with the
proposer's callback secret, sent as `X-Countersign-Signature: sha256=<hex>` next to
`X-Countersign-Timestamp` (unix seconds) and `X-Countersign-Delivery` (the delivery id,
the same on every retry: dedupe on it).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

SIGNATURE_HEADER = "X-Countersign-Signature"
TIMESTAMP_HEADER = "X-Countersign-Timestamp"
DELIVERY_HEADER = "X-Countersign-Delivery"
TOLERANCE_S = 300


def signature(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def signed_headers(secret: str, body: bytes, delivery_id: str, now: float) -> dict[str, str]:
    timestamp = str(int(now))
    return {
        "Content-Type": "application/json",
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: signature(secret, timestamp, body),
        DELIVERY_HEADER: delivery_id,
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float | None = None,
    tolerance_s: int = TOLERANCE_S,
) -> bool:
    """True only for an untampered body signed with `secret` within `tolerance_s` of now.

    `headers` may be any case-insensitive mapping (or a plain dict with these exact names).
    """
    timestamp = headers.get(TIMESTAMP_HEADER, "")
    given = headers.get(SIGNATURE_HEADER, "")
    if not timestamp.isdigit() or not given:
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance_s:
        return False  # a replay of an old, validly signed request
    return hmac.compare_digest(given, signature(secret, timestamp, body))
