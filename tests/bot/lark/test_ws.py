"""WsTransport end to end: the unmodified lark-oapi ws.Client, our subclass, the real sandbox.

The only double is the IngressPort (FakePort): it records what the transport hands over and
answers from a script; the terms of its ack (how long the transport waits, what it answers
instead) are the consumer's real ones (bot/ingress/ack.py `AckTerms`). Everything between it
and the sandbox is production code.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from typing import Any

import pytest

from bot.ingress.ack import AckTerms
from bot.lark.ws import WsTransport
from larksandbox import DEFAULT_APP_ID
from tests.support.fake_ack import FakeAck
from tests.support.sandbox import Sandbox, card_content, create_request, lark_client, sdk, v2_card
from tests.support.waiting import eventually
from tests.support.ws_world import FRAGMENT_BYTES, World, click


async def connected(world: World, **options: Any) -> WsTransport:
    transport = await world.start(**options)
    longconn = world.sandbox.hub.longconn
    await eventually(lambda: longconn.connected(DEFAULT_APP_ID) == 1, woken_by=world.sandbox.state)
    await eventually(lambda: transport.status()["state"] == "connected")
    return transport


async def send_card(sandbox: Sandbox) -> str:
    created = await sdk(
        lark_client(sandbox).im.v1.message.create, create_request("oc_ops", card_content(v2_card()))
    )
    assert created.success(), created.msg
    message_id: str = created.data.message_id
    return message_id


def confirmed(envelope: dict[str, Any]) -> dict[str, Any]:
    done = v2_card("Confirmed", buttons=False)
    who = envelope["event"]["operator"]["open_id"]
    done["body"]["elements"].append({"tag": "markdown", "content": f"Confirmed by {who}"})
    return {
        "toast": {"type": "success", "content": "Confirmed"},
        "card": {"type": "raw", "data": done},
    }


# -- callbacks and events ----------------------------------------------------------------------


async def test_a_click_is_answered_by_on_callback_on_the_main_thread(world: World) -> None:
    transport = await connected(world)
    world.port.answer = confirmed
    message_id = await send_card(world.sandbox)

    reply = await click(world.sandbox, message_id)

    assert (reply["status"], reply["transport"]) == ("answered", "ws")
    assert reply["toast"] == {"type": "success", "content": "Confirmed"} and reply["card_changed"]
    [(envelope, via)] = world.port.clicks
    assert via == "ws" and envelope["header"]["event_type"] == "card.action.trigger"
    assert envelope["event"]["context"]["open_message_id"] == message_id
    assert world.port.callback_threads == [threading.main_thread()]
    _, view = await world.sandbox.control("GET", f"/messages/{message_id}")
    assert "Confirmed by ou_bob" in json.dumps(view["card"])
    status = transport.status()
    assert status["connected_since"] is not None and status["last_frame_at"] is not None
    assert status["watchdog"]["verdict"] == "ok"


async def test_a_mention_reaches_on_event_on_the_main_thread(world: World) -> None:
    await connected(world)
    _, sent = await world.sandbox.control(
        "POST",
        "/chats/oc_ops/messages",
        {"sender": "ou_alice", "text": "help", "mention_bot": True},
    )
    [event_id] = sent["event_ids"]
    envelope, via, thread = await asyncio.wait_for(world.port.events.get(), 10)
    assert (envelope["header"]["event_id"], via) == (event_id, "ws")
    assert json.loads(envelope["event"]["message"]["content"]) == {"text": "@_user_1 help"}
    assert thread is threading.main_thread()
    hub = world.sandbox.hub
    await eventually(lambda: hub.deliveries[event_id].acked, woken_by=world.sandbox.state)


async def test_an_unknown_event_type_is_handed_over_and_acked(world: World) -> None:
    await connected(world)
    app = world.sandbox.app
    event_id = f"ev_{secrets.token_hex(8)}"
    envelope = {
        "schema": "2.0",
        "header": {
            "event_id": event_id,
            "token": app.verification_token,
            "create_time": str(int(time.time() * 1000)),
            "event_type": "contact.user.created_v3",
            "tenant_key": app.tenant_key,
            "app_id": app.app_id,
        },
        "event": {"object": {"open_id": "ou_new", "padding": "x" * 2 * FRAGMENT_BYTES}},
    }
    hub = world.sandbox.hub
    hub.push_event(app, envelope)
    await eventually(lambda: bool(hub.deliveries[event_id].attempts), woken_by=world.sandbox.state)
    _, log = await world.sandbox.control("GET", "/deliveries")
    [delivery] = [d for d in log["items"] if d["event_id"] == event_id]
    assert delivery["acked"] is True
    assert [a["result"] for a in delivery["attempts"]] == ["code 200"]
    received, via, _thread = await asyncio.wait_for(world.port.events.get(), 10)
    assert received == envelope and via == "ws"


async def test_fifty_slow_callbacks_overlap_instead_of_queueing(world: World) -> None:
    await connected(world)
    world.port.delay_s = 0.2
    world.port.answer = lambda _e: {"toast": {"type": "success", "content": "ok"}}
    message_id = await send_card(world.sandbox)

    started = time.perf_counter()
    replies = await asyncio.gather(*(click(world.sandbox, message_id) for _ in range(50)))
    wall = time.perf_counter() - started

    assert [r["status"] for r in replies] == ["answered"] * 50
    assert all(r["toast"] == {"type": "success", "content": "ok"} for r in replies)
    assert len(world.port.finished) == 50
    assert wall < 3.0, f"50 x 0.2 s callbacks took {wall:.2f}s: the SDK loop is serialized"


async def test_card_frames_take_the_event_path(world: World) -> None:
    await connected(world)
    world.sandbox.hub.card_frame_type = "card"  # the SDK itself would drop these unanswered
    world.port.answer = confirmed
    message_id = await send_card(world.sandbox)
    reply = await click(world.sandbox, message_id)
    assert reply["status"] == "answered" and reply["card_changed"]
    assert len(world.port.clicks) == 1


async def test_a_fragmented_callback_is_reassembled(world: World) -> None:
    await connected(world)
    world.port.answer = confirmed
    card = v2_card()
    value = {"action": "confirm", "note": "x" * (3 * FRAGMENT_BYTES)}
    card["body"]["elements"][1]["columns"][0]["elements"][0]["behaviors"][0]["value"] = value
    created = await sdk(
        lark_client(world.sandbox).im.v1.message.create,
        create_request("oc_ops", card_content(card)),
    )
    reply = await click(world.sandbox, created.data.message_id)
    assert reply["status"] == "answered" and reply["card_changed"]
    [(envelope, _)] = world.port.clicks
    assert envelope["event"]["action"]["value"] == value


async def test_a_failing_consumer_gets_the_processing_toast_not_an_error(world: World) -> None:
    await connected(world)
    world.port.fail = True
    reply = await click(world.sandbox, await send_card(world.sandbox))
    assert reply["status"] == "answered" and "client_error" not in reply
    # the consumer's own "processing" toast, as its language has it (en here)
    assert reply["toast"] == world.port.callbacks.processing()["toast"]
    assert reply["toast"]["content"] == "Received, processing" and not reply["card_changed"]


async def test_a_late_consumer_gets_the_processing_toast_and_is_not_cancelled(
    world: World,
) -> None:
    await connected(world)
    world.port.callbacks = FakeAck(AckTerms(answer_budget_s=0.1, lang="zh"))  # the net at 0.8 s
    world.port.hold = asyncio.Event()  # the consumer answers only after the ack left
    world.port.answer = confirmed
    reply = await click(world.sandbox, await send_card(world.sandbox))
    assert reply["status"] == "answered" and not reply["card_changed"]
    assert reply["toast"] == world.port.callbacks.processing()["toast"]
    assert reply["toast"]["content"] == "已收到，处理中"
    [(envelope, _)] = world.port.clicks
    assert world.port.finished == []  # answered for while the consumer still held the click
    # and the consumer is told so: its own answer, whenever it comes, never reaches Lark
    assert world.port.callbacks.answered_for_ids == [envelope["header"]["event_id"]]
    world.port.hold.set()
    # the consumer runs to completion (it may be committing the claim); its answer is dropped
    await eventually(lambda: world.port.finished == [envelope["header"]["event_id"]])


# -- connection health -------------------------------------------------------------------------


async def test_a_disconnect_shows_as_disconnected_until_the_sdk_reconnects(world: World) -> None:
    transport = await connected(world, watchdog_grace_s=0.3)
    assert transport.status()["reconnects"] == 0
    world.endpoint_down[0] = True  # the SDK's reconnect attempts fail until we lift this

    status, closed = await world.sandbox.control("POST", f"/apps/{DEFAULT_APP_ID}/disconnect")
    assert (status, closed) == (200, {"closed": 1})

    await eventually(lambda: transport.status()["state"] == "disconnected")
    down = transport.status()
    assert down["connected_since"] is None and down["watchdog"]["verdict"] == "down"
    world.endpoint_down[0] = False
    await eventually(lambda: transport.status()["state"] == "connected", deadline_s=15)
    up = transport.status()
    assert up["reconnects"] == 1 and up["watchdog"]["verdict"] == "ok"
    world.port.answer = confirmed
    reply = await click(world.sandbox, await send_card(world.sandbox))
    assert reply["status"] == "answered" and reply["transport"] == "ws"


async def test_a_wedged_sdk_loop_shows_as_disconnected_then_recovers(world: World) -> None:
    # The alive-but-deaf case: the socket is open but the SDK loop processes nothing (as when
    # it hangs in its timeout-less endpoint POST). Pings every second; nothing for 1.3 s = suspect.
    world.sandbox.hub.longconn.client_config.ping_interval_s = 1
    transport = await connected(world, watchdog_grace_s=0.1, pong_slack_s=0.3)
    await eventually(lambda: transport.status()["last_frame_at"] is not None)
    assert transport._ws_loop is not None
    transport._ws_loop.call_soon_threadsafe(time.sleep, 2.0)  # blocks the SDK thread

    await eventually(lambda: transport.status()["state"] == "disconnected")
    assert "no frame or pong" in transport.status()["watchdog"]["reason"]
    await eventually(lambda: transport.status()["state"] == "connected", deadline_s=10)
    assert transport.status()["reconnects"] == 0  # same socket all along


async def test_the_watchdog_calls_on_fatal_when_lark_is_gone(world: World) -> None:
    fatal = asyncio.Event()
    reasons: list[str] = []

    def on_fatal(reason: str) -> None:
        assert threading.current_thread() is threading.main_thread()
        reasons.append(reason)
        fatal.set()

    transport = await connected(
        world, watchdog_grace_s=0.2, exit_after_s=1.5, watchdog_tick_s=0.05, on_fatal=on_fatal
    )
    await world.server.close()  # Lark disappears: the SDK retries its endpoint forever

    await eventually(lambda: transport.status()["state"] == "disconnected")
    assert not fatal.is_set()  # still inside exit_after_s
    await asyncio.wait_for(fatal.wait(), 10)
    assert len(reasons) == 1 and "disconnected for" in reasons[0]
    assert transport.status()["watchdog"]["verdict"] == "fatal"


async def test_bad_credentials_are_fatal_at_once(world: World) -> None:
    fatal = asyncio.Event()
    reasons: list[str] = []

    def on_fatal(reason: str) -> None:
        reasons.append(reason)
        fatal.set()

    # exit_after_s is long: the SDK thread ending (ClientException) is fatal without waiting
    await world.start(secret="wrong", exit_after_s=600, watchdog_tick_s=0.05, on_fatal=on_fatal)
    await asyncio.wait_for(fatal.wait(), 10)
    assert "ClientException" in reasons[0] and "wrong" not in reasons[0]


async def test_stop_closes_the_socket_and_allows_a_new_transport(world: World) -> None:
    transport = await connected(world)
    with pytest.raises(RuntimeError, match="already running"):
        await world.start()
    assert await transport.stop()
    longconn = world.sandbox.hub.longconn
    await eventually(lambda: longconn.connected(DEFAULT_APP_ID) == 0, woken_by=world.sandbox.state)
    await connected(world)  # the SDK's module loop can be taken over by the next transport
