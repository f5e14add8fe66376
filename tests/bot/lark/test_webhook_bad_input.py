"""The webhook routes refuse malformed bodies with a 4xx and one log line, never a 5xx or a
traceback (issue 10 item 7): nesting is bounded before any authentication work, and the
decrypted envelope is held to the same bounds. The IngressPort double records that nothing
reached a consumer."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from larksandbox import App, encrypt, sealed_body, signed_headers
from tests.support.lark_events import card_action
from tests.support.logs import logged_once_without_traceback
from tests.support.webhook_routes import FakePort, Serve, no_secrets, post


def deep(levels: int) -> bytes:
    return b'{"encrypt":' * levels + b'"x"' + b"}" * levels


def sealed_plaintext(app: App, plaintext: bytes) -> bytes:
    return json.dumps({"encrypt": encrypt(app.encrypt_key, plaintext)}).encode()


@pytest.mark.parametrize("signed", ["unsigned", "signed-with-junk", "signed"])
@pytest.mark.parametrize(
    "body",
    [deep(65), b"[" * 200_000 + b"]" * 200_000, b"\x80\xff" + b"[" * 65 + b"]" * 65],
    ids=["65", "200k", "not-utf8"],
)
async def test_a_deep_body_is_a_400_before_any_signature_work(
    serve: Serve,
    http: aiohttp.ClientSession,
    app: App,
    port: FakePort,
    logs: pytest.LogCaptureFixture,
    signed: str,
    body: bytes,
) -> None:
    base = await serve()
    headers = {"Content-Type": "application/json"}
    if signed == "signed":
        headers = signed_headers(app, body)
    elif signed == "signed-with-junk":
        headers = {**signed_headers(app, body), "X-Lark-Signature": "junk"}
    status, text = await post(http, f"{base}/lark/card", body, headers)
    assert status == 400, text
    error = json.loads(text)["error"]
    assert error["code"] == "too_deep" and "64" in error["message"]
    assert no_secrets(app, text) and not port.called
    assert logged_once_without_traceback(logs)


@pytest.mark.parametrize(
    "plaintext",
    [
        # deeper than MAX_ENVELOPE_DEPTH (512): not parsed at all; a sealed click up to that
        # depth reaches the consumer, which records it as malformed (test_click_records.py)
        pytest.param(b'{"schema":"2.0","event":' * 513 + b"1" + b"}" * 513, id="513-deep"),
        pytest.param(b"[" * 5000 + b"]" * 5000, id="5000-deep"),
        pytest.param(b'{"schema":"2.0","header":{"event_id":"\\ud800"}}', id="lone-surrogate"),
    ],
)
async def test_a_sealed_envelope_that_is_too_deep_or_not_unicode_is_a_400(
    serve: Serve,
    http: aiohttp.ClientSession,
    app: App,
    port: FakePort,
    logs: pytest.LogCaptureFixture,
    plaintext: bytes,
) -> None:
    # Correctly signed and sealed: only a holder of the keys could send it, and even then the
    # consumers never see what could not be parsed safely or stored.
    base = await serve()
    body = sealed_plaintext(app, plaintext)
    status, text = await post(http, f"{base}/lark/card", body, signed_headers(app, body))
    assert status == 400, text
    assert json.loads(text)["error"]["code"] in {"too_deep", "bad_body"}
    assert no_secrets(app, text) and not port.called
    assert logged_once_without_traceback(logs)


async def test_non_utf8_signature_headers_are_a_401_not_a_500(
    serve: Serve, app: App, port: FakePort, logs: pytest.LogCaptureFixture
) -> None:
    base = await serve()
    body = sealed_body(app, card_action(app, {"action": "confirm"}))
    headers = signed_headers(app, body)
    host, port_number = base.removeprefix("http://").split(":")
    head = (
        b"POST /lark/card HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"X-Lark-Request-Timestamp: {headers['X-Lark-Request-Timestamp']}\r\n".encode()
        + b"X-Lark-Request-Nonce: \xff\xfe\r\n"
        + f"X-Lark-Signature: {headers['X-Lark-Signature']}\r\n".encode()
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
    )
    reader, writer = await asyncio.open_connection(host, int(port_number))
    writer.write(head + body)
    await writer.drain()
    response = await reader.read()
    writer.close()
    assert response.startswith(b"HTTP/1.1 401"), response[:200]
    assert not port.called and logged_once_without_traceback(logs)


@pytest.mark.parametrize("header", [[1, 2], "text", 7])
async def test_an_envelope_whose_header_is_not_an_object_is_a_400(
    serve: Serve,
    http: aiohttp.ClientSession,
    app: App,
    port: FakePort,
    logs: pytest.LogCaptureFixture,
    header: object,
) -> None:
    # The schema 1.0 token sits at the top, so such an envelope passes the token check; a
    # consumer reading `header.event_type` would then fail on it.
    envelope = {"schema": "2.0", "token": app.verification_token, "header": header, "event": {}}
    body = sealed_plaintext(app, json.dumps(envelope).encode())
    base = await serve()
    status, text = await post(http, f"{base}/lark/events", body, signed_headers(app, body))
    assert status == 400 and json.loads(text)["error"]["code"] == "bad_body"
    assert not port.called and logged_once_without_traceback(logs)
