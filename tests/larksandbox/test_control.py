"""Control API end to end over webhook push: clicks, answers, client errors, events, forwards."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.app.devstack import SandboxApp, point_webhooks
from larksandbox.hub import Hub
from larksandbox.state import DEFAULT_APP_ID
from tests.support.receivers import Receiver, webhook_receiver
from tests.support.sandbox import (
    Sandbox,
    card_content,
    lark_client,
    patch_request,
    sdk,
    send_card,
    v2_card,
)
from tests.support.waiting import eventually


@pytest.fixture
async def receiver(sandbox: Sandbox) -> AsyncIterator[Receiver]:
    async with webhook_receiver(sandbox.app) as found:
        status, body = await sandbox.control(
            "PATCH",
            f"/apps/{DEFAULT_APP_ID}",
            {"card_url": f"{found.url}/card", "event_url": f"{found.url}/events"},
        )
        assert status == 200, body
        yield found


async def offered_card(sandbox: Sandbox) -> str:
    created = await send_card(lark_client(sandbox))
    assert created.success()
    message_id: str = created.data.message_id
    return message_id


def confirmed_card() -> dict[str, Any]:
    card = v2_card("Confirmed", buttons=False)
    card["header"]["template"] = "green"
    card["body"]["elements"].append({"tag": "markdown", "content": "Confirmed by Alice"})
    return card


async def test_a_click_reaches_the_sdk_and_its_toast_and_card_are_applied(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    message_id = await offered_card(sandbox)
    receiver.answer = lambda data: {
        "toast": {"type": "success", "content": f"Confirmed by {data.event.operator.open_id}"},
        "card": {"type": "raw", "data": confirmed_card()},
    }
    status, reply = await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": "ou_alice", "button": "confirm"}
    )
    assert status == 200, reply
    assert reply["status"] == "answered" and reply["transport"] == "webhook"
    assert reply["toast"] == {"type": "success", "content": "Confirmed by ou_alice"}
    assert reply["card_changed"] is True and "client_error" not in reply
    data = receiver.cards.get_nowait()
    assert data.event.action.value == {"action": "confirm"}
    assert data.event.context.open_message_id == message_id
    assert data.event.context.open_chat_id == "oc_ops"
    assert data.header.tenant_key == "sandbox-tenant" and data.header.app_id == DEFAULT_APP_ID
    _, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert view["card"] == confirmed_card()
    assert [rev["source"] for rev in view["history"]] == ["create", "callback"]
    assert view["clicks"][0]["operator"] == "ou_alice" and view["clicks"][0]["card_changed"]


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ("slow", 200341),
        ("http_503", 200671),
        ("not_json", 200672),
        ("bad_card", 200673),
        ("downgrade", 200830),
        ("bad_toast", 200672),
    ],
)
async def test_bad_answers_become_the_client_errors_users_see_and_change_nothing(
    sandbox: Sandbox, receiver: Receiver, setup: str, code: int
) -> None:
    message_id = await offered_card(sandbox)
    if setup == "slow":
        receiver.answer = lambda _d: time.sleep(1.5) or {}  # the fixture's deadline is 1 s
    elif setup == "http_503":
        receiver.override_status = 503
    elif setup == "not_json":
        receiver.override_body = b"<html>oops</html>"
    elif setup == "bad_card":
        receiver.answer = lambda _d: {"card": {"type": "raw", "data": "not a card"}}
    elif setup == "downgrade":
        receiver.answer = lambda _d: {
            "card": {"type": "raw", "data": {"config": {"update_multi": True}, "elements": []}}
        }
    else:
        receiver.answer = lambda _d: {"toast": {"type": "fireworks", "content": "!"}}
    _, before = await sandbox.control("GET", f"/messages/{message_id}")
    status, reply = await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": "ou_bob", "button": "Reject"}
    )
    assert status == 200
    assert reply["client_error"] == code and reply["client_error_msg"]
    assert reply["card_changed"] is False and reply["toast"] is None
    _, after = await sandbox.control("GET", f"/messages/{message_id}")
    assert after["content"] == before["content"] and len(after["history"]) == 1


async def test_no_subscription_and_unreachable_url_are_client_errors(sandbox: Sandbox) -> None:
    message_id = await offered_card(sandbox)
    _, reply = await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": "ou_alice", "button": "confirm"}
    )
    assert (reply["status"], reply["client_error"]) == ("undeliverable", 200340)
    sandbox.app.card_url = "http://127.0.0.1:9/card"  # discard port: nothing listens
    _, reply = await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": "ou_alice", "button": "confirm"}
    )
    assert reply["client_error"] == 200342


async def test_click_input_is_checked_before_anything_is_pushed(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    message_id = await offered_card(sandbox)
    cases = [
        ({"operator": "ou_nobody", "button": "confirm"}, 422, "unknown_user"),
        ({"operator": "ou_eve", "button": "confirm"}, 403, "not_a_member"),
        ({"operator": "ou_alice", "button": "launch"}, 422, "unknown_button"),
        ({"operator": "ou_alice", "value": "confirm"}, 422, "invalid_value"),
    ]
    for body, status, code in cases:
        got_status, reply = await sandbox.control("POST", f"/messages/{message_id}/click", body)
        assert (got_status, reply["error"]["code"]) == (status, code), body
    disabled = v2_card()
    disabled["body"]["elements"][1]["columns"][0]["elements"][0]["disabled"] = True
    client = lark_client(sandbox)
    patched = await sdk(
        client.im.v1.message.patch,
        patch_request(message_id, card_content(disabled)),
    )
    assert patched.success()
    got_status, reply = await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": "ou_alice", "button": "confirm"}
    )
    assert (got_status, reply["error"]["code"]) == (409, "button_disabled")
    assert receiver.cards.empty(), "nothing reached the app"


async def test_a_forwarded_card_is_a_new_message_whose_clicks_name_the_copy(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    card = v2_card()
    card["config"]["enable_forward_interaction"] = True  # forwarded copies stay clickable
    created = await send_card(lark_client(sandbox), card)
    message_id = created.data.message_id
    status, copy = await sandbox.control(
        "POST", f"/messages/{message_id}/forward", {"chat_id": "oc_other", "by": "ou_mallory"}
    )
    assert status == 201 and copy["message_id"] != message_id
    assert copy["chat_id"] == "oc_other" and copy["forwarded_from"] == message_id
    await sandbox.control(
        "POST",
        f"/messages/{copy['message_id']}/click",
        {"operator": "ou_mallory", "button": "confirm"},
    )
    data = receiver.cards.get_nowait()
    assert data.event.context.open_message_id == copy["message_id"]
    assert data.event.context.open_chat_id == "oc_other"


async def test_a_forwarded_copy_is_clickable_only_if_the_card_allows_it(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    message_id = await offered_card(sandbox)  # no config.enable_forward_interaction
    _, copy = await sandbox.control(
        "POST", f"/messages/{message_id}/forward", {"chat_id": "oc_other", "by": "ou_mallory"}
    )
    path = f"/messages/{copy['message_id']}/click"
    status, refused = await sandbox.control(
        "POST", path, {"operator": "ou_mallory", "button": "confirm"}
    )
    assert status == 409 and refused["error"]["code"] == "forwarded_card_not_interactive"
    assert receiver.cards.empty(), "nothing reached the app"

    # the sandbox switch: every copy clickable, as if each card set the property
    status, faults = await sandbox.control("POST", "/faults", {"forwarded_cards_interactive": True})
    assert status == 200 and faults["forwarded_cards_interactive"] is True
    status, reply = await sandbox.control(
        "POST", path, {"operator": "ou_mallory", "button": "confirm"}
    )
    assert status == 200 and reply["status"] == "answered", reply
    assert receiver.cards.get_nowait().event.context.open_message_id == copy["message_id"]
    status, error = await sandbox.control("POST", "/faults", {"forwarded_cards_interactive": 1})
    assert status == 422 and error["error"]["code"] == "invalid_fault"

    no_forward = v2_card()
    no_forward["config"]["enable_forward"] = False
    closed_id = (await send_card(lark_client(sandbox), no_forward)).data.message_id
    status, error = await sandbox.control(
        "POST", f"/messages/{closed_id}/forward", {"chat_id": "oc_other", "by": "ou_mallory"}
    )
    assert status == 409 and error["error"]["code"] == "forward_disabled"


async def test_text_reaches_the_app_when_mentioned_and_unacked_events_are_re_pushed(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    hub: Hub = sandbox.hub
    status, settings = await sandbox.control("POST", "/dispatch", {"time_scale": 0.001})
    assert status == 200 and settings["time_scale"] == 0.001  # 15 s -> 15 ms
    status, plain = await sandbox.control(
        "POST", "/chats/oc_ops/messages", {"sender": "ou_bob", "text": "just chatting"}
    )
    assert status == 201 and plain["event_ids"] == []
    receiver.fail_events = 2
    status, sent = await sandbox.control(
        "POST",
        "/chats/oc_ops/messages",
        {"sender": "ou_bob", "text": "status 01ABC", "mention_bot": True},
    )
    assert status == 201
    [event_id] = sent["event_ids"]
    await eventually(lambda: hub.deliveries[event_id].acked, woken_by=sandbox.state)
    attempts = hub.deliveries[event_id].attempts
    assert [a["acked"] for a in attempts] == [False, False, True]
    data = receiver.messages.get_nowait()
    assert data.header.event_id == event_id
    assert data.event.message.message_id == sent["message_id"]
    assert json.loads(data.event.message.content) == {"text": "@_user_1 status 01ABC"}
    assert data.event.message.mentions[0].id.open_id == sandbox.app.bot_open_id
    assert data.event.sender.sender_id.open_id == "ou_bob"


async def test_an_event_nobody_acks_is_given_up_after_four_retries(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    hub: Hub = sandbox.hub
    hub.time_scale = 0.0001
    receiver.fail_events = 100
    _, sent = await sandbox.control(
        "POST", "/chats/oc_ops/messages", {"sender": "ou_bob", "text": "hi", "mention_bot": True}
    )
    [event_id] = sent["event_ids"]
    await eventually(lambda: hub.deliveries[event_id].gave_up, woken_by=sandbox.state)
    assert len(hub.deliveries[event_id].attempts) == 5  # the first push and 4 retries
    _, listing = await sandbox.control("GET", "/deliveries")
    assert any(item["event_id"] == event_id and item["gave_up"] for item in listing["items"])


async def test_users_and_chats_are_created_and_validated(sandbox: Sandbox) -> None:
    status, user = await sandbox.control("POST", "/users", {"open_id": "ou_dave", "name": "Dave"})
    assert status == 201 and user["tenant_key"] == "sandbox-tenant"
    status, error = await sandbox.control("POST", "/users", {"open_id": "dave", "name": "Dave"})
    assert status == 422 and "open_id" in error["error"]["message"]
    status, chat = await sandbox.control(
        "POST", "/chats", {"chat_id": "oc_new", "name": "New", "members": ["ou_dave"]}
    )
    assert status == 201 and chat["apps"] == [DEFAULT_APP_ID]
    status, error = await sandbox.control(
        "POST", "/chats", {"chat_id": "oc_bad", "members": ["ou_ghost"]}
    )
    assert status == 422
    _, chats = await sandbox.control("GET", "/chats")
    assert {c["chat_id"] for c in chats["items"]} >= {"oc_ops", "oc_acme", "oc_other", "oc_new"}


async def test_saving_the_bots_urls_tries_a_missed_challenge_again(sandbox: Sandbox) -> None:
    app = sandbox.app
    given = SandboxApp(
        sandbox.base_url,
        app.app_id,
        app.app_secret,
        app.encrypt_key,
        app.verification_token,
        app.tenant_key,
    )
    async with webhook_receiver(app) as receiver:
        receiver.fail_events = 1  # the first challenge is not echoed
        await point_webhooks(given, receiver.url)
        assert (app.event_url, app.card_url) == (
            f"{receiver.url}/lark/events",
            f"{receiver.url}/lark/card",
        )
        app.event_url = app.card_url = ""
        receiver.fail_events = 3  # as many misses as tries: refused, nothing saved
        with pytest.raises(RuntimeError, match="url_verification_failed"):
            await point_webhooks(given, receiver.url, attempts=3)
        assert (app.event_url, app.card_url) == ("", "")


async def test_url_verification_is_required_to_save_a_url(sandbox: Sandbox) -> None:
    status, reply = await sandbox.control(
        "PATCH", f"/apps/{DEFAULT_APP_ID}", {"card_url": "http://127.0.0.1:9/card"}
    )
    assert status == 422 and reply["error"]["code"] == "url_verification_failed"
    # the developer is told why: nothing listens on port 9
    assert "card_url" in reply["error"]["message"] and "Connect" in reply["error"]["message"]
    assert sandbox.app.card_url == ""
