"""Signal linkage (issue 17, item 6): what the counterparty writes in a destination's chat is
recorded as an inbound signal and never answered; a draft names the signal it answers
(`signal_id`): the card and the API show the link, an unknown id (or another destination's)
is 422, and the dashboard shows inbound -> draft -> sent with the time each step took.
Both backends."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from larksandbox import DEFAULT_APP_ID, User
from store import signal_of
from tests.support.factories import message_request
from tests.support.stack import ACME_DESTINATION, Stack, StackFactory, card_says, settled
from tests.support.waiting import eventually

QUESTION = "Hi, can you confirm the delivery date for PO 7731?"
# a second destination, in another chat: its signals answer none of acme's drafts
BETA = {**ACME_DESTINATION, "name": "beta", "chat_id": "oc_other"}


async def counterparty_writes(stack: Stack, chat_id: str, text: str) -> str:
    status, sent = await stack.control(
        "POST", f"/chats/{chat_id}/messages", {"sender": "ou_carl", "text": text}
    )
    assert status == 201, sent
    message_id: str = sent["message_id"]
    return message_id


async def recorded(stack: Stack, message_id: str) -> bool:
    return await signal_of(stack.store, message_id) is not None


def answering(request_id: str, signal_id: str) -> dict[str, Any]:
    body = message_request(request_id)
    body["payload"]["signal_id"] = signal_id
    body["payload"]["text"] = "Delivery is on Friday, dock 3."
    return body


async def test_a_draft_linked_to_an_inbound_message_shows_the_link_end_to_end(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack(
        "ws", destinations=[ACME_DESTINATION, BETA], people={"ou_carl": "Carl (Acme)"}
    )
    # Carl is on the counterparty's side, in both its chats; the app reads all group messages
    stack.state.users["ou_carl"] = User("ou_carl", "Carl", "acme-tenant")
    for chat_id in ("oc_acme", "oc_other"):
        stack.state.chats[chat_id].members.append("ou_carl")
    status, _ = await stack.control("PATCH", f"/apps/{DEFAULT_APP_ID}", {"group_msg_scope": True})
    assert status == 200

    question = await counterparty_writes(stack, "oc_acme", QUESTION)
    elsewhere = await counterparty_writes(stack, "oc_other", "unrelated")
    await eventually(lambda: recorded(stack, question))
    await eventually(lambda: recorded(stack, elsewhere))
    signal = await signal_of(stack.store, question)
    assert signal is not None
    assert (signal.destination, signal.sender_open_id, signal.text) == ("acme", "ou_carl", QUESTION)
    # the bot said nothing in the counterparty's chats
    assert not [
        m
        for m in stack.state.messages.values()
        if m.chat_id in ("oc_acme", "oc_other") and m.sender_type == "app"
    ]

    # an unknown id, and a signal of another destination, are refused; nothing is stored
    for signal_id in ("om_never_seen", elsewhere):
        status, refused = await stack.post("/api/v1/operations", answering("nope", signal_id))
        assert status == 422 and refused["error"]["code"] == "unknown_signal", refused
        [field] = refused["error"]["fields"]
        assert field["field"] == "payload.signal_id" and signal_id in field["reason"]
    assert not (await stack.store.list_operations(limit=10)).items

    stack.clock.offset += timedelta(minutes=2)  # the agent drafts its answer two minutes later
    view, card = await stack.offered(answering("linked", question))
    assert view["terms"]["signal"] == {
        "id": question,
        "sender": "ou_carl",
        "received_at": view["terms"]["signal"]["received_at"],
    }
    await card_says(stack, card, "Answers", f"{question} from ou_carl", QUESTION)

    stack.clock.offset += timedelta(minutes=3)  # an operator approves it three minutes later
    await stack.click(card, "ou_alice")
    await settled(stack, view["id"], "sent")
    async with stack.http.get(f"{stack.bot_url}/ops/{view['id']}") as response:
        assert response.status == 200
        page = await response.text()
    assert f"{question} from Carl (Acme)" in page
    assert "drafted 2 min later" in page and "sent 3 min after the draft" in page
    acme = [
        json.loads(m.content)["text"]
        for m in stack.state.messages.values()
        if m.chat_id == "oc_acme" and m.sender_type == "app"
    ]
    assert acme == ["Delivery is on Friday, dock 3."]


async def test_without_the_group_message_scope_nothing_is_recorded(
    make_stack: StackFactory,
) -> None:
    # Lark delivers only messages that mention the bot unless the app may read all of them
    stack: Stack = await make_stack("ws")
    stack.state.users["ou_carl"] = User("ou_carl", "Carl", "acme-tenant")
    stack.state.chats["oc_acme"].members.append("ou_carl")
    status, sent = await stack.control(
        "POST", "/chats/oc_acme/messages", {"sender": "ou_carl", "text": QUESTION}
    )
    assert status == 201 and sent["event_ids"] == []
    assert await signal_of(stack.store, sent["message_id"]) is None
