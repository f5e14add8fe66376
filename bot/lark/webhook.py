"""Lark's HTTP push: aiohttp routes `/lark/events` and `/lark/card` (docs/lark-reference.md §3).

Our own verification, not the SDK's (its compare is not constant-time and has no timestamp
window), in this order:

1. Fail closed: without an encrypt key AND a verification token every request gets 503.
2. Body capped at `max_body_bytes` (413), and nesting at 64 levels (400), counted without
   parsing, before any signature or decryption work; the decrypted envelope is held to the
   same bound and must be valid Unicode (no lone surrogates), else 400.
3. Signature: `X-Lark-Signature == hex(sha256(timestamp + nonce + encrypt_key + raw body))`,
   compared with `hmac.compare_digest`; `X-Lark-Request-Timestamp` within +-`window_s` of
   `clock()` (stale and future both refused) -> else 401.
4. The body must be `{"encrypt": ...}`; decrypted with lark-oapi's `AESCipher` -> else 400
   (we always configure an encrypt key, so a plaintext body is never Lark's).
5. `header.token` (schema 2.0) or `token` (1.0, url_verification) must equal the verification
   token (`hmac.compare_digest`) -> else 401.
6. `url_verification` -> `{"challenge": ...}`; `card.action.trigger` ->
   `await port.on_callback(envelope, "webhook")` -> 200 with the answer; anything else ->
   `port.on_event(envelope, "webhook")` -> 200 `{"msg": "success"}`.

url_verification: Lark sends it when the request URL is saved, and (field reports with tcpdump,
e.g. openclaw/openclaw#58905, node-sdk#67) WITHOUT the X-Lark-* headers even when an encrypt
key is set; the SDK answers it before its signature check. So a request with none of the three
headers is accepted only if it decrypts with our key, is a url_verification and carries our
token; every failure on that path is one uniform 401, so it cannot serve as a padding oracle.
Answering a challenge has no side effect. When the headers are present they must verify.
The sandbox (larksandbox/webhook.py `verify_url`) signs its challenge; both ways pass.

Both routes accept both kinds (dispatch is by event type), so one URL configured for events
and callbacks still works. Event-id replay is not cached here: the consumers dedupe in the
store. Callbacks get the same safety net as over ws (ingress_port.bounded_answer: the
consumer's own deadline and "processing" toast). Error
bodies never echo header values, tokens or keys.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web
from lark_oapi.core.utils.decryptor import AESCipher  # type: ignore[import-untyped]

from bot.api.errors import error_response
from bot.lark.ingress_port import (
    IngressPort,
    bounded_answer,
    event_id,
    is_callback,
)
from kernel.canonical import MAX_ENVELOPE_DEPTH, MAX_JSON_DEPTH, too_deep

log = logging.getLogger("countersign.lark.webhook")

EVENTS_PATH = "/lark/events"
CARD_PATH = "/lark/card"
MAX_BODY_BYTES = 1024 * 1024

TIMESTAMP_HEADER = "X-Lark-Request-Timestamp"
NONCE_HEADER = "X-Lark-Request-Nonce"
SIGNATURE_HEADER = "X-Lark-Signature"
_SIGNATURE_HEADERS = (TIMESTAMP_HEADER, NONCE_HEADER, SIGNATURE_HEADER)


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _unauthorized(message: str) -> _Refused:
    return _Refused(401, "unauthorized", message)


def expected_signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    # surrogateescape: header bytes that are not UTF-8 give a mismatch, never an exception
    signed = (timestamp + nonce + encrypt_key).encode("utf-8", "surrogateescape")
    return hashlib.sha256(signed + body).hexdigest()


def _refuse_deep(text: bytes, limit: int = MAX_JSON_DEPTH) -> None:
    if too_deep(text, limit):
        raise _Refused(400, "too_deep", f"the JSON nests deeper than {limit} levels")


def _bounded_json(text: bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """json.loads, refusing nesting past `limit` before parsing; ValueError if not JSON (or
    not UTF-8)."""
    _refuse_deep(text, limit)
    return json.loads(text)


def _ascii(value: str) -> bytes:
    # compare_digest on str needs ASCII; header values may be anything
    return value.encode("utf-8", "surrogateescape")


class _Verifier:
    def __init__(
        self, encrypt_key: str, verification_token: str, window_s: int, clock: Callable[[], float]
    ) -> None:
        self.encrypt_key = encrypt_key
        self.token = _ascii(verification_token)
        self.window_s = window_s
        self.clock = clock
        self.cipher = AESCipher(encrypt_key) if encrypt_key else None

    def check_signature(self, headers: Any, body: bytes) -> None:
        timestamp = headers.get(TIMESTAMP_HEADER)
        nonce = headers.get(NONCE_HEADER)
        given = headers.get(SIGNATURE_HEADER)
        if not timestamp or not nonce or not given:
            raise _unauthorized("missing X-Lark-Request-Timestamp, -Nonce or X-Lark-Signature")
        expected = expected_signature(timestamp, nonce, self.encrypt_key, body)
        if not hmac.compare_digest(_ascii(expected), _ascii(given)):
            raise _unauthorized("signature does not match")
        try:
            sent_at = int(timestamp)
        except ValueError:
            raise _unauthorized("timestamp is not a number") from None
        if abs(self.clock() - sent_at) > self.window_s:
            raise _unauthorized(f"timestamp is outside the {self.window_s}s window")

    def open(self, body: bytes) -> dict[str, Any]:
        """The decrypted envelope; raises _Refused(400) for anything but a sealed JSON object."""
        try:
            outer = _bounded_json(body)
        except ValueError:
            raise _Refused(400, "bad_body", "the body is not JSON") from None
        if not isinstance(outer, dict) or not isinstance(outer.get("encrypt"), str):
            raise _Refused(400, "not_encrypted", 'the body must be {"encrypt": ...}')
        assert self.cipher is not None
        try:
            plaintext = self.cipher.decrypt(base64.b64decode(outer["encrypt"], validate=True))
            # authenticated by the signature: parsed deeper, so a deep click reaches the
            # consumer and is refused and recorded as malformed
            envelope = _bounded_json(plaintext, MAX_ENVELOPE_DEPTH)
        except (ValueError, binascii.Error):  # bad base64, padding, UTF-8 or JSON
            raise _Refused(400, "bad_ciphertext", "the body does not decrypt") from None
        if not isinstance(envelope, dict):
            raise _Refused(400, "bad_body", "the decrypted body is not a JSON object")
        if not isinstance(envelope.get("header", {}), dict):  # consumers read header.<field>
            raise _Refused(400, "bad_body", "the envelope header is not a JSON object")
        try:  # json.loads lets "\ud800" through; nothing downstream could store or encode it
            json.dumps(envelope, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise _Refused(400, "bad_body", "the decrypted body is not valid Unicode") from None
        return envelope

    def check_token(self, envelope: dict[str, Any]) -> None:
        header = envelope.get("header")
        token = header.get("token") if isinstance(header, dict) else envelope.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(_ascii(token), self.token):
            raise _unauthorized("verification token does not match")


def _is_url_verification(envelope: dict[str, Any]) -> bool:
    return envelope.get("type") == "url_verification"


def add_webhook_routes(
    app: web.Application,
    *,
    port: IngressPort,
    encrypt_key: str,
    verification_token: str,
    window_s: int = 300,
    clock: Callable[[], float] = time.time,
    max_body_bytes: int = MAX_BODY_BYTES,
    events_path: str = EVENTS_PATH,
    card_path: str = CARD_PATH,
) -> None:
    """Add POST `events_path` and `card_path`. `clock` returns Unix seconds (tests shift it)."""
    verifier = _Verifier(encrypt_key, verification_token, window_s, clock)
    configured = bool(encrypt_key) and bool(verification_token)
    warned = False
    inflight: set[asyncio.Future[dict[str, Any]]] = set()  # callbacks outliving their answer

    async def read_body(request: web.Request) -> bytes:
        if request.content_length is not None and request.content_length > max_body_bytes:
            raise _Refused(413, "body_too_large", f"the body exceeds {max_body_bytes} bytes")
        body = bytearray()
        while chunk := await request.content.read(64 * 1024):
            body += chunk
            if len(body) > max_body_bytes:
                raise _Refused(413, "body_too_large", f"the body exceeds {max_body_bytes} bytes")
        return bytes(body)

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal warned
        if not configured:
            if not warned:
                log.error("lark webhook refused: encrypt key or verification token not configured")
                warned = True
            return error_response(
                503, "not_configured", "the Lark webhook is not configured on this server"
            )
        try:
            body = await read_body(request)
            # before any authentication work, signed or not: the outer body is {"encrypt": ...}
            _refuse_deep(body)
            if not any(name in request.headers for name in _SIGNATURE_HEADERS):
                return _unsigned_challenge(body)
            verifier.check_signature(request.headers, body)
            envelope = verifier.open(body)
            verifier.check_token(envelope)
        except _Refused as refused:
            log.warning("lark webhook %s refused: %s", request.path, refused.message)
            return error_response(refused.status, refused.code, refused.message)
        if _is_url_verification(envelope):
            return web.json_response({"challenge": envelope.get("challenge")})
        eid = event_id(envelope)
        if is_callback(envelope):
            pending = asyncio.ensure_future(port.on_callback(envelope, "webhook"))
            inflight.add(pending)
            pending.add_done_callback(inflight.discard)
            answer = await bounded_answer(pending, eid, "webhook", port.callbacks)
            return web.Response(body=answer, content_type="application/json")
        try:
            port.on_event(envelope, "webhook")
        except Exception:
            log.exception("on_event failed for %s", eid)
            # Lark re-pushes on a non-200 (15 s, 5 min, 1 h, 6 h)
            return error_response(500, "internal", "the event could not be queued")
        return web.json_response({"msg": "success"})

    def _unsigned_challenge(body: bytes) -> web.Response:
        # Only Lark's URL handshake comes unsigned; one answer for every failure here.
        try:
            envelope = verifier.open(body)
            verifier.check_token(envelope)
        except _Refused:
            envelope = {}
        if not _is_url_verification(envelope):
            log.warning("lark webhook refused: unsigned request that is not a url_verification")
            return error_response(401, "unauthorized", "missing signature headers")
        return web.json_response({"challenge": envelope.get("challenge")})

    app.router.add_post(events_path, handle)
    app.router.add_post(card_path, handle)
