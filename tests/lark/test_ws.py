"""WsTransport end to end: the unmodified lark-oapi ws.Client, our subclass, the real sandbox.

The only double is the IngressPort (FakePort): it records what the transport hands over and
answers from a script. Everything between it and the sandbox is production code.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.lark.ingress_port import PROCESSING_ANSWER
from bot.lark.ws import WsTransport
from larksandbox.app import SandboxOptions, build_sandbox
from larksandbox.control import HUB_KEY
from larksandbox.longconn import ENDPOINT_PATH, ClientConfig
from larksandbox.state import default_state
from tests.sandbox.conftest import Sandbox, card_content, lark_client, sdk, until, v2_card
from tests.sandbox.test_openapi import create_request

FRAGMENT_BYTES = 1024  # small, so callbacks and events also travel as fragments


@dataclass
class FakePort:
    """A test double of the IngressPort: records calls, answers from a script."""

    delay_s: float = 0.0
    fail: bool = False
    answer: Callable[[dict[str, Any]], dict[str, Any]] = lambda _e: {}
    callbacks: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    callback_threads: list[threading.Thread] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)  # event ids whose on_callback returned
    events: asyncio.Queue[tuple[dict[str, Any], str, threading.Thread]] = field(
        default_factory=asyncio.Queue
    )

    async def on_callback(self, envelope: dict[str, Any], transport: str) -> dict[str, Any]:
        self.callback_threads.append(threading.current_thread())
        self.callbacks.append((envelope, transport))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        self.finished.append(envelope["header"]["event_id"])
        if self.fail:
            raise RuntimeError("consumer bug")
        return self.answer(envelope)

    def on_event(self, envelope: dict[str, Any], transport: str) -> None:
        self.events.put_nowait((envelope, transport, threading.current_thread()))


@dataclass
class World:
    sandbox: Sandbox
    server: TestServer
    endpoint_down: list[bool]  # [True] -> the endpoint answers 503 (a Lark outage)
    port: FakePort
    start: Callable[..., Awaitable[WsTransport]]


async def eventually(check: Callable[[], bool], deadline_s: float = 10.0) -> None:
    """Poll `check` until it holds; fails the test after `deadline_s`.

    For WsTransport.status(), which is computed when read: there is no event to wait on.
    """
    async with asyncio.timeout(deadline_s):
        while not check():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


@pytest.fixture
async def world() -> AsyncIterator[World]:
    state = default_state()
    app = build_sandbox(
        state,
        SandboxOptions(
            fragment_bytes=FRAGMENT_BYTES,
            client_config=ClientConfig(reconnect_nonce_s=0, reconnect_interval_s=1),
        ),
    )
    endpoint_down = [False]

    @web.middleware
    async def outage(request: web.Request, handler: Any) -> web.StreamResponse:
        if endpoint_down[0] and request.path == ENDPOINT_PATH:
            return web.Response(status=503, text="unavailable")  # the SDK retries a non-200
        response: web.StreamResponse = await handler(request)
        return response

    app.middlewares.append(outage)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    base = f"http://127.0.0.1:{server.port}"
    port = FakePort()
    transports: list[WsTransport] = []
    async with aiohttp.ClientSession() as http:
        sandbox = Sandbox(base, state, app[HUB_KEY], http)

        async def start(*, secret: str | None = None, **options: Any) -> WsTransport:
            options.setdefault("on_fatal", lambda _reason: None)
            transport = WsTransport(
                "cli_sandbox",
                secret or sandbox.app.app_secret,
                base,
                port,
                asyncio.get_running_loop(),
                **options,
            )
            transports.append(transport)
            transport.start()
            return transport

        yield World(sandbox, server, endpoint_down, port, start)
        for transport in transports:
            assert await transport.stop()
    await server.close()


async def connected(world: World, **options: Any) -> WsTransport:
    transport = await world.start(**options)
    longconn = world.sandbox.hub.longconn
    await until(world.sandbox.state, lambda: longconn.connected("cli_sandbox") == 1)
    await eventually(lambda: transport.status()["state"] == "connected")
    return transport


async def send_card(sandbox: Sandbox) -> str:
    created = await sdk(
        lark_client(sandbox).im.v1.message.create, create_request("oc_ops", card_content(v2_card()))
    )
    assert created.success(), created.msg
    message_id: str = created.data.message_id
    return message_id


async def click(sandbox: Sandbox, message_id: str, operator: str = "ou_bob") -> dict[str, Any]:
    status, reply = await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": operator, "button": "confirm"}
    )
    assert status == 200, reply
    result: dict[str, Any] = reply
    return result


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
    [(envelope, via)] = world.port.callbacks
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
    await until(world.sandbox.state, lambda: hub.deliveries[event_id].acked)


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
    await until(world.sandbox.state, lambda: bool(hub.deliveries[event_id].attempts))
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
    assert len(world.port.callbacks) == 1


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
    [(envelope, _)] = world.port.callbacks
    assert envelope["event"]["action"]["value"] == value


async def test_a_failing_consumer_gets_the_processing_toast_not_an_error(world: World) -> None:
    await connected(world)
    world.port.fail = True
    reply = await click(world.sandbox, await send_card(world.sandbox))
    assert reply["status"] == "answered" and "client_error" not in reply
    assert reply["toast"] == PROCESSING_ANSWER["toast"] and not reply["card_changed"]


async def test_a_late_consumer_gets_the_processing_toast_and_is_not_cancelled(
    world: World,
) -> None:
    await connected(world, callback_budget_s=0.3)
    world.port.delay_s = 2.0
    world.port.answer = confirmed
    reply = await click(world.sandbox, await send_card(world.sandbox))
    assert reply["status"] == "answered" and reply["toast"] == PROCESSING_ANSWER["toast"]
    assert reply["latency_ms"] < 1500 and not reply["card_changed"]  # the budget, not the delay
    [(envelope, _)] = world.port.callbacks
    # the consumer runs to completion (it may be committing the claim); its answer is dropped
    await eventually(lambda: world.port.finished == [envelope["header"]["event_id"]])


# -- connection health -------------------------------------------------------------------------


async def test_a_disconnect_shows_as_disconnected_until_the_sdk_reconnects(world: World) -> None:
    transport = await connected(world, watchdog_grace_s=0.3)
    assert transport.status()["reconnects"] == 0
    world.endpoint_down[0] = True  # the SDK's reconnect attempts fail until we lift this

    status, closed = await world.sandbox.control("POST", "/apps/cli_sandbox/disconnect")
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
    await until(world.sandbox.state, lambda: longconn.connected("cli_sandbox") == 0)
    await connected(world)  # the SDK's module loop can be taken over by the next transport
