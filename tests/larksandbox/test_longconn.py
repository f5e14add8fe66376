"""The sandbox's long connection against the UNMODIFIED lark-oapi ws.Client.

Each test starts its own aiohttp server with a `LongConnHub` on a free port and runs the SDK
client in a thread (docs/lark-reference.md §2.8 mode D, see tests/support/sdk_client.py); the
second client of the two-client test is a subprocess, because the SDK's module-global loop
makes two in-process clients race. Handlers hand what they see to the test through thread-safe queues; the test
waits for conditions with deadlines, never for fixed sleeps.
"""

from __future__ import annotations

import asyncio
import base64
import json
import queue
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import lark_oapi as lark  # type: ignore[import-untyped]
import pytest
from aiohttp import web
from lark_oapi.event.callback.model.p2_card_action_trigger import (  # type: ignore[import-untyped]
    P2CardActionTriggerResponse,
)
from lark_oapi.ws.exception import ClientException  # type: ignore[import-untyped]
from lark_oapi.ws.pb.pbbp2_pb2 import Frame  # type: ignore[import-untyped]

from larksandbox.entities import App
from larksandbox.longconn import LongConnHub, NoConnection
from larksandbox.longconn_wire import Ack, ClientConfig, build_data_frames, parse_ack
from larksandbox.state import SandboxState, default_state
from tests.support.processes import ROOT
from tests.support.sdk_client import SdkThread
from tests.support.waiting import eventually

# Reconnect at once (nonce 0 skips the SDK's random sleep) and retry every second.
FAST = ClientConfig(reconnect_count=-1, reconnect_interval_s=1, reconnect_nonce_s=0)
T = TypeVar("T")


# -- payloads (schema 2.0 envelopes, built here on purpose: no dependency on other builders) --


def _header(event_id: str, event_type: str, app: App, create_time: str) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "token": "",
        "create_time": create_time,
        "event_type": event_type,
        "tenant_key": app.tenant_key,
        "app_id": app.app_id,
    }


def im_message(app: App, event_id: str, text: str = "hi", message_id: str = "om_x") -> bytes:
    now_ms = str(int(time.time() * 1000))
    envelope = {
        "schema": "2.0",
        "header": _header(event_id, "im.message.receive_v1", app, now_ms),
        "event": {
            "sender": {
                "sender_id": {"open_id": "ou_alice"},
                "sender_type": "user",
                "tenant_key": app.tenant_key,
            },
            "message": {
                "message_id": message_id,
                "chat_id": "oc_ops",
                "chat_type": "group",
                "message_type": "text",
                "content": json.dumps({"text": text}),
                "create_time": now_ms,
                "mentions": [],
            },
        },
    }
    return json.dumps(envelope).encode()


def card_action(app: App, event_id: str, value: dict[str, Any]) -> bytes:
    envelope = {
        "schema": "2.0",
        "header": _header(event_id, "card.action.trigger", app, str(int(time.time() * 1e6))),
        "event": {
            "operator": {"tenant_key": app.tenant_key, "open_id": "ou_alice"},
            "token": "c-sandbox",
            "action": {"value": value, "tag": "button"},
            "host": "im_message",
            "context": {"open_message_id": "om_card", "open_chat_id": "oc_ops"},
        },
    }
    return json.dumps(envelope, ensure_ascii=False).encode()


# -- what the handlers saw (filled in the lark-ws thread) ---------------------------------------


@dataclass
class Seen:
    messages: queue.Queue[tuple[str, str, str]] = field(default_factory=queue.Queue)
    cards: queue.Queue[tuple[str, dict[str, Any], str | None]] = field(default_factory=queue.Queue)
    sleeping: threading.Event = field(default_factory=threading.Event)


def make_handler(seen: Seen) -> Any:
    """Real SDK dispatcher; a card's `action.value["mode"]` picks how the handler behaves."""

    def on_message(data: Any) -> None:
        text = json.loads(data.event.message.content)["text"]
        seen.messages.put((data.header.event_id, data.event.message.message_id, text))
        if text == "raise":
            raise RuntimeError("handler failed on purpose")

    def on_card(data: Any) -> Any:
        value: dict[str, Any] = data.event.action.value
        seen.cards.put((data.header.event_id, value, data.event.context.open_message_id))
        mode = value.get("mode")
        if mode == "raise":
            raise RuntimeError("handler failed on purpose")
        if mode == "sleep":
            seen.sleeping.set()
            time.sleep(float(value["sleep_s"]))  # a slow sync handler blocks the SDK's loop
        if mode == "blob":
            blob = value["blob"]
            return {"toast": {"type": "info", "content": f"{len(blob)}:{blob[-8:]}"}}
        if mode == "answer":
            return P2CardActionTriggerResponse(value["answer"])  # the SDK's own response model
        return {"toast": {"type": "success", "content": "ok"}}

    return (
        lark.EventDispatcherHandler.builder("", "")
        .register_p2_im_message_receive_v1(on_message)
        .register_p2_card_action_trigger(on_card)
        .build()
    )


# -- waiting -----------------------------------------------------------------------------------


async def take(source: queue.Queue[T], timeout_s: float = 5.0) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return source.get_nowait()
        except queue.Empty:
            if time.monotonic() > deadline:
                raise AssertionError("the handler saw nothing") from None
            await asyncio.sleep(0.01)


def drain(source: queue.Queue[T]) -> list[T]:
    items: list[T] = []
    while True:
        try:
            items.append(source.get_nowait())
        except queue.Empty:
            return items


# -- the stand: sandbox server + SDK clients ----------------------------------------------------


@dataclass
class Stand:
    state: SandboxState
    hub: LongConnHub
    url: str
    seen: Seen = field(default_factory=Seen)
    clients: list[SdkThread] = field(default_factory=list)

    @property
    def app(self) -> App:
        return next(iter(self.state.apps.values()))

    async def start_client(self, secret: str | None = None, *, wait: bool = True) -> SdkThread:
        before = self.hub.connected(self.app.app_id)
        client = SdkThread(
            self.app.app_id,
            self.app.app_secret if secret is None else secret,
            self.url,
            make_handler(self.seen),
        )
        self.clients.append(client)
        client.start()
        if wait:
            await eventually(
                lambda: self.hub.connected(self.app.app_id) == before + 1, what="the SDK connects"
            )
        return client

    async def push(self, payload: bytes, **kwargs: Any) -> Ack | None:
        return await self.hub.push(self.app.app_id, payload, **kwargs)


StandFactory = Callable[..., Awaitable[Stand]]


@pytest.fixture
async def make_stand() -> AsyncIterator[StandFactory]:
    made: list[tuple[Stand, web.AppRunner]] = []

    async def make(**hub_options: Any) -> Stand:
        hub_options.setdefault("client_config", FAST)
        state = default_state()
        hub = LongConnHub(state, **hub_options)
        app = web.Application()
        hub.add_routes(app)
        runner = web.AppRunner(app, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        stand = Stand(state, hub, f"http://127.0.0.1:{port}")
        made.append((stand, runner))
        return stand

    yield make
    for stand, runner in made:
        # Clients first: their clean close needs the server, and a stopped server would only
        # send them into reconnect loops.
        await asyncio.gather(*(c.stop() for c in stand.clients))
        await runner.cleanup()  # on_shutdown closes the hub


@pytest.fixture
async def stand(make_stand: StandFactory) -> Stand:
    return await make_stand()


# -- 1. events ---------------------------------------------------------------------------------


async def test_event_reaches_handler_and_is_acked(stand: Stand) -> None:
    await stand.start_client()
    ack = await stand.push(im_message(stand.app, "ev-1", "hello", message_id="om_1"))
    assert ack is not None
    assert ack.code == 200
    assert ack.data is None  # events carry no answer
    assert ack.biz_rt_ms is not None and ack.biz_rt_ms >= 0
    assert await take(stand.seen.messages) == ("ev-1", "om_1", "hello")


async def test_push_without_client_raises(stand: Stand) -> None:
    assert stand.hub.connected(stand.app.app_id) == 0
    with pytest.raises(NoConnection):
        await stand.push(im_message(stand.app, "ev-none"))


async def test_unregistered_event_type_is_acked_500(stand: Stand) -> None:
    await stand.start_client()
    payload = json.loads(im_message(stand.app, "ev-chat"))
    payload["header"]["event_type"] = "im.chat.updated_v1"  # no processor registered
    ack = await stand.push(json.dumps(payload).encode())
    assert ack == Ack(code=500, data=None, biz_rt_ms=None)  # the SDK adds biz_rt only on success


# -- 2. card callbacks -------------------------------------------------------------------------


async def test_card_callback_answer_comes_back_in_ack(stand: Stand) -> None:
    await stand.start_client()
    answer = {
        "toast": {"type": "success", "content": "ok"},
        "card": {
            "type": "raw",
            "data": {
                "schema": "2.0",
                "header": {"title": {"tag": "plain_text", "content": "Confirmed"}},
                "body": {"elements": [{"tag": "markdown", "content": "**done** by Alice"}]},
            },
        },
    }
    value = {"mode": "answer", "answer": answer, "op": "op_1"}
    ack = await stand.push(card_action(stand.app, "cb-1", value))
    assert ack is not None and ack.code == 200
    assert ack.data is not None
    assert json.loads(ack.data) == answer
    event_id, seen_value, message_id = await take(stand.seen.cards)
    assert (event_id, seen_value, message_id) == ("cb-1", value, "om_card")


# -- 3. fragmentation --------------------------------------------------------------------------


def test_frames_are_fragmented_with_sum_and_seq() -> None:
    payload = bytes(range(256)) * 10  # 2560 bytes
    frames = build_data_frames(
        payload,
        message_id="m1",
        trace_id="t1",
        frame_type="event",
        service_id=7,
        fragment_bytes=1024,
        seq_ids=iter(range(100, 200)),
    )
    parsed = []
    for raw in frames:
        frame = Frame()
        frame.ParseFromString(raw)
        parsed.append(frame)
    assert len(parsed) == 3
    joined = b""
    for seq, frame in enumerate(parsed):
        headers = {h.key: h.value for h in frame.headers}
        assert headers == {
            "type": "event",
            "message_id": "m1",
            "trace_id": "t1",
            "sum": "3",
            "seq": str(seq),
        }
        assert (frame.method, frame.service, frame.SeqID) == (1, 7, 100 + seq)
        joined += frame.payload
    assert joined == payload


async def test_fragmented_callback_is_reassembled_and_answered(make_stand: StandFactory) -> None:
    stand = await make_stand(fragment_bytes=1024)
    await stand.start_client()
    blob = "".join(f"{i:05d}é" for i in range(2000))  # ~13 KB, multi-byte chars cut across parts
    payload = card_action(stand.app, "cb-big", {"mode": "blob", "blob": blob})
    assert len(payload) > 10 * 1024
    ack = await stand.push(payload)
    assert ack is not None and ack.code == 200 and ack.data is not None
    assert json.loads(ack.data) == {
        "toast": {"type": "info", "content": f"{len(blob)}:{blob[-8:]}"}
    }
    # Small messages still travel in one frame and are answered as well.
    ack = await stand.push(card_action(stand.app, "cb-small", {"mode": "plain"}))
    assert ack is not None and ack.code == 200


# -- 4. errors and timeouts ----------------------------------------------------------------------


async def test_raising_handlers_are_acked_500(stand: Stand) -> None:
    await stand.start_client()
    ack = await stand.push(card_action(stand.app, "cb-err", {"mode": "raise"}))
    assert ack is not None and ack.code == 500 and ack.data is None
    ack = await stand.push(im_message(stand.app, "ev-err", "raise"))
    assert ack is not None and ack.code == 500


async def test_slow_handler_times_out_and_the_late_ack_is_ignored(stand: Stand) -> None:
    await stand.start_client()
    started = time.monotonic()
    ack = await stand.push(
        card_action(stand.app, "cb-slow", {"mode": "sleep", "sleep_s": 4.0}), timeout_s=0.5
    )
    assert ack is None
    # gave up at the timeout, not at the handler's end (far apart: a loaded machine's lag
    # cannot blur them)
    assert time.monotonic() - started < 3.0
    # The next push waits for the slow handler (the SDK runs handlers one at a time) and gets
    # its own ack, not the late one.
    ack = await stand.push(card_action(stand.app, "cb-next", {"mode": "plain"}), timeout_s=10)
    assert ack is not None and ack.code == 200
    assert ack.data is not None and json.loads(ack.data)["toast"]["content"] == "ok"


async def test_card_frames_are_dropped_by_the_sdk(stand: Stand) -> None:
    await stand.start_client()
    card = card_action(stand.app, "cb-card-frame", {"mode": "plain"})
    assert await stand.push(card, frame_type="card", timeout_s=0.3) is None
    # The SDK handles frames in arrival order, so once this is acked the card frame was seen.
    ack = await stand.push(card_action(stand.app, "cb-event-frame", {"mode": "plain"}))
    assert ack is not None and ack.code == 200
    assert [event_id for event_id, _, _ in drain(stand.seen.cards)] == ["cb-event-frame"]


# -- 5. disconnects ----------------------------------------------------------------------------


async def test_disconnect_then_the_client_reconnects_by_itself(stand: Stand) -> None:
    await stand.start_client()
    app_id = stand.app.app_id
    assert await stand.hub.disconnect(app_id) == 1
    assert stand.hub.connected(app_id) == 0
    await eventually(lambda: stand.hub.connected(app_id) == 1, what="the SDK reconnects")
    ack = await stand.push(im_message(stand.app, "ev-after", "back"))
    assert ack is not None and ack.code == 200
    assert (await take(stand.seen.messages))[0] == "ev-after"


async def test_pending_push_resolves_to_none_promptly_when_the_connection_drops(
    stand: Stand,
) -> None:
    await stand.start_client()
    app_id = stand.app.app_id
    push = asyncio.create_task(
        stand.push(
            card_action(stand.app, "cb-drop", {"mode": "sleep", "sleep_s": 1.5}), timeout_s=10
        )
    )
    await eventually(stand.seen.sleeping.is_set, what="the handler is running")
    disconnect = asyncio.create_task(stand.hub.disconnect(app_id))
    done, _ = await asyncio.wait({push}, timeout=0.5)  # far below the push's 10 s timeout
    assert push in done and push.result() is None
    assert await disconnect == 1
    await eventually(lambda: stand.hub.connected(app_id) == 1, what="the SDK reconnects")
    ack = await stand.push(card_action(stand.app, "cb-again", {"mode": "plain"}))
    assert ack is not None and ack.code == 200


@pytest.mark.parametrize("how", ["close_frame", "tcp_shutdown"])
async def test_client_vanishing_mid_push_resolves_to_none(stand: Stand, how: str) -> None:
    # A raw client, because the SDK cannot be made to vanish between a frame and its ack.
    app = stand.app
    url = (await endpoint(stand, app.app_id, app.app_secret))["data"]["URL"]
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        await eventually(
            lambda: stand.hub.connected(app.app_id) == 1, what="the raw client connects"
        )
        push = asyncio.create_task(stand.push(im_message(app, "ev-gone"), timeout_s=10))
        frame = Frame()
        frame.ParseFromString(await ws.receive_bytes(timeout=5))
        assert {h.key: h.value for h in frame.headers}["type"] == "event"
        if how == "close_frame":
            await ws.close()
        else:
            ws.get_extra_info("socket").shutdown(socket.SHUT_RDWR)  # no close frame at all
        assert await asyncio.wait_for(push, 2.0) is None
        assert stand.hub.connected(app.app_id) == 0
        with pytest.raises(NoConnection):
            await stand.push(im_message(app, "ev-nobody"))


# -- 6. several clients: each push goes to exactly one -------------------------------------------


async def test_each_event_goes_to_exactly_one_of_two_clients(stand: Stand) -> None:
    app = stand.app
    await stand.start_client()
    other = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.sdk_client",
        stand.url,
        app.app_id,
        app.app_secret,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await eventually(
            lambda: stand.hub.connected(app.app_id) == 2,
            what="the subprocess connects",
            deadline_s=30,
        )
        assert stand.hub.dispatch == "random"  # Lark's rule: one of the clients, at random
        rnd_ids = [f"rnd-{i:03d}" for i in range(40)]
        acks = await asyncio.gather(
            *(stand.push(im_message(app, e), timeout_s=10) for e in rnd_ids)
        )
        assert all(a is not None and a.code == 200 for a in acks)

        stand.hub.dispatch = "round_robin"  # the deterministic option
        rr_ids = [f"rr-{i:03d}" for i in range(200)]
        acks = await asyncio.gather(*(stand.push(im_message(app, e), timeout_s=10) for e in rr_ids))
        assert all(a is not None and a.code == 200 for a in acks)
    finally:
        other.terminate()  # every line was flushed before its ack went out
        out, err = await other.communicate()
    here = [event_id for event_id, _, _ in drain(stand.seen.messages)]
    there = [line.split()[1] for line in out.decode().splitlines() if line.startswith("event ")]
    assert len(there) > 0, err.decode()[-2000:]

    for prefix, ids in (("rr-", rr_ids), ("rnd-", rnd_ids)):
        mine = [e for e in here if e.startswith(prefix)]
        theirs = [e for e in there if e.startswith(prefix)]
        assert sorted(mine + theirs) == ids  # all delivered, none twice
        assert mine and theirs
    # Round robin alternates strictly between the two connections.
    assert len([e for e in here if e.startswith("rr-")]) == 100


async def test_dispatch_mode_is_validated(stand: Stand) -> None:
    with pytest.raises(ValueError):
        stand.hub.dispatch = "broadcast"
    stand.hub.dispatch = "round_robin"
    assert stand.hub.dispatch == "round_robin"


# -- 7. credentials, the endpoint and the handshake ----------------------------------------------


async def test_wrong_secret_the_client_does_not_connect(stand: Stand) -> None:
    client = await stand.start_client("not-the-secret", wait=False)
    await eventually(lambda: not client.alive, what="start() gives up")
    assert isinstance(client.error, ClientException)  # not retried by the SDK
    assert client.error.code == 1000040345
    assert stand.hub.connected(stand.app.app_id) == 0


async def endpoint(stand: Stand, app_id: str, secret: str) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{stand.url}/callback/ws/endpoint", json={"AppID": app_id, "AppSecret": secret}
        ) as response,
    ):
        assert response.status == 200  # Lark answers errors with HTTP 200 and a code
        body: dict[str, Any] = await response.json()
        return body


async def test_endpoint_checks_credentials(stand: Stand) -> None:
    app = stand.app
    wrong = await endpoint(stand, app.app_id, "not-the-secret")
    assert wrong["code"] == 1000040345
    unknown = await endpoint(stand, "cli_nobody", app.app_secret)
    assert unknown["code"] == 1000040351
    ok = await endpoint(stand, app.app_id, app.app_secret)
    assert ok["code"] == 0
    url = ok["data"]["URL"]
    assert url.startswith(f"ws://127.0.0.1:{stand.url.rsplit(':', 1)[1]}/callback/ws/connect?")
    assert "device_id=" in url and "service_id=" in url
    assert ok["data"]["ClientConfig"] == {
        "ReconnectCount": -1,
        "ReconnectInterval": 1,
        "ReconnectNonce": 0,
        "PingInterval": 120,
    }


async def test_raw_connection_ping_pong_limit_and_tickets(make_stand: StandFactory) -> None:
    stand = await make_stand(max_connections_per_app=1)
    app = stand.app
    first = (await endpoint(stand, app.app_id, app.app_secret))["data"]["URL"]
    second = (await endpoint(stand, app.app_id, app.app_secret))["data"]["URL"]
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(first) as ws:
            assert stand.hub.connected(app.app_id) == 1
            service = int(first.split("service_id=")[1].split("&")[0])
            ping = Frame()
            ping.SeqID, ping.LogID, ping.service, ping.method = 0, 0, service, 0
            header = ping.headers.add()
            header.key, header.value = "type", "ping"
            await ws.send_bytes(ping.SerializeToString())
            pong = Frame()
            pong.ParseFromString(await ws.receive_bytes(timeout=5))
            assert (pong.method, pong.service) == (0, service)
            assert {h.key: h.value for h in pong.headers} == {"type": "pong"}
            assert json.loads(pong.payload)["ReconnectInterval"] == 1

            # Over the limit: rejected at the handshake the way the SDK reads it.
            with pytest.raises(aiohttp.WSServerHandshakeError) as over:
                await session.ws_connect(second)
            assert over.value.headers is not None
            assert over.value.headers["handshake-status"] == "514"
            assert over.value.headers["handshake-autherrcode"] == "1000040350"

        await eventually(
            lambda: stand.hub.connected(app.app_id) == 0, what="the hub sees the close"
        )
        # Tickets are single use (and `second`'s was spent on the rejected attempt).
        for spent in (first, second):
            with pytest.raises(aiohttp.WSServerHandshakeError) as reused:
                await session.ws_connect(spent)
            assert reused.value.headers is not None
            assert reused.value.headers["handshake-autherrcode"] != "1000040350"  # retried


def test_parse_ack() -> None:
    answer = base64.b64encode(b'{"toast":{}}').decode()
    assert parse_ack(json.dumps({"code": 200, "data": answer}).encode(), "12") == Ack(
        200, b'{"toast":{}}', 12.0
    )
    assert parse_ack(b'{"code":500}', None) == Ack(500, None, None)
    assert parse_ack(b"not json", None) is None
