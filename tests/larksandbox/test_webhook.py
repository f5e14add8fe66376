"""The sandbox's webhook push against a REAL receiver running the unmodified lark-oapi SDK.

Each receiver is a small aiohttp app whose route hands the request to
`lark.EventDispatcherHandler.do(RawRequest)` exactly like the adapter in docs/lark-reference.md §3.2.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import lark_oapi as lark  # type: ignore[import-untyped]
import pytest
from aiohttp import web
from lark_oapi.core.utils.decryptor import AESCipher  # type: ignore[import-untyped]
from lark_oapi.event.callback.model.p2_card_action_trigger import (  # type: ignore[import-untyped]
    P2CardActionTriggerResponse,
)

from larksandbox.entities import App
from larksandbox.webhook import (
    NONCE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookPusher,
    encrypt,
    sealed_body,
    signature,
    signed_headers,
)
from tests.support.lark_events import card_action, message_event
from tests.support.processes import free_port

Route = Callable[[web.Request], Awaitable[web.StreamResponse]]
Serve = Callable[[Route], Awaitable[str]]

CARD: dict[str, Any] = {
    "schema": "2.0",
    "header": {"title": {"tag": "plain_text", "content": "Approved"}},
    "body": {"elements": [{"tag": "markdown", "content": "**Alice** approved ✅"}]},
}
ANSWER: dict[str, Any] = {
    "toast": {"type": "success", "content": "已批准"},
    "card": {"type": "raw", "data": CARD},
}


# -- receivers -------------------------------------------------------------------------------


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Start aiohttp receivers on free ports; yields a function route -> URL."""
    runners: list[web.AppRunner] = []

    async def start(route: Route) -> str:
        application = web.Application()
        application.router.add_post("/hook", route)
        runner = web.AppRunner(application, shutdown_timeout=0.5, handler_cancellation=True)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/hook"

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
def app() -> App:
    return App(
        app_id="cli_webhook_test",
        app_secret="secret",
        tenant_key="tenant-1",
        encrypt_key=f"ek-{secrets.token_hex(8)}",
        verification_token=f"vt-{secrets.token_hex(8)}",
    )


@dataclass
class SdkReceiver:
    """What the unmodified SDK handler saw, and the aiohttp route that runs it."""

    encrypt_key: str
    verification_token: str
    cards: list[Any] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.handler: Any = (
            lark.EventDispatcherHandler.builder(self.encrypt_key, self.verification_token)
            .register_p2_card_action_trigger(self._on_card)
            .register_p2_im_message_receive_v1(self._on_message)
            .build()
        )

    def _on_card(self, data: Any) -> Any:
        self.cards.append(data)
        return P2CardActionTriggerResponse(ANSWER)

    def _on_message(self, data: Any) -> None:
        self.messages.append(data)

    @property
    def ran(self) -> bool:
        return bool(self.cards or self.messages)

    async def route(self, request: web.Request) -> web.Response:
        raw = lark.RawRequest()
        raw.uri = request.path
        raw.body = await request.read()
        raw.headers = request.headers  # CIMultiDictProxy: the SDK's exact-case .get() works
        self.bodies.append(raw.body)
        loop = asyncio.get_running_loop()
        resp = await loop.run_in_executor(None, self.handler.do, raw)  # SDK handlers are sync
        self.statuses.append(resp.status_code)
        return web.Response(status=resp.status_code, body=resp.content, headers=resp.headers)


def receiver_for(app: App, *, encrypt_key: str | None = None) -> SdkReceiver:
    key = app.encrypt_key if encrypt_key is None else encrypt_key
    return SdkReceiver(key, app.verification_token)


# -- envelopes -------------------------------------------------------------------------------


def only_encrypt(body: bytes) -> str:
    loaded = json.loads(body)
    assert set(loaded) == {"encrypt"}
    value = loaded["encrypt"]
    assert isinstance(value, str)
    return value


# -- 1, 2: encrypted + signed pushes pass the SDK ------------------------------------------


async def test_encrypted_signed_card_action_passes_sdk(
    serve: Serve, pusher: WebhookPusher, app: App
) -> None:
    receiver = receiver_for(app)
    url = await serve(receiver.route)
    value = {"op": "approve", "proposal": "p-1", "n": 3}

    reply = await pusher.post(url, app, card_action(app, value))

    assert reply.failure is None
    assert reply.status == 200, reply.body
    assert json.loads(reply.body) == ANSWER
    assert reply.latency_ms > 0
    (seen,) = receiver.cards
    assert seen.header.token == app.verification_token
    assert seen.header.event_type == "card.action.trigger"
    assert seen.header.app_id == app.app_id
    assert seen.event.operator.open_id == "ou_alice"
    assert seen.event.action.value == value
    assert seen.event.context.open_message_id == "om_card_1"
    assert seen.event.context.open_chat_id == "oc_ops"
    only_encrypt(receiver.bodies[0])  # it really went encrypted


async def test_encrypted_signed_message_event_passes_sdk(
    serve: Serve, pusher: WebhookPusher, app: App
) -> None:
    receiver = receiver_for(app)
    url = await serve(receiver.route)
    text = "@_user_1 approve p-1 — 审批 ✅"

    reply = await pusher.post(url, app, message_event(app, text))

    assert (reply.status, reply.failure) == (200, None), reply.body
    assert json.loads(reply.body) == {"msg": "success"}
    (seen,) = receiver.messages
    assert json.loads(seen.event.message.content) == {"text": text}
    assert seen.event.sender.sender_id.open_id == "ou_alice"
    assert seen.event.message.chat_id == "oc_ops"
    assert seen.event.message.mentions[0].key == "@_user_1"
    only_encrypt(receiver.bodies[0])


async def test_app_without_encrypt_key_pushes_plain_json(
    serve: Serve, pusher: WebhookPusher, app: App
) -> None:
    app.encrypt_key = ""
    receiver = receiver_for(app)
    url = await serve(receiver.route)
    envelope = card_action(app, {"op": "reject"})

    reply = await pusher.post(url, app, envelope)

    assert reply.status == 200, reply.body
    assert json.loads(receiver.bodies[0]) == envelope
    assert receiver.cards[0].event.action.value == {"op": "reject"}


async def test_headers_are_fresh_and_sign_the_exact_body(serve: Serve, app: App) -> None:
    seen: list[tuple[dict[str, str], bytes]] = []

    async def route(request: web.Request) -> web.Response:
        seen.append((dict(request.headers), await request.read()))
        return web.json_response({})

    url = await serve(route)
    pusher = WebhookPusher()
    try:
        for _ in range(2):
            assert (await pusher.post(url, app, message_event(app, "hi"))).status == 200
    finally:
        await pusher.close()

    nonces = set()
    for headers, body in seen:
        assert headers["Content-Type"].startswith("application/json")
        timestamp = headers[TIMESTAMP_HEADER]
        assert timestamp.isdigit() and abs(int(timestamp) - time.time()) < 5  # seconds
        nonces.add(headers[NONCE_HEADER])
        assert headers[SIGNATURE_HEADER] == signature(
            timestamp, headers[NONCE_HEADER], app.encrypt_key, body
        )
    assert len(nonces) == 2


# -- 3: url_verification ---------------------------------------------------------------------


async def test_verify_url_encrypted_handshake_with_sdk(
    serve: Serve, pusher: WebhookPusher, app: App
) -> None:
    receiver = receiver_for(app)
    url = await serve(receiver.route)

    assert await pusher.verify_url(url, app) is True

    encrypted = only_encrypt(receiver.bodies[0])
    sent = json.loads(AESCipher(app.encrypt_key).decrypt_str(encrypted))
    assert sent["type"] == "url_verification"
    assert sent["token"] == app.verification_token
    assert sent["challenge"]
    assert not receiver.ran


async def test_verify_url_false_on_wrong_challenge(
    serve: Serve, pusher: WebhookPusher, app: App
) -> None:
    async def wrong(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"challenge": "not-the-one"})

    assert await pusher.verify_url(await serve(wrong), app) is False


async def test_verify_url_false_when_receiver_has_other_token(
    serve: Serve, pusher: WebhookPusher, app: App
) -> None:
    receiver = SdkReceiver(app.encrypt_key, "some-other-token")
    url = await serve(receiver.route)

    assert await pusher.verify_url(url, app) is False
    assert receiver.statuses == [500]


async def test_verify_url_false_on_non_json_or_error(
    serve: Serve, pusher: WebhookPusher, app: App
) -> None:
    async def text(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def echo_500(request: web.Request) -> web.Response:
        sent = json.loads(
            AESCipher(app.encrypt_key).decrypt_str(only_encrypt(await request.read()))
        )
        return web.json_response({"challenge": sent["challenge"]}, status=500)

    assert await pusher.verify_url(await serve(text), app) is False
    assert await pusher.verify_url(await serve(echo_500), app) is False


async def test_verify_url_false_when_the_echo_takes_longer_than_a_second(
    serve: Serve, pusher: WebhookPusher, app: App
) -> None:
    async def slow_echo(request: web.Request) -> web.Response:
        sent = json.loads(
            AESCipher(app.encrypt_key).decrypt_str(only_encrypt(await request.read()))
        )
        await asyncio.sleep(1.3)  # the slowness under test, not synchronisation
        return web.json_response({"challenge": sent["challenge"]})

    url = await serve(slow_echo)
    assert await pusher.verify_url(url, app) is False
    lenient = WebhookPusher(url_verify_timeout_s=5.0)
    try:
        assert await lenient.verify_url(url, app) is True
    finally:
        await lenient.close()


# -- 4: tampering ----------------------------------------------------------------------------


async def _post_raw(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers) as resp,
    ):
        return resp.status, await resp.read()


async def test_flipped_byte_after_signing_is_rejected(serve: Serve, app: App) -> None:
    receiver = receiver_for(app)
    url = await serve(receiver.route)
    body = sealed_body(app, card_action(app, {"op": "approve"}))
    headers = signed_headers(app, body)

    # a plain byte flip inside the ciphertext (still valid base64)
    i = body.index(b'"encrypt":"') + len(b'"encrypt":"') + 40
    flipped = body[:i] + (b"B" if body[i : i + 1] != b"B" else b"C") + body[i + 1 :]
    assert flipped != body
    status, _ = await _post_raw(url, flipped, headers)
    assert status == 500
    assert not receiver.ran


async def test_tamper_that_still_decrypts_is_caught_by_the_signature(
    serve: Serve, app: App
) -> None:
    """Flip one IV bit so the plaintext still parses (schema "2.0" -> "2.1"): only the
    signature can tell, so this fails if the signature were not checked over the exact bytes."""
    receiver = receiver_for(app)
    url = await serve(receiver.route)
    body = sealed_body(app, card_action(app, {"op": "approve"}))
    headers = signed_headers(app, body)

    raw = bytearray(base64.b64decode(only_encrypt(body)))
    raw[13] ^= 0x01  # IV byte 13 xors plaintext byte 13: {"schema":"2.0" -> "2.1"
    tampered = json.dumps({"encrypt": base64.b64encode(bytes(raw)).decode()}).encode()
    plaintext = AESCipher(app.encrypt_key).decrypt_str(only_encrypt(tampered))
    assert plaintext.startswith('{"schema":"2.1"')

    status, answer = await _post_raw(url, tampered, headers)
    assert status == 500
    assert b"signature" in answer
    assert not receiver.ran

    # the untampered body with the same headers still passes (the check is not just flaky)
    status, _ = await _post_raw(url, body, headers)
    assert status == 200
    assert len(receiver.cards) == 1


async def test_wrong_signature_header_is_rejected(serve: Serve, app: App) -> None:
    receiver = receiver_for(app)
    url = await serve(receiver.route)
    body = sealed_body(app, message_event(app, "hi"))
    headers = signed_headers(app, body)
    headers[SIGNATURE_HEADER] = signature(
        headers[TIMESTAMP_HEADER], headers[NONCE_HEADER], "another-key", body
    )

    status, answer = await _post_raw(url, body, headers)
    assert status == 500
    assert b"signature" in answer
    assert not receiver.ran


async def test_missing_signature_headers_are_rejected(serve: Serve, app: App) -> None:
    receiver = receiver_for(app)
    url = await serve(receiver.route)
    body = sealed_body(app, message_event(app, "hi"))

    status, _ = await _post_raw(url, body, {"Content-Type": "application/json"})
    assert status == 500
    assert not receiver.ran


async def test_receiver_with_other_encrypt_key_rejects(
    serve: Serve, pusher: WebhookPusher, app: App
) -> None:
    receiver = receiver_for(app, encrypt_key="a-different-encrypt-key")
    url = await serve(receiver.route)

    reply = await pusher.post(url, app, card_action(app, {"op": "approve"}))

    assert reply.status == 500
    assert reply.failure is None
    assert not receiver.ran
    assert await pusher.verify_url(url, app) is False


# -- 5: encryption round-trips through the SDK's own decryptor -------------------------------


@pytest.mark.parametrize("length", [0, 1, 15, 16, 17, 31, 32, 33, 48, 255, 4096])
def test_encrypt_round_trips_through_sdk_aescipher(length: int) -> None:
    key = "round-trip-key"
    plaintext = ("x" * length).encode()
    sealed = encrypt(key, plaintext)

    raw = base64.b64decode(sealed)
    # IV + PKCS7-padded ciphertext: an aligned plaintext gets one whole block of padding
    assert len(raw) == 16 + (length // 16 + 1) * 16
    assert AESCipher(key).decrypt(raw) == plaintext
    assert AESCipher(key).decrypt_str(sealed) == plaintext.decode()


def test_encrypt_non_ascii_and_random_iv() -> None:
    key = "密钥-key-🔑"
    text = '{"text":"审批通过 ✅ — Zoë"}'
    plaintext = text.encode()
    first, second = encrypt(key, plaintext), encrypt(key, plaintext)

    assert AESCipher(key).decrypt_str(first) == text
    assert AESCipher(key).decrypt_str(second) == text
    assert first != second  # fresh IV each time
    with pytest.raises(ValueError):  # strict PKCS7 check under the wrong key (or bad JSON)
        json.loads(AESCipher("other").decrypt_str(first))


def test_sealed_body_is_compact_utf8_json(app: App) -> None:
    envelope = {"schema": "2.0", "text": "审批"}
    sealed = sealed_body(app, envelope)
    decrypted = AESCipher(app.encrypt_key).decrypt_str(only_encrypt(sealed))
    assert decrypted == '{"schema":"2.0","text":"审批"}'
    app.encrypt_key = ""
    assert sealed_body(app, envelope) == decrypted.encode()


# -- 6: failures without an HTTP answer, and non-200 answers ---------------------------------


async def test_silent_receiver_times_out(serve: Serve, app: App) -> None:
    never = asyncio.Event()

    async def silent(request: web.Request) -> web.Response:
        await request.read()
        await never.wait()
        return web.Response()

    url = await serve(silent)
    pusher = WebhookPusher(timeout_s=5.0)
    try:
        started = time.perf_counter()
        reply = await pusher.post(url, app, card_action(app, {"op": "x"}), timeout_s=0.3)
        wall = time.perf_counter() - started
    finally:
        await pusher.close()
        never.set()

    assert reply.failure == "timeout"
    assert reply.status is None
    assert reply.body == b""
    assert 0.25 <= wall < 1.5
    assert 250 <= reply.latency_ms < 1500


async def test_constructor_timeout_applies(serve: Serve, app: App) -> None:
    never = asyncio.Event()

    async def silent(request: web.Request) -> web.Response:
        await never.wait()
        return web.Response()

    url = await serve(silent)
    pusher = WebhookPusher(timeout_s=0.3)
    try:
        reply = await pusher.post(url, app, card_action(app, {"op": "x"}))
    finally:
        await pusher.close()
        never.set()
    assert reply.failure == "timeout"
    assert reply.latency_ms < 1500


async def test_closed_port_is_a_connect_failure(pusher: WebhookPusher, app: App) -> None:
    reply = await pusher.post(f"http://127.0.0.1:{free_port()}/hook", app, card_action(app, {}))

    assert reply.failure == "connect"
    assert reply.status is None
    assert reply.detail
    assert await pusher.verify_url(f"http://127.0.0.1:{free_port()}/hook", app) is False


async def test_tcp_connect_timeout_is_a_connect_failure(app: App) -> None:
    """A listener whose accept queue is full drops SYNs (Linux), so connect() hangs: that is a
    TCP connect failure (Lark 200342) after connect_timeout_s, not a response timeout."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        for _ in range(3):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            try:
                filler.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(filler)
        pusher = WebhookPusher(timeout_s=2.0, connect_timeout_s=0.2)
        try:
            reply = await pusher.post(f"http://127.0.0.1:{port}/hook", app, card_action(app, {}))
        finally:
            await pusher.close()
            for filler in fillers:
                filler.close()

    assert reply.failure == "connect", reply
    assert reply.status is None
    assert 150 <= reply.latency_ms < 1000


async def test_503_is_returned_as_status(serve: Serve, pusher: WebhookPusher, app: App) -> None:
    async def busy(request: web.Request) -> web.Response:
        return web.Response(status=503, text="busy")

    reply = await pusher.post(await serve(busy), app, message_event(app, "hi"))

    assert (reply.status, reply.failure, reply.body) == (503, None, b"busy")


async def test_redirect_is_not_followed(serve: Serve, pusher: WebhookPusher, app: App) -> None:
    target = receiver_for(app)
    target_url = await serve(target.route)

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(target_url)

    reply = await pusher.post(await serve(moved), app, card_action(app, {"op": "x"}))

    assert reply.status == 307
    assert not target.ran


async def test_session_is_reused_and_closed(serve: Serve, app: App) -> None:
    async def ok(request: web.Request) -> web.Response:
        return web.json_response({})

    url = await serve(ok)
    pusher = WebhookPusher()
    await pusher.post(url, app, {"schema": "2.0"})
    session = pusher._session
    await pusher.post(url, app, {"schema": "2.0"})
    assert pusher._session is session is not None
    await pusher.close()
    assert session.closed
