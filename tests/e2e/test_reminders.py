"""A reminder before expiry: once, in the card's thread, naming only those who may still act;
never for an operation already decided; and expiry is announced as expired, not rejected.

The bot's clock (the store's, `stack.clock`) is the one reminders and expiry go by: the
tests move it, not the sandbox's, which only dates the messages Lark keeps."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from store import Operation, State
from tests.support.factories import order_request
from tests.support.proposer_routes import replies_to
from tests.support.stack import Stack, StackFactory, button_value, card_says
from tests.support.waiting import eventually

REMIND_BEFORE_S = 300
REMINDING = {
    "name": "ops",
    "chat_id": "oc_ops",
    "operators": ["ou_alice", "ou_bob", "ou_carol"],
    "remind_before_s": REMIND_BEFORE_S,
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
    assert replies_to(stack, later_card) == []  # its time is 600 s further

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


async def stored(stack: Stack, operation_id: str) -> Operation:
    op = await stack.store.get(operation_id)
    assert op is not None
    return op


async def remind_at(stack: Stack, operation_id: str) -> datetime:
    """When its reminder falls due: remind_before_s before it expires."""
    op = await stored(stack, operation_id)
    return op.envelope.expires_at - timedelta(seconds=REMIND_BEFORE_S)


def move_clock_to(stack: Stack, moment: datetime) -> None:
    stack.clock.offset += moment - stack.clock()


async def test_a_reminder_comes_at_its_time_not_before_and_once(make_stack: StackFactory) -> None:
    """Each reminder due remind_before_s before its operation's expiry. Another operation's
    reminder, due a minute earlier, shows the worker has looked while this one's time had
    not come (the clock stands still): nothing then; at its time, one; later looks, still
    one."""
    stack = await make_stack("ws", audiences=[REMINDING], approval_rules=[TWO])
    waiting, waiting_card = await stack.offered(order_request("on-time", expires_in_s=900))
    earlier, earlier_card = await stack.offered(order_request("a-minute-early", expires_in_s=840))
    later, later_card = await stack.offered(order_request("two-minutes-late", expires_in_s=1020))
    await stack.click(waiting_card, "ou_alice")  # 1 of 2
    due = await remind_at(stack, waiting["id"])
    earlier_due = await remind_at(stack, earlier["id"])
    later_due = await remind_at(stack, later["id"])
    assert earlier_due < due - timedelta(seconds=50) and later_due > due + timedelta(seconds=100)

    # the earlier one is due, this one not for another ~minute: the worker looks, and leaves it
    # (time stands still meanwhile, however long the machine takes to look)
    stack.clock.freeze()
    move_clock_to(stack, earlier_due + timedelta(seconds=1))
    await eventually(
        lambda: bool(replies_to(stack, earlier_card)), deadline_s=30, woken_by=stack.state
    )
    assert replies_to(stack, waiting_card) == []
    assert stack.clock() < due

    # its time: one reminder, naming those who have not confirmed
    move_clock_to(stack, due)
    await eventually(
        lambda: bool(replies_to(stack, waiting_card)), deadline_s=30, woken_by=stack.state
    )
    (reminder,) = replies_to(stack, waiting_card)
    assert mention("ou_bob") in reminder and mention("ou_carol") in reminder
    assert mention("ou_alice") not in reminder
    assert re.search(r"expires in [0-5] min \(", reminder), reminder
    assert replies_to(stack, later_card) == []

    # the worker's later looks (the later one reminded) leave each at one
    move_clock_to(stack, later_due + timedelta(seconds=1))
    await eventually(
        lambda: bool(replies_to(stack, later_card)), deadline_s=30, woken_by=stack.state
    )
    counts = [len(replies_to(stack, card)) for card in (earlier_card, waiting_card, later_card)]
    assert counts == [1, 1, 1]
    assert (await stored(stack, waiting["id"])).state is State.AWAITING_CONFIRMATION


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


async def add_leads(stack: Stack) -> None:
    """Dave, and the leads' chat he is in, in the sandbox's tenant."""
    for path, body in (
        ("/users", {"open_id": "ou_dave", "name": "Dave"}),
        ("/chats", {"chat_id": "oc_leads", "name": "Leads", "members": ["ou_dave"]}),
    ):
        status, made = await stack.control("POST", path, body)
        assert status == 201, made


def escalated_copy(stack: Stack) -> str | None:
    return next(
        (
            m.message_id
            for m in stack.state.messages.values()
            if m.chat_id == "oc_leads" and m.msg_type == "interactive"
        ),
        None,
    )


async def test_a_quorum_is_reached_by_one_click_on_the_original_and_one_on_the_copy(
    make_stack: StackFactory,
) -> None:
    """Two of Alice, Bob and Dave: the copy is out, Alice confirms on the original and the
    copy shows it; Dave's confirm on the copy is the second, and claims; both cards end alike."""
    quorum = {**ESCALATING, "required_confirmations": 2}
    stack = await make_stack("ws", audiences=[quorum, LEADS])
    await add_leads(stack)
    view, original = await stack.offered(order_request("escalate-two", expires_in_s=900))
    assert view["approval"]["required"] == 2
    assert view["approval"]["approvers"] == ["ou_alice", "ou_bob", "ou_dave"]

    stack.clock.offset += timedelta(seconds=601)
    await eventually(lambda: escalated_copy(stack) is not None, deadline_s=30, woken_by=stack.state)
    copy = escalated_copy(stack)
    assert copy is not None and copy != original
    assert "confirmed:" not in str(stack.card(copy))  # nobody yet

    counted = await stack.click(original, "ou_alice")
    assert counted["toast"]["type"] == "success", counted
    assert await stack.store.claim_count(view["id"]) == 0
    # the copy is patched with the counted confirmation, as the original is
    for card in (original, copy):
        await card_says(stack, card, "1 of 2 confirmed: <at id=ou_alice></at>")

    last = await stack.click(copy, "ou_dave")
    assert last["toast"]["type"] == "success", last
    assert await stack.store.claim_count(view["id"]) == 1
    for card in (original, copy):
        await card_says(
            stack, card, "Confirmed by <at id=ou_alice></at>, <at id=ou_dave></at>", "Filled"
        )
    _, done = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert done["approval"]["confirmed_by"] == ["ou_alice", "ou_dave"]
    assert len(done["outcomes"]) == 1
