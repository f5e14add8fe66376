"""Delegation end to end (issue 35), the real bot in-process against the sandbox and the
unmodified SDK: Alice hands her right to Bob by a text command in the audience's chat; Bob
confirms for her on a card and on the web, and the card says "Bob, for Alice, until …";
after `undelegate` the same click is refused with its reason and nothing is claimed; in a
2-of-3 quorum where Bob holds Alice's right, Bob still counts once and a second person is
needed. Every grant, use and revocation is in the audit log."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from cards.strings import refusal_text
from kernel.reasons import Reason
from store import DelegationLedger, State, delegation_subject
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory, card_says
from tests.support.waiting import eventually
from tests.support.web_decide import decide_on_page, flash, forms, post, signed_in

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}
# Bob is in the chat but not an operator: only a delegation lets him decide
PAIR = {
    "name": "ops",
    "chat_id": "oc_ops",
    "operators": ["ou_alice", "ou_carol"],
    "delegation_max_days": 14,
}
TRIO = {
    "name": "ops",
    "chat_id": "oc_ops",
    "operators": ["ou_alice", "ou_bob", "ou_carol"],
    "required_confirmations": 2,
    "delegation_max_days": 14,
}


def replies_to(stack: Stack, message_id: str) -> list[str]:
    return [
        json.loads(m.content)["text"]
        for m in stack.state.messages.values()
        if m.parent_id == message_id and m.sender_type == "app"
    ]


async def command(stack: Stack, sender: str, text: str) -> str:
    """`sender` writes to the bot in the audience's chat; the bot's reply."""
    status, sent = await stack.control(
        "POST", "/chats/oc_ops/messages", {"sender": sender, "text": text, "mention_bot": True}
    )
    assert status == 201, sent
    message_id = sent["message_id"]
    await eventually(lambda: bool(replies_to(stack, message_id)), woken_by=stack.state)
    [reply] = replies_to(stack, message_id)
    return reply


async def delegation_events(stack: Stack) -> list[tuple[str, str]]:
    found = await DelegationLedger(stack.store).listed(ended=True)
    events = []
    for delegation in found:
        for entry in await stack.store.audit(delegation_subject(delegation.id)):
            events.append((entry.event, entry.actor))
    return events


async def actors(stack: Stack, operation_id: str) -> list[str]:
    return [entry.actor for entry in await stack.store.audit(operation_id)]


async def test_bob_confirms_for_alice_on_the_card_and_after_undelegate_the_click_is_refused(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack("ws", audiences=[PAIR], people=PEOPLE)
    said = await command(stack, "ou_alice", 'delegate <at user_id="ou_bob"></at> 3d')
    assert said.startswith("Delegated: Bob for Alice until "), said

    view, message_id = await stack.offered(order_request("delegated-card"))
    answer = await stack.click(message_id, "ou_bob")
    assert answer["toast"]["type"] == "success", answer
    await card_says(stack, message_id, "Bob, for Alice, until ")
    op = await stack.store.get(view["id"])
    assert op is not None and op.state in (State.CLAIMED, State.OUTCOME_OBSERVED)
    assert op.delegated["ou_bob"].on_behalf_of == "ou_alice"
    assert "operator:ou_bob for ou_alice" in await actors(stack, view["id"])

    # revoked by its holder: the same click on a card already out is refused, and says why
    later, later_card = await stack.offered(order_request("after-undelegate"))
    ended = await command(stack, "ou_alice", "undelegate")
    assert ended.startswith("Ended now:") and "Bob for Alice" in ended, ended
    refused = await stack.click(later_card, "ou_bob")
    assert refused["toast"]["type"] == "error", refused
    assert refused["toast"]["content"] == refusal_text(Reason.DELEGATION_ENDED)
    assert await stack.store.claim_count(later["id"]) == 0
    record = await stack.stored_click(later["id"], None)
    assert (record.accepted, record.reason_code) == (False, Reason.DELEGATION_ENDED.value)

    # a grant, its use, its revocation: each in the audit log, with who did it
    assert await delegation_events(stack) == [
        ("delegation_granted", "operator:ou_alice"),
        ("delegation_revoked", "operator:ou_alice"),
    ]


async def test_a_two_of_three_quorum_where_bob_holds_alices_right_still_needs_two_people(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack("ws", audiences=[TRIO], people=PEOPLE)
    said = await command(stack, "ou_alice", 'delegate <at user_id="ou_bob"></at> 1d')
    assert said.startswith("Delegated: "), said
    view, message_id = await stack.offered(order_request("quorum-delegated"))
    first = await stack.click(message_id, "ou_bob")
    assert first["toast"]["type"] == "success", first
    again = await stack.click(message_id, "ou_bob")  # as Alice's delegate this time?
    assert again["toast"]["content"] == refusal_text(Reason.ALREADY_CONFIRMED), again
    assert await stack.store.claim_count(view["id"]) == 0
    last = await stack.click(message_id, "ou_carol")
    assert last["toast"]["type"] in ("success", "info"), last

    async def claimed() -> bool:
        return await stack.store.claim_count(view["id"]) == 1

    await eventually(claimed)
    op = await stack.store.get(view["id"])
    assert op is not None and op.confirmed_by == ("ou_bob", "ou_carol")


async def test_bob_confirms_for_alice_on_the_web_and_a_form_from_before_revocation_is_refused(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", audiences=[PAIR], people=PEOPLE, web={})
    ledger = DelegationLedger(stack.store)
    ends = stack.store.clock() + timedelta(days=2)
    granted = await ledger.grant("ops", "ou_alice", "ou_bob", ends_at=ends, by="admin:cli")
    view, message_id = await stack.offered(order_request("delegated-web"))
    async with signed_in(stack, "ou_bob") as bob:
        _answer, landed = await decide_on_page(bob, view["id"])
        assert flash(landed.html) == ("tone-green", ""), landed.html
    await card_says(stack, message_id, "Bob, for Alice, until ", " on the web at")

    later, _card = await stack.offered(order_request("web-after-revoke"))
    async with signed_in(stack, "ou_bob") as bob:
        page = await bob.get(f"/ops/{later['id']}")
        form: dict[str, Any] = forms(page.html)["confirm"]  # offered while in force
        assert await ledger.revoke(granted.id, "admin:cli") is not None
        gone = await bob.get(f"/ops/{later['id']}")
        assert "confirm" not in forms(gone.html)  # no button for a right no longer held
        answer = await post(bob, form["_to"], form)
        assert answer.status == 303, answer.html
        refused = await bob.get(answer.location)
        assert flash(refused.html) == ("tone-red", Reason.DELEGATION_ENDED.value), refused.html
    assert await stack.store.claim_count(later["id"]) == 0


def delegation_forms(page: str) -> dict[str, dict[str, str]]:
    """The delegations page's forms by action (grant; revoke by delegation id)."""
    found: dict[str, dict[str, str]] = {}
    for body in re.findall(
        r'<form method="post" action="/ops/delegations"[^>]*>(.*?)</form>', page, re.S
    ):
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', body))
        key = fields["action"] if fields["action"] == "grant" else f"revoke:{fields['id']}"
        found[key] = fields
    return found


async def test_alice_delegates_and_ends_it_on_the_dashboard_and_bob_confirms_in_between(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", audiences=[PAIR], people=PEOPLE, web={})
    async with signed_in(stack, "ou_alice") as alice:
        page = await alice.get("/ops/delegations")
        assert 'id="nothing"' in page.html
        grant = delegation_forms(page.html)["grant"]
        too_long = await post(
            alice, "/ops/delegations", {**grant, "audience": "ops", "to": "ou_bob", "days": "30"}
        )
        assert too_long.status == 400 and "until: is more than 14 days away" in too_long.html
        assert await DelegationLedger(stack.store).listed() == []
        done = await post(
            alice, "/ops/delegations", {**grant, "audience": "ops", "to": "ou_bob", "days": "2"}
        )
        assert done.status == 303, done.html
        listed = await alice.get(done.location)
        assert "Delegated." in listed.html and ">Bob<" in listed.html and ">Alice<" in listed.html
    view, message_id = await stack.offered(order_request("dashboard-delegated"))
    async with signed_in(stack, "ou_bob") as bob:
        _answer, landed = await decide_on_page(bob, view["id"])
        assert flash(landed.html) == ("tone-green", ""), landed.html
    await card_says(stack, message_id, "Bob, for Alice, until ")
    async with signed_in(stack, "ou_alice") as alice:
        page = await alice.get("/ops/delegations")
        [end] = [f for k, f in delegation_forms(page.html).items() if k != "grant"]
        ended = await post(alice, "/ops/delegations", end)
        assert ended.status == 303, ended.html
        assert 'id="nothing"' in (await alice.get(ended.location)).html
    assert [event for event, _ in await delegation_events(stack)] == [
        "delegation_granted",
        "delegation_revoked",
    ]
