"""The receiving side of a service.call, for the service to copy (stdlib only, no countersign
import): verify that a call really comes from countersign, and run each call at most once.

A confirmed call arrives as `POST <endpoint>` with a JSON body (operation_id, client_id,
service, action, arguments, claim_id, confirm_digest, confirmed_by, audience, proposer,
requested_by) and these headers:

    X-Countersign-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">
    X-Countersign-Timestamp: <unix seconds>
    Idempotency-Key: <client_id>   (the same on every re-send of this call)
    X-Countersign-Operation: <operation_id>

`receive` checks, in order: the signature (constant time), the timestamp window (a signed
request older or newer than `tolerance_s` is a replay), that the key is the signed body's
client_id (a copied body cannot be run under a new key), then the key's one use in
`SeenKeys`: a new key is yours to run (then `finish` it with your answer); the same call
again gets the stored answer without running twice; a different call under a used key is
refused. A status request (`GET <status_endpoint>?idempotency_key=<key>`, the signature over
the key instead of a body) is answered by `status`.

Fencing: countersign asks `...&fence=1` (signed over `<key>?fence=1`) when it will never send
the call again. A key never seen is then recorded as fenced, in the same atomic `begin`, and
answered `{"status": "unknown", "fenced": true}`: countersign concludes the call was never
received, so a POST of that key arriving later (a slow network, a retrying proxy) must not
run, and `receive` refuses it (409). Without the fence a late POST would run a call
countersign reported as never sent.

Usage (any framework; `headers` is a case-insensitive mapping or a dict):

    seen = MemorySeenKeys()       # or your own SeenKeys backed by your database
    verdict = receive(secret, request.headers, raw_body, seen)
    if verdict.answer is not None:            # refused, or this call's stored answer
        return respond(*verdict.answer)
    status, body = run_the_action(verdict.call)
    seen.finish(verdict.key, status, body)
    return respond(status, body)

    # the status endpoint: GET ?idempotency_key=<key>[&fence=1]
    key, fence = request.query.get("idempotency_key", ""), request.query.get(FENCE_PARAM) == "1"
    return respond(*status(secret, request.headers, key, seen, fence=fence))
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

SIGNATURE_HEADER = "X-Countersign-Signature"
TIMESTAMP_HEADER = "X-Countersign-Timestamp"
IDEMPOTENCY_HEADER = "Idempotency-Key"
OPERATION_HEADER = "X-Countersign-Operation"
TOLERANCE_S = 300
# the status request's query parameter asking to fence a key never seen (value "1")
FENCE_PARAM = "fence"
# what `begin` records for a fenced key: never a call's fingerprint (those are sha256 hex)
FENCED = "fenced: declared never received"
# the status endpoint's words for a call that ran (2xx) and one refused (4xx); countersign's
# runner reads them as the service's outcomes (words.py: this module imports nothing of ours)
COMPLETED = "completed"
REFUSED = "refused"
# what makes two requests the same call (the approvers' display names may change)
CALL_FIELDS = ("operation_id", "client_id", "service", "action", "arguments", "confirm_digest")

_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"sha256=[0-9a-f]{64}")
_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,200}")

Answer = tuple[int, bytes]  # HTTP status, body


def signature(secret: str, timestamp: str, signed: bytes) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + signed, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def _header(headers: object, name: str) -> str | None:
    lookup = getattr(headers, "get", None)
    if not callable(lookup):
        return None
    try:
        value = lookup(name)
    except Exception:  # a broken headers adapter: no value, so no signature
        return None
    return value if isinstance(value, str) else None


def signed_by(
    secret: str, headers: object, signed: bytes, *, now: float | None, tolerance_s: int
) -> str | None:
    """Why the request is not countersign's (None: it is), never an exception."""
    timestamp = _header(headers, TIMESTAMP_HEADER)
    given = _header(headers, SIGNATURE_HEADER)
    if timestamp is None or given is None:
        return "unsigned"
    if not _TIMESTAMP.fullmatch(timestamp) or not _SIGNATURE.fullmatch(given):
        return "malformed signature headers"
    if not isinstance(secret, str) or not secret:
        return "no secret configured"  # fail closed
    try:
        expected = signature(secret, timestamp, bytes(signed))
    except (UnicodeEncodeError, TypeError):
        return "unsigned"
    if not hmac.compare_digest(given, expected):
        return "bad signature"
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance_s:
        return "timestamp outside the window (a replayed request)"
    return None


def status_signed(key: str, *, fence: bool) -> bytes:
    """What a status request's signature covers: the key, and whether it asks to fence (so a
    captured plain status request cannot be replayed as a fence; "?" is never in a key)."""
    return f"{key}?{FENCE_PARAM}=1".encode() if fence else key.encode()


def _json_answer(code: int, /, **fields: Any) -> Answer:
    return code, json.dumps(fields, sort_keys=True).encode()


@dataclass(frozen=True)
class Stored:
    fingerprint: str
    answer: Answer | None  # None: being run now


class SeenKeys(Protocol):
    """One use per Idempotency-Key. `begin` must be atomic (a unique key in your database):
    it records `fingerprint` as running and returns None for a new key, else what was
    stored for it. A fenced key is recorded the same way, under the fingerprint `FENCED`."""

    def begin(self, key: str, fingerprint: str) -> Stored | None: ...

    def finish(self, key: str, status: int, body: bytes) -> None: ...

    def get(self, key: str) -> Stored | None: ...


@dataclass
class MemorySeenKeys:
    """The in-process default (a restart forgets: keep keys in your database for real use,
    at least as long as the `idempotency_window_s` you configure in countersign)."""

    _keys: dict[str, Stored] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, key: str, fingerprint: str) -> Stored | None:
        with self._lock:
            found = self._keys.get(key)
            if found is None:
                self._keys[key] = Stored(fingerprint, None)
            return found

    def finish(self, key: str, status: int, body: bytes) -> None:
        with self._lock:
            self._keys[key] = Stored(self._keys[key].fingerprint, (status, body))

    def get(self, key: str) -> Stored | None:
        with self._lock:
            return self._keys.get(key)


@dataclass(frozen=True)
class Verdict:
    """`answer` set: send it and do nothing else (refused, or this call's stored answer).
    Else run `call` once and `finish(key, ...)` with what you answer."""

    answer: Answer | None
    call: dict[str, Any] | None = None
    key: str | None = None


def fingerprint(call: Mapping[str, Any]) -> str:
    same = {name: call.get(name) for name in CALL_FIELDS}
    text = json.dumps(same, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def receive(
    secret: str,
    headers: object,
    body: bytes,
    seen: SeenKeys,
    *,
    now: float | None = None,
    tolerance_s: int = TOLERANCE_S,
) -> Verdict:
    why = signed_by(secret, headers, body, now=now, tolerance_s=tolerance_s)
    if why is not None:
        return Verdict(_json_answer(401, error="not a verified countersign call", reason=why))
    try:
        call = json.loads(body)
    except ValueError:
        call = None
    key = _header(headers, IDEMPOTENCY_HEADER)
    if not isinstance(call, dict) or key is None or not _KEY.fullmatch(key):
        return Verdict(_json_answer(400, error="a call needs a JSON body and an Idempotency-Key"))
    if call.get("client_id") != key:
        return Verdict(_json_answer(400, error="the Idempotency-Key is not the signed client_id"))
    stored = seen.begin(key, fingerprint(call))
    if stored is None:
        return Verdict(None, call, key)
    if stored.fingerprint == FENCED:  # countersign was told it never arrived: it never runs
        return Verdict(
            _json_answer(
                409,
                error=f"Idempotency-Key {key} was declared never received (its status was asked "
                "with fence=1); not run",
            )
        )
    if stored.fingerprint != fingerprint(call):
        return Verdict(
            _json_answer(422, error=f"Idempotency-Key {key} was used for a different call")
        )
    if stored.answer is None:  # the first one is still running: ask again later
        return Verdict(_json_answer(503, error="this call is being run; ask again"))
    return Verdict(stored.answer)


def status(
    secret: str,
    headers: object,
    key: str,
    seen: SeenKeys,
    *,
    fence: bool = False,
    now: float | None = None,
    tolerance_s: int = TOLERANCE_S,
) -> Answer:
    """The status endpoint's answer for `key` (the query's idempotency_key): completed or
    refused with the stored answer, running, or unknown (never received). `fence` (the query's
    fence=1): a key never seen is fenced first, so that "unknown" stays true for good."""
    signed = status_signed(key, fence=fence)
    why = signed_by(secret, headers, signed, now=now, tolerance_s=tolerance_s)
    if why is not None:
        return _json_answer(401, error="not a verified countersign request", reason=why)
    if not _KEY.fullmatch(key):
        return _json_answer(400, error="a status request needs an idempotency_key")
    if _header(headers, IDEMPOTENCY_HEADER) not in (None, key):
        return _json_answer(400, error="the Idempotency-Key header is not the key asked about")
    # begin is atomic: a POST arriving at the same moment either ran first or is refused
    stored = seen.begin(key, FENCED) if fence else seen.get(key)
    if stored is None:
        if fence:
            return _json_answer(200, status="unknown", fenced=True)
        return _json_answer(200, status="unknown")
    if stored.fingerprint == FENCED:
        return _json_answer(200, status="unknown", fenced=True)
    if stored.answer is None:
        return _json_answer(200, status="running")
    code, body = stored.answer
    try:
        answer: Any = json.loads(body)
    except ValueError:
        answer = body.decode("utf-8", errors="replace")
    if 200 <= code < 300:
        return _json_answer(200, status=COMPLETED, answer=answer, http_status=code)
    if not 400 <= code < 500:  # finish a call only with what it came to (2xx or 4xx)
        return _json_answer(200, status="unknown")
    message = answer.get("message") if isinstance(answer, dict) else answer
    return _json_answer(200, status=REFUSED, message=message, answer=answer, http_status=code)
