"""Webhook routes against Lark's side as the sandbox implements it (WebhookPusher, sealed_body,
signed_headers). The only double is the IngressPort (FakePort); the terms of its ack are the
consumer's real ones (bot/ingress/ack.py `AckTerms`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
import time

import aiohttp
import pytest

from bot.ingress.ack import AckTerms
from larksandbox import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    App,
    WebhookPusher,
    sealed_body,
    signed_headers,
)
from tests.support.fake_ack import FakeAck
from tests.support.lark_events import card_action, message_event
from tests.support.webhook_routes import ANSWER, FakePort, Serve, no_secrets, post

# -- accepted ----------------------------------------------------------------------------------


async def test_a_sealed_signed_callback_is_answered_by_on_callback(
    serve: Serve, pusher: WebhookPusher, app: App, port: FakePort
) -> None:
    base = await serve()
    envelope = card_action(app, {"action": "confirm"})
    reply = await pusher.post(f"{base}/lark/card", app, envelope)
    assert reply.status == 200 and reply.json() == ANSWER
    [(received, transport, thread)] = port.clicks
    assert received == envelope and transport == "webhook"
    assert thread is threading.main_thread()


async def test_an_event_is_handed_to_on_event(
    serve: Serve, pusher: WebhookPusher, app: App, port: FakePort
) -> None:
    base = await serve()
    envelope = message_event(app, "@_user_1 help")
    reply = await pusher.post(f"{base}/lark/events", app, envelope)
    assert reply.status == 200 and reply.json() == {"msg": "success"}
    assert port.events == [(envelope, "webhook")] and not port.clicks


async def test_dispatch_is_by_event_type_so_one_url_serves_both(
    serve: Serve, pusher: WebhookPusher, app: App, port: FakePort
) -> None:
    base = await serve()
    reply = await pusher.post(f"{base}/lark/events", app, card_action(app, {"action": "reject"}))
    assert reply.status == 200 and reply.json() == ANSWER and len(port.clicks) == 1


async def test_url_verification_from_the_sandbox(
    serve: Serve, pusher: WebhookPusher, app: App, port: FakePort
) -> None:
    base = await serve()
    assert await pusher.verify_url(f"{base}/lark/events", app)
    assert await pusher.verify_url(f"{base}/lark/card", app)
    assert not port.called


async def test_an_unsigned_url_verification_is_answered_as_lark_sends_it(
    serve: Serve, http: aiohttp.ClientSession, app: App, port: FakePort
) -> None:
    base = await serve()
    challenge = {"challenge": "c-123", "token": app.verification_token, "type": "url_verification"}
    headers = {"Content-Type": "application/json"}
    status, text = await post(http, f"{base}/lark/card", sealed_body(app, challenge), headers)
    assert (status, json.loads(text)) == (200, {"challenge": "c-123"})

    wrong = dict(challenge, token="not-the-token")
    status, text = await post(http, f"{base}/lark/card", sealed_body(app, wrong), headers)
    assert status == 401 and no_secrets(app, text)
    # only the handshake may come unsigned: a sealed callback without headers is refused
    callback = sealed_body(app, card_action(app, {"action": "confirm"}))
    status, text = await post(http, f"{base}/lark/card", callback, headers)
    assert status == 401 and not port.called


async def test_the_timestamp_window_is_inclusive_of_small_skew(
    serve: Serve, pusher: WebhookPusher, app: App, port: FakePort
) -> None:
    base = await serve(window_s=300, clock=lambda: time.time() - 290)
    reply = await pusher.post(f"{base}/lark/card", app, card_action(app, {"action": "confirm"}))
    assert reply.status == 200 and len(port.clicks) == 1


# -- refused -----------------------------------------------------------------------------------


async def test_a_tampered_body_is_refused(
    serve: Serve, http: aiohttp.ClientSession, app: App, port: FakePort
) -> None:
    base = await serve()
    body = sealed_body(app, card_action(app, {"action": "confirm"}))
    headers = signed_headers(app, body)
    other = sealed_body(app, card_action(app, {"action": "reject"}))
    status, text = await post(http, f"{base}/lark/card", other, headers)
    assert status == 401 and not port.called
    assert json.loads(text)["error"]["code"] == "unauthorized" and no_secrets(app, text)


async def test_a_wrong_signature_is_refused(
    serve: Serve, http: aiohttp.ClientSession, app: App, port: FakePort
) -> None:
    base = await serve()
    body = sealed_body(app, card_action(app, {"action": "confirm"}))
    for signature in ("0" * 64, "", "é" * 64):
        headers = signed_headers(app, body)
        headers[SIGNATURE_HEADER] = signature
        status, text = await post(http, f"{base}/lark/card", body, headers)
        assert status == 401 and no_secrets(app, text)
    # signed with another encrypt key
    forged = dataclasses.replace(app, encrypt_key="someone-elses-key")
    status, _ = await post(http, f"{base}/lark/card", body, signed_headers(forged, body))
    assert status == 401 and not port.called


@pytest.mark.parametrize("skew_s", [301, -301, 86400])
async def test_stale_and_future_timestamps_are_refused(
    serve: Serve, pusher: WebhookPusher, app: App, port: FakePort, skew_s: int
) -> None:
    # our clock ahead of Lark's = a stale request; behind = a request from the future
    base = await serve(window_s=300, clock=lambda: time.time() + skew_s)
    reply = await pusher.post(f"{base}/lark/card", app, card_action(app, {"action": "confirm"}))
    assert reply.status == 401 and not port.called
    assert "window" in reply.json()["error"]["message"]


async def test_a_non_numeric_timestamp_is_refused(
    serve: Serve, http: aiohttp.ClientSession, app: App, port: FakePort
) -> None:
    base = await serve()
    body = sealed_body(app, card_action(app, {"action": "confirm"}))
    headers = signed_headers(app, body)
    headers[TIMESTAMP_HEADER] = "soon"
    status, _ = await post(http, f"{base}/lark/card", body, headers)
    assert status == 401 and not port.called


async def test_a_wrong_verification_token_is_refused(
    serve: Serve, pusher: WebhookPusher, app: App, port: FakePort
) -> None:
    base = await serve()
    impostor = dataclasses.replace(app, verification_token="vt-not-ours")
    reply = await pusher.post(f"{base}/lark/card", impostor, card_action(impostor, {"a": 1}))
    assert reply.status == 401 and not port.called
    reply = await pusher.post(f"{base}/lark/events", impostor, message_event(impostor, "hi"))
    assert reply.status == 401 and not port.called
    assert not await pusher.verify_url(f"{base}/lark/events", impostor)


@pytest.mark.parametrize("missing", ["encrypt_key", "verification_token"])
async def test_missing_keys_fail_closed(
    serve: Serve,
    pusher: WebhookPusher,
    app: App,
    port: FakePort,
    missing: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    base = await serve(**{missing: ""})
    with caplog.at_level(logging.ERROR, logger="countersign.lark.webhook"):
        for path in ("/lark/card", "/lark/events", "/lark/card"):
            reply = await pusher.post(f"{base}{path}", app, card_action(app, {"a": 1}))
            assert reply.status == 503 and reply.json()["error"]["code"] == "not_configured"
            assert no_secrets(app, reply.body.decode())
        assert not await pusher.verify_url(f"{base}/lark/events", app)
    assert not port.called
    assert len([r for r in caplog.records if "not configured" in r.getMessage()]) == 1


async def test_a_plain_body_is_refused_even_when_signed(
    serve: Serve, http: aiohttp.ClientSession, app: App, port: FakePort
) -> None:
    base = await serve()
    body = json.dumps(card_action(app, {"action": "confirm"})).encode()
    status, text = await post(http, f"{base}/lark/card", body, signed_headers(app, body))
    assert status == 400 and json.loads(text)["error"]["code"] == "not_encrypted"
    assert not port.called and no_secrets(app, text)


async def test_an_oversized_body_is_refused(
    serve: Serve, http: aiohttp.ClientSession, app: App, port: FakePort
) -> None:
    base = await serve(max_body_bytes=4096)
    body = sealed_body(app, card_action(app, {"note": "x" * 8192}))
    status, _ = await post(http, f"{base}/lark/card", body, signed_headers(app, body))
    assert status == 413 and not port.called


# -- the callback safety net -------------------------------------------------------------------


async def test_a_failing_consumer_gets_the_processing_toast(
    serve: Serve, pusher: WebhookPusher, app: App, port: FakePort
) -> None:
    base = await serve()
    port.fail = True
    reply = await pusher.post(f"{base}/lark/card", app, card_action(app, {"action": "confirm"}))
    # the consumer's own "processing" toast, as its language has it (en here)
    assert reply.status == 200 and reply.json() == port.callbacks.processing()
    assert reply.json()["toast"]["content"] == "Received, processing"


async def test_a_late_consumer_gets_the_processing_toast_and_finishes(
    serve: Serve, pusher: WebhookPusher, app: App, port: FakePort
) -> None:
    base = await serve()
    port.callbacks = FakeAck(AckTerms(answer_budget_s=0.1, lang="zh"))  # the net at 0.8 s
    port.hold = asyncio.Event()  # the consumer answers only after the ack left
    reply = await pusher.post(f"{base}/lark/card", app, card_action(app, {"action": "confirm"}))
    assert reply.status == 200 and reply.json() == port.callbacks.processing()
    assert reply.json()["toast"]["content"] == "已收到，处理中"
    assert not port.finished.is_set()  # answered for while the consumer still held the click
    [(envelope, _transport, _thread)] = port.clicks
    assert port.callbacks.answered_for_ids == [envelope["header"]["event_id"]]  # and told so
    port.hold.set()
    await asyncio.wait_for(port.finished.wait(), 5)  # not cancelled by the transport
