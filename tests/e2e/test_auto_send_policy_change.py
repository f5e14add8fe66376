"""Auto-send re-checks what a person's click re-checks (issue 30, item 3), with the real bot
against the sandbox: a time-boxed draft filed while its destination allowed auto-send; the
bot restarted with auto-send removed and a 2-confirmation rule added. A person's Confirm is
refused `policy_changed`, and the clock must not send it either: the draft waits for
people. A draft the new config does let send itself is sent by the same sweep, which shows
the sweep ran past the old draft's time. The restarted clock also disarms the old draft: its
card and the API stop promising it sends itself. Both backends."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from cards.strings import refusal_text
from kernel.reasons import Reason
from store import AUTO_OPERATOR, State
from tests.support.factories import message_request
from tests.support.stack import ACME_DESTINATION, OPS_AUDIENCE, Stack, StackFactory, settled
from tests.support.waiting import eventually

TIME_BOX_S = 60
TIMED_ACME = {**ACME_DESTINATION, "auto_send_max_s": 600}
# the witness: another counterparty's destination that still allows a time box, addressed
# through an audience the new rule does not name
BETA = {
    "name": "beta",
    "chat_id": "oc_beta",
    "counterparty": "beta-supplier",
    "ops_chat_id": "oc_ops",
    "auto_send_max_s": 600,
}
DESK = {"name": "desk", "chat_id": "oc_other", "operators": ["ou_alice", "ou_bob"]}
TWO_FOR_MESSAGES = {
    "name": "two-for-messages",
    "audiences": ["ops"],
    "kinds": ["message.send"],
    "required_confirmations": 2,
}


def timed(request_id: str, audience: str = "ops", **payload: Any) -> dict[str, Any]:
    body = message_request(request_id, audience=audience)
    body["payload"].update(auto_send_after_s=TIME_BOX_S, **payload)
    return body


def texts_in(stack: Stack, chat_id: str) -> list[str]:
    return [
        m.content
        for m in stack.state.messages.values()
        if m.chat_id == chat_id and m.msg_type == "text"
    ]


async def test_after_a_policy_change_the_clock_does_not_send_what_a_click_may_not(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack(
        "ws", audiences=[OPS_AUDIENCE, DESK], destinations=[TIMED_ACME, BETA]
    )
    status, chat = await stack.control(
        "POST", "/chats", {"chat_id": "oc_beta", "name": "Beta", "members": ["ou_alice"]}
    )
    assert status == 201, chat
    old, old_card = await stack.offered(timed("filed-before"))
    assert old["approval"]["required"] == 1 and old["auto_send_at"] is not None

    # auto-send removed from acme, and a 2-confirmation rule for the ops audience's messages
    await stack.restart(destinations=[ACME_DESTINATION, BETA], approval_rules=[TWO_FOR_MESSAGES])
    # the restarted clock withdraws its promise: card and API stop saying it sends itself
    await eventually(
        lambda: "Sends itself" not in stack.state.messages[old_card].content,
        what="the old draft's card to drop its 'Sends itself' line",
        woken_by=stack.state,
    )
    status, view = await stack.api("GET", f"/api/v1/operations/{old['id']}")
    assert status == 200 and view["auto_send_at"] is None, view
    assert view["state"] == State.AWAITING_CONFIRMATION.value
    stale = await stack.click(old_card, "ou_alice")
    assert stale["toast"]["type"] == "error"
    assert stale["toast"]["content"] == refusal_text(Reason.POLICY_CHANGED)

    witness, _card = await stack.offered(
        timed("filed-after", audience="desk", destination="beta", counterparty="beta-supplier")
    )
    stack.clock.offset += timedelta(seconds=2 * TIME_BOX_S + 1)  # both time boxes are over
    sent = await settled(stack, witness["id"], "sent")
    assert sent["decision"]["by"] == AUTO_OPERATOR

    after = await stack.store.get(old["id"])
    assert after is not None
    assert after.state is State.AWAITING_CONFIRMATION and after.confirmed_by == ()
    assert await stack.store.claim_count(old["id"]) == 0
    accepted = [c for c in await stack.store.confirmations(old["id"]) if c.accepted]
    assert accepted == []
    assert texts_in(stack, "oc_acme") == []  # nothing reached the counterparty
