"""Steer a draft (issue 17, item 3): an operator presses "Request changes" with a note; the
draft closes as `changes_requested`, the note reaches the proposer (its conversation reply,
its signed webhook `detail.note`, the API), the agent's re-file is a new draft, a click on
the old card is refused, and the new card, confirmed, sends exactly one message. Request
changes needs a note, and exists only on a draft: a forged one on an order's card changes
nothing. Both backends."""

from __future__ import annotations

import json
from typing import Any

from kernel.reasons import Reason
from store import State
from tests.support.factories import message_request, order_request
from tests.support.proposer_routes import Receiver, conversation, replies_to, with_routes
from tests.support.stack import (
    CALLBACK_SECRET,
    Stack,
    StackFactory,
    button_value,
    card_says,
    envelope_for,
    push,
    settled,
)
from tests.support.waiting import eventually
from workers.webhook_signature import verify

NOTE = "Say Saturday, not Friday; the dock is closed on Friday."


def sent_to_acme(stack: Stack) -> list[str]:
    return [
        json.loads(m.content)["text"]
        for m in stack.state.messages.values()
        if m.chat_id == "oc_acme"
    ]


async def test_request_changes_returns_the_note_and_only_the_re_filed_draft_is_sent(
    make_stack: StackFactory, receiver: Receiver
) -> None:
    stack: Stack = await make_stack("ws")
    thread = await conversation(stack)
    first = with_routes(message_request("steer-1"), conversation_id=thread, url=receiver.url)
    view, old_card = await stack.offered(first)

    stale_buttons = {b: button_value(stack, old_card, b) for b in ("confirm", "reject")}

    # a note is required: pressed with an empty box, nothing changes
    empty = await stack.click(old_card, "ou_bob", "request_changes", form={"reason": "  "})
    assert empty["toast"]["type"] == "error"
    assert "Write what should change" in json.dumps(empty["toast"])
    assert (await stack.store.get(view["id"])).state is State.AWAITING_CONFIRMATION

    reply = await stack.click(old_card, "ou_bob", "request_changes", form={"reason": NOTE})
    assert reply["toast"]["type"] == "success", reply
    op = await stack.store.get(view["id"])
    assert op is not None and op.state is State.CHANGES_REQUESTED
    assert op.decision_reason == NOTE
    await card_says(stack, old_card, "Sent back by ou_bob for changes", f"Changes asked: {NOTE}")

    # the note goes back to the proposer: API, signed webhook, conversation reply
    _, api_view = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert api_view["state"] == "changes_requested"
    assert (api_view["decision"]["action"], api_view["decision"]["reason"]) == (
        "request_changes",
        NOTE,
    )
    await eventually(lambda: _true(len(receiver.accepted) == 1), deadline_s=15)
    [hook] = receiver.accepted
    assert verify(CALLBACK_SECRET, hook.headers, hook.body)
    assert (hook.json["outcome"], hook.json["detail"]["note"]) == ("changes_requested", NOTE)
    assert hook.json["detail"]["by"] == "ou_bob"
    await eventually(lambda: len(replies_to(stack, thread)) == 1, woken_by=stack.state)
    assert NOTE in replies_to(stack, thread)[0]

    # the agent re-files the rewritten draft: a new operation, a new card
    second = message_request("steer-2")
    second["payload"]["text"] = "Hello Acme, delivery on Saturday."
    newer, new_card = await stack.offered(second)
    assert newer["id"] != view["id"] and new_card != old_card

    # the old card decides nothing any more: its buttons, pressed in a client that still
    # shows them (Lark sends what the client had)
    for value in stale_buttons.values():
        refused = await push(stack, envelope_for(stack, old_card, "ou_alice", value))
        assert refused["answer"]["toast"]["type"] == "error", refused
    expected = sorted([Reason.NOTE_REQUIRED.value] + [Reason.CHANGES_REQUESTED.value] * 2)
    await eventually(lambda: refusal_codes(stack, view["id"], expected))

    await stack.click(new_card, "ou_alice")
    await settled(stack, newer["id"], "sent")
    assert sent_to_acme(stack) == ["Hello Acme, delivery on Saturday."]
    assert await stack.store.claim_count(view["id"]) == 0


async def test_request_changes_forged_on_an_orders_card_changes_nothing(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    view, message_id = await stack.offered(order_request("no-steer"))
    value: dict[str, Any] = {**button_value(stack, message_id, "confirm")}
    value["action"] = "request_changes"  # the order's own op and digest: only the button is not
    envelope = envelope_for(stack, message_id, "ou_bob", value)
    envelope["event"]["action"]["form_value"] = {"reason": NOTE}
    reply = await push(stack, envelope)
    assert reply["status"] == "answered", reply
    assert reply["answer"]["toast"]["type"] == "error", reply
    op = await stack.store.get(view["id"])
    assert op is not None and op.state is State.AWAITING_CONFIRMATION
    # the refusal is on record (written after the answer)
    await eventually(lambda: refusal_codes(stack, view["id"], [Reason.ACTION_UNKNOWN.value]))
    assert await stack.store.claim_count(view["id"]) == 0


async def refusal_codes(stack: Stack, operation_id: str, expected: list[str]) -> bool:
    """Whether the operation's refused clicks on record are exactly `expected` (sorted)."""
    records = await stack.store.confirmations(operation_id)
    return sorted(c.reason_code or "" for c in records if not c.accepted) == expected


async def _true(value: bool) -> bool:
    return value
