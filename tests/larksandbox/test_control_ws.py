"""Control API end to end over the long connection, with the unmodified lark-oapi ws.Client."""

from __future__ import annotations

import json
import queue
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import lark_oapi as lark  # type: ignore[import-untyped]
import pytest
from aiohttp.test_utils import TestServer

from larksandbox.app import SandboxOptions, build_sandbox
from larksandbox.control_requests import HUB_KEY
from larksandbox.longconn_wire import ClientConfig
from larksandbox.state import DEFAULT_APP_ID, default_state
from tests.support.sandbox import (
    Sandbox,
    card_content,
    create_request,
    form_card,
    lark_client,
    sdk,
    v2_card,
)
from tests.support.sdk_client import SdkThread
from tests.support.waiting import eventually

FRAGMENT_BYTES = 1024


class Bot:
    """What a bot built on the SDK sees: queues of events and clicks; a scripted answer."""

    def __init__(self) -> None:
        self.messages: queue.Queue[Any] = queue.Queue()
        self.clicks: queue.Queue[Any] = queue.Queue()

    def handler(self) -> Any:
        def on_message(data: Any) -> None:
            self.messages.put(data)

        def on_card(data: Any) -> Any:
            self.clicks.put(data)
            done = v2_card("Confirmed", buttons=False)
            done["body"]["elements"].append(
                {"tag": "markdown", "content": f"Confirmed by {data.event.operator.open_id}"}
            )
            return {
                "toast": {"type": "success", "content": "Confirmed"},
                "card": {"type": "raw", "data": done},
            }

        return (
            lark.EventDispatcherHandler.builder("", "")
            .register_p2_im_message_receive_v1(on_message)
            .register_p2_card_action_trigger(on_card)
            .build()
        )


@pytest.fixture
async def wired() -> AsyncIterator[tuple[Sandbox, Bot, SdkThread]]:
    state = default_state()
    options = SandboxOptions(
        fragment_bytes=FRAGMENT_BYTES,
        client_config=ClientConfig(reconnect_nonce_s=0, reconnect_interval_s=1),
    )
    app = build_sandbox(state, options)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    bot = Bot()
    base = f"http://127.0.0.1:{server.port}"
    secret = state.apps[DEFAULT_APP_ID].app_secret
    client = SdkThread(DEFAULT_APP_ID, secret, base, bot.handler())
    async with aiohttp.ClientSession() as http:
        sandbox = Sandbox(base, state, app[HUB_KEY], http)
        client.start()
        await eventually(
            lambda: sandbox.hub.longconn.connected(DEFAULT_APP_ID) == 1, woken_by=state
        )
        yield sandbox, bot, client
        await client.stop()
    await server.close()


async def test_text_and_clicks_travel_over_the_long_connection(
    wired: tuple[Sandbox, Bot, SdkThread],
) -> None:
    sandbox, bot, _client = wired
    _, sent = await sandbox.control(
        "POST",
        "/chats/oc_ops/messages",
        {"sender": "ou_alice", "text": "help", "mention_bot": True},
    )
    [event_id] = sent["event_ids"]
    await eventually(lambda: sandbox.hub.deliveries[event_id].acked, woken_by=sandbox.state)
    message = bot.messages.get_nowait()
    assert message.header.event_id == event_id
    assert json.loads(message.event.message.content) == {"text": "@_user_1 help"}
    assert sandbox.hub.deliveries[event_id].attempts[0]["transport"] == "ws"

    created = await sdk(
        lark_client(sandbox).im.v1.message.create, create_request("oc_ops", card_content(v2_card()))
    )
    message_id = created.data.message_id
    status, reply = await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": "ou_bob", "button": "confirm"}
    )
    assert status == 200
    assert (reply["status"], reply["transport"]) == ("answered", "ws")
    assert reply["toast"] == {"type": "success", "content": "Confirmed"} and reply["card_changed"]
    click = bot.clicks.get_nowait()
    assert click.event.operator.open_id == "ou_bob"
    assert click.event.context.open_message_id == message_id
    _, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert "Confirmed by ou_bob" in json.dumps(view["card"])


async def test_a_fragmented_callback_is_answered(wired: tuple[Sandbox, Bot, SdkThread]) -> None:
    sandbox, bot, _client = wired
    card = v2_card()
    value = {"action": "confirm", "note": "x" * (3 * FRAGMENT_BYTES)}
    card["body"]["elements"][1]["columns"][0]["elements"][0]["behaviors"][0]["value"] = value
    created = await sdk(
        lark_client(sandbox).im.v1.message.create, create_request("oc_ops", card_content(card))
    )
    _, reply = await sandbox.control(
        "POST",
        f"/messages/{created.data.message_id}/click",
        {"operator": "ou_alice", "button": "confirm"},
    )
    assert reply["status"] == "answered" and reply["card_changed"]
    assert bot.clicks.get_nowait().event.action.value == value


async def test_a_form_submit_reaches_the_sdk_handler_with_its_form_value(
    wired: tuple[Sandbox, Bot, SdkThread],
) -> None:
    sandbox, bot, _client = wired
    created = await sdk(
        lark_client(sandbox).im.v1.message.create,
        create_request("oc_ops", card_content(form_card(required=True))),
    )
    _, reply = await sandbox.control(
        "POST",
        f"/messages/{created.data.message_id}/click",
        {"operator": "ou_bob", "button": "reject_submit", "form": {"reason": "slippage 2%"}},
    )
    assert reply["sent"] and reply["status"] == "answered" and reply["transport"] == "ws"
    click = bot.clicks.get_nowait()  # the SDK's P2CardActionTrigger, from a ws data frame
    assert click.event.action.name == "reject_submit"
    assert click.event.action.form_value == {"reason": "slippage 2%", "ticket": "T-1"}
    assert click.event.action.value == {"action": "reject", "req": "42"}


async def test_the_sandbox_survives_a_disconnect_and_the_client_comes_back(
    wired: tuple[Sandbox, Bot, SdkThread],
) -> None:
    sandbox, _bot, _client = wired
    longconn = sandbox.hub.longconn
    status, closed = await sandbox.control("POST", f"/apps/{DEFAULT_APP_ID}/disconnect")
    assert status == 200 and closed == {"closed": 1}
    await eventually(
        lambda: longconn.connected(DEFAULT_APP_ID) == 1, deadline_s=20, woken_by=sandbox.state
    )
    created = await sdk(
        lark_client(sandbox).im.v1.message.create, create_request("oc_ops", card_content(v2_card()))
    )
    _, reply = await sandbox.control(
        "POST",
        f"/messages/{created.data.message_id}/click",
        {"operator": "ou_alice", "button": "Confirm"},
    )
    assert reply["status"] == "answered" and reply["transport"] == "ws"
