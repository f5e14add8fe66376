"""Signing result webhooks, and the verifier proposers run on their side (stdlib only:
copy this file). The signature is HMAC-SHA256 over `<timestamp>.<raw body>` with the
proposer's callback secret, sent as `X-Countersign-Signature: sha256=<hex>` next to
`X-Countersign-Timestamp` (unix seconds) and `X-Countersign-Delivery` (the delivery id,
the same on every retry: dedupe on it).
"""

from __future__ import annotations

import hashlib
import hmac
import re
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
    Anything malformed (missing or non-str values, non-ASCII, a timestamp of absurd length, a
    headers object that fails to look up) is False, never an exception: a verifier that raises
    hands a forged request to the caller's error handling.
    """
    timestamp = _header(headers, TIMESTAMP_HEADER)
    given = _header(headers, SIGNATURE_HEADER)
    if timestamp is None or given is None or not isinstance(body, bytes | bytearray):
        return False
    if not _TIMESTAMP.fullmatch(timestamp) or not _SIGNATURE.fullmatch(given):
        return False
    if not isinstance(secret, str) or not secret:
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance_s:
        return False  # a replay of an old, validly signed request
    try:
        expected = signature(secret, timestamp, bytes(body))
    except UnicodeEncodeError:  # a secret with lone surrogates signs nothing
        return False
    return hmac.compare_digest(given, expected)


# ASCII only, bounded: `str.isdigit` accepts superscript and Arabic-Indic digits, and int() of 5000 digits is slow
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"sha256=[0-9a-f]{64}")


def _header(headers: object, name: str) -> str | None:
    lookup = getattr(headers, "get", None)
    if not callable(lookup):
        return None
    try:
        value = lookup(name)
    except Exception:  # a broken headers adapter: no value, so no signature
        return None
    return value if isinstance(value, str) else None
