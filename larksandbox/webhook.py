"""The sandbox's side of Lark's HTTP push: Lark POSTs events and card callbacks to the developer.

What goes over the wire, as in docs/lark-reference.md §3.1:

* body: the schema-2.0 envelope as JSON or, when the app has an Encrypt Key,
  ``{"encrypt": base64(iv + AES-256-CBC(PKCS7(json)))}`` with key ``sha256(encrypt_key)``;
* headers ``X-Lark-Request-Timestamp`` (seconds), ``X-Lark-Request-Nonce`` (random) and
  ``X-Lark-Signature = hex(sha256(timestamp + nonce + encrypt_key + body))``;
* Lark's limits: TCP connect 2 s, whole exchange 3 s, no redirects followed; the URL handshake
  (``url_verification``) must be answered within 1 s.

The unmodified SDK (``lark.EventDispatcherHandler.do``) accepts what this module sends; the tests
in tests/larksandbox/test_webhook.py check that against a real aiohttp receiver.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
from Crypto.Cipher import AES

from larksandbox.entities import App

TIMESTAMP_HEADER = "X-Lark-Request-Timestamp"
NONCE_HEADER = "X-Lark-Request-Nonce"
SIGNATURE_HEADER = "X-Lark-Signature"

CONNECT_TIMEOUT_S = 2.0  # Lark: TCP connect
TOTAL_TIMEOUT_S = 3.0  # Lark: answer a callback within 3 s
URL_VERIFY_TIMEOUT_S = 1.0  # Lark: answer the url_verification challenge within 1 s

_BLOCK = AES.block_size  # 16


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def encrypt(encrypt_key: str, plaintext: bytes) -> str:
    """base64(iv + AES-256-CBC(PKCS7(plaintext))) with key sha256(encrypt_key), random IV."""
    key = hashlib.sha256(encrypt_key.encode("utf-8")).digest()
    pad = _BLOCK - len(plaintext) % _BLOCK  # 1..16: a full block when already aligned
    padded = plaintext + bytes([pad]) * pad
    iv = secrets.token_bytes(_BLOCK)
    ciphertext = AES.new(key, AES.MODE_CBC, iv).encrypt(padded)
    return base64.b64encode(iv + ciphertext).decode("ascii")


def signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    """hex(sha256(timestamp + nonce + encrypt_key + body)), over the exact body bytes sent."""
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode("utf-8") + body).hexdigest()


def sealed_body(app: App, envelope: dict[str, Any]) -> bytes:
    """The exact bytes POSTed: ``{"encrypt": ...}`` when the app has an Encrypt Key, else JSON."""
    plaintext = _dumps(envelope)
    if not app.encrypt_key:
        return plaintext
    return _dumps({"encrypt": encrypt(app.encrypt_key, plaintext)})


def signed_headers(app: App, body: bytes) -> dict[str, str]:
    """Content-Type plus the three X-Lark-* headers for `body`, fresh timestamp and nonce.

    Lark only documents the signature for apps with an Encrypt Key (the SDK skips the check
    without one); the headers are sent regardless, signed with the (empty) key.
    """
    timestamp = str(int(time.time()))
    nonce = secrets.token_hex(8)
    return {
        "Content-Type": "application/json; charset=utf-8",
        TIMESTAMP_HEADER: timestamp,
        NONCE_HEADER: nonce,
        SIGNATURE_HEADER: signature(timestamp, nonce, app.encrypt_key, body),
    }


@dataclass(frozen=True)
class WebhookReply:
    """What the developer's server answered.

    ``failure`` is set (and ``status`` is None) when no HTTP answer arrived: ``"timeout"`` when
    the exchange ran past its limit after connecting (Lark client code 200341), ``"connect"``
    when the TCP connection could not be made or broke before an answer (200342 / 200343).
    ``detail`` describes a failure for logs; it is empty on an HTTP answer.
    """

    status: int | None
    body: bytes
    latency_ms: float
    failure: Literal["timeout", "connect"] | None
    detail: str = ""

    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not JSON (Lark: 200672)."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


class WebhookPusher:
    """POSTs sealed, signed envelopes to a developer URL over one reused ClientSession."""

    def __init__(
        self,
        *,
        timeout_s: float = TOTAL_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        url_verify_timeout_s: float = URL_VERIFY_TIMEOUT_S,
    ) -> None:
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._url_verify_timeout_s = url_verify_timeout_s
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # force_close: a fresh TCP connection per push, so a keep-alive connection the
            # receiver has already dropped can never masquerade as a "connect" failure.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(force_close=True),
                auto_decompress=True,
            )
        return self._session

    async def post(
        self, url: str, app: App, envelope: dict[str, Any], *, timeout_s: float | None = None
    ) -> WebhookReply:
        """Seal, sign and POST `envelope`; never raises for HTTP or network failures."""
        body = sealed_body(app, envelope)
        return await self._send(url, body, signed_headers(app, body), timeout_s)

    async def _send(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        timeout_s: float | None,
        *,
        connect_within_total: bool = False,
    ) -> WebhookReply:
        total = self._timeout_s if timeout_s is None else timeout_s
        connect = total if connect_within_total else min(self._connect_timeout_s, total)
        timeout = aiohttp.ClientTimeout(total=total, sock_connect=connect)
        started = time.perf_counter()

        def elapsed() -> float:
            return (time.perf_counter() - started) * 1000.0

        try:
            async with self._client().post(
                url, data=body, headers=headers, timeout=timeout, allow_redirects=False
            ) as resp:
                content = await resp.read()
                return WebhookReply(resp.status, content, elapsed(), None)
        except aiohttp.ConnectionTimeoutError as exc:  # before TimeoutError: it is one too
            return WebhookReply(None, b"", elapsed(), "connect", f"connect timeout: {exc}")
        except TimeoutError as exc:
            return WebhookReply(None, b"", elapsed(), "timeout", f"timeout after {total}s {exc}")
        except (aiohttp.ClientError, OSError) as exc:
            # connection refused, DNS, reset or disconnected before an answer, bad URL
            return WebhookReply(None, b"", elapsed(), "connect", f"{type(exc).__name__}: {exc}")

    async def verify_url(self, url: str, app: App, *, timeout_s: float | None = None) -> bool:
        """Lark's handshake when a request URL is saved: echo the challenge (within 1 s)."""
        return await self.url_verification_failure(url, app, timeout_s=timeout_s) is None

    async def url_verification_failure(
        self, url: str, app: App, *, timeout_s: float | None = None
    ) -> str | None:
        """Why `url` failed the challenge handshake, or None when it echoed the challenge."""
        challenge = secrets.token_urlsafe(16)
        envelope = {
            "challenge": challenge,
            "token": app.verification_token,
            "type": "url_verification",
        }
        body = sealed_body(app, envelope)
        # Lark's limit covers the whole echo, connecting included
        reply = await self._send(
            url,
            body,
            signed_headers(app, body),
            self._url_verify_timeout_s if timeout_s is None else timeout_s,
            connect_within_total=True,
        )
        if reply.failure is not None:
            return reply.detail or reply.failure
        if reply.status != 200:
            return f"it answered HTTP {reply.status}"
        answer = reply.json()
        if not isinstance(answer, dict) or answer.get("challenge") != challenge:
            return "it answered without the challenge"
        return None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
