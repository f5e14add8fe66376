"""A reminder before expiry: once, in the card's thread, naming only those who may still act;
never for an operation already decided; and expiry is announced as expired, not rejected."""

from __future__ import annotations

import re
from datetime import timedelta

from store.lifecycle import State
from tests.support.factories import order_request
from tests.support.proposer_routes import replies_to
from tests.support.stack import StackFactory, button_value, card_says
from tests.support.waiting import eventually

REMINDING = {
    "name": "ops",
    "chat_id": "oc_ops",
    "operators": ["ou_alice", "ou_bob", "ou_carol"],
    "remind_before_s": 300,
}
TWO = {"name": "two", "kinds": ["finance.order"], "required_confirmations": 2}


def mention(open_id: str) -> str:
    return f'<at user_id="{open_id}"></at>'


async def test_one_reminder_names_who_has_not_confirmed_and_expiry_says_expired(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack("ws", audiences=[REMINDING], approval_rules=[TWO])
    waiting, waiting_card = await stack.offered(order_request("remind-me", expires_in_s=900))
    decided, decided_card = await stack.offered(order_request("decided", expires_in_s=900))
    later, later_card = await stack.offered(order_request("later", expires_in_s=1500))
    await stack.click(waiting_card, "ou_alice")  # 1 of 2
    await stack.click(decided_card, "ou_bob", "reject")
    assert replies_to(stack, waiting_card) == []

    stack.clock.offset += timedelta(seconds=601)  # past expiry - 300 s for the first two
    await eventually(
        lambda: bool(replies_to(stack, waiting_card)), deadline_s=30, woken_by=stack.state
    )
    (reminder,) = replies_to(stack, waiting_card)
    assert mention("ou_bob") in reminder and mention("ou_carol") in reminder
    assert mention("ou_alice") not in reminder  # she has confirmed
    assert "1 of 2 confirmed" in reminder
    # 299 s were left at the shift, less however long the machine took to get here
    assert re.search(r"expires in [0-4] min \(", reminder), reminder

    # the third one's reminder comes later: by the time it is in, the first has had many
    # looks and still one reminder; the decided one never had any
    stack.clock.offset += timedelta(seconds=600)
    await eventually(
        lambda: bool(replies_to(stack, later_card)), deadline_s=30, woken_by=stack.state
    )
    assert len(replies_to(stack, waiting_card)) == 1
    assert replies_to(stack, decided_card) == []
    assert all(mention(each) in replies_to(stack, later_card)[0] for each in REMINDING["operators"])

    # past expiry: the card and the API say expired, never rejected
    async def expired() -> bool:
        op = await stack.store.get(waiting["id"])
        return op is not None and op.state is State.EXPIRED

    await eventually(expired, deadline_s=30)
    await card_says(stack, waiting_card, "Expired")
    assert "Rejected" not in str(stack.card(waiting_card))
    _, view = await stack.api("GET", f"/api/v1/operations/{waiting['id']}")
    assert view["state"] == "expired" and view["decision"] is None
    assert later["id"] != decided["id"]


ESCALATING = {**REMINDING, "operators": ["ou_alice", "ou_bob"], "escalate_to": "leads"}
LEADS = {"name": "leads", "chat_id": "oc_leads", "operators": ["ou_dave"]}


async def test_an_escalated_copy_decides_like_the_original_and_both_cards_end_alike(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack("ws", audiences=[ESCALATING, LEADS])
    for path, body in (
        ("/users", {"open_id": "ou_dave", "name": "Dave"}),
        ("/chats", {"chat_id": "oc_leads", "name": "Leads", "members": ["ou_dave"]}),
    ):
        status, made = await stack.control("POST", path, body)
        assert status == 201, made
    view, original = await stack.offered(order_request("escalate-me", expires_in_s=900))
    assert view["approval"]["approvers"] == ["ou_alice", "ou_bob", "ou_dave"]
    confirm = button_value(stack, original)  # for a click from a client showing it still

    stack.clock.offset += timedelta(seconds=601)
    await eventually(lambda: bool(replies_to(stack, original)), deadline_s=30, woken_by=stack.state)

    def copy_in_leads() -> str | None:
        return next(
            (
                m.message_id
                for m in stack.state.messages.values()
                if m.chat_id == "oc_leads" and m.msg_type == "interactive"
            ),
            None,
        )

    await eventually(lambda: copy_in_leads() is not None, deadline_s=30, woken_by=stack.state)
    copy = copy_in_leads()
    assert copy is not None and copy != original

    reply = await stack.click(copy, "ou_dave")
    assert reply["toast"]["type"] == "success", reply
    assert await stack.store.claim_count(view["id"]) == 1
    for card in (original, copy):  # both patched to the end
        await card_says(stack, card, "Confirmed by <at id=ou_dave></at>", "Filled")

    late = await stack.click(original, "ou_bob", value=confirm)
    assert late["toast"]["type"] == "error"  # already claimed, through the copy
    assert await stack.store.claim_count(view["id"]) == 1
