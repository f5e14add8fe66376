"""Where a decision was made: the Lark card, or the web (the dashboard, signed in with Lark).

A web decision has no chat and no message: the session the dashboard checked stands in for
the card's provenance. Everything else the database conditions a card click on still holds
(state, digest, expiry, one of the operators or approvers, not the requester, the policy
current), the entry is recorded on the click and on the decision, and a web click racing a
card click for the same operation claims it exactly once. Both backends.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from store.authority.envelope import Approval, Audience, Source
from store.authority.records import Operation
from store.authority.store import Store
from store.claims.click_writes import ClickWrites, FirstWrite
from store.claims.decisions import Claimed, Click, Counted, Decided
from store.execution.reads import view
from store.lifecycle import State
from tests.support.factories import offered

ENVELOPE: dict[str, Any] = {"header": {"event_type": "card.action.trigger"}}
TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))
RACES = 10


def web(op: Operation, action: str, operator: str, key: str, **more: Any) -> Click:
    return Click(op.id, action, op.confirm_digest, operator, event_id=key, entry="web", **more)


def card(op: Operation, action: str, operator: str, key: str) -> Click:
    return Click(
        op.id, action, op.confirm_digest, operator, "oc_ops", op.card_message_id, event_id=key
    )


async def decide(store: Store, click: Click, kind: str = "web") -> FirstWrite:
    writes = ClickWrites(store, kind)
    assert click.event_id is not None
    return await writes.outcome(writes.enqueue(click.event_id, ENVELOPE, click))


async def test_a_web_confirmation_claims_and_records_its_entry(store: Store) -> None:
    op = await offered(store)
    first = await decide(store, web(op, "confirm", "ou_alice", "form-1"))
    assert isinstance(first.decided, Claimed)
    claimed = first.decided.operation
    assert (claimed.state, claimed.decided_by, claimed.decision_entry) == (
        State.CLAIMED,
        "ou_alice",
        "web",
    )
    [confirmation] = await store.confirmations(op.id)
    assert (confirmation.entry, confirmation.chat_id, confirmation.message_id) == (
        "web",
        None,
        None,
    )
    decision = (await view(store, claimed)).decision
    assert decision is not None
    assert (decision.by, decision.entry) == ("ou_alice", "web")
    assert await store.claim_count(op.id) == 1


async def test_a_card_decision_is_recorded_as_the_cards(store: Store) -> None:
    op = await offered(store)
    first = await decide(store, card(op, "reject", "ou_bob", "ev-1"), kind="callback")
    assert isinstance(first.decided, Decided)
    assert first.decided.operation.decision_entry == "lark"
    [confirmation] = await store.confirmations(op.id)
    assert confirmation.entry == "lark"


async def test_a_web_reject_keeps_its_reason_and_entry(store: Store) -> None:
    op = await offered(store)
    first = await decide(store, web(op, "reject", "ou_bob", "form-2", reason="too large"))
    assert isinstance(first.decided, Decided)
    rejected = first.decided.operation
    assert (rejected.state, rejected.decision_reason, rejected.decision_entry) == (
        State.REJECTED,
        "too large",
        "web",
    )


@pytest.mark.parametrize("action", ["confirm", "reject"])
@pytest.mark.parametrize(
    ("operator", "source"),
    [
        pytest.param("ou_mallory", None, id="not-an-operator"),
        pytest.param("ou_alice", Source("dev-agent", "mine", "ou_alice"), id="the-requester"),
    ],
)
async def test_the_web_changes_nothing_for_who_the_card_would_refuse(
    store: Store, action: str, operator: str, source: Source | None
) -> None:
    op = await offered(store, **({"source": source} if source else {}))
    first = await decide(store, web(op, action, operator, f"form-{action}"))
    assert first.decided is None
    assert await store.get(op.id) == op
    assert await store.claim_count(op.id) == 0


async def test_a_stale_digest_or_a_closed_operation_changes_nothing_on_the_web(
    store: Store,
) -> None:
    op = await offered(store)
    stale = Click(op.id, "confirm", "0" * 64, "ou_alice", event_id="form-stale", entry="web")
    assert (await decide(store, stale)).decided is None
    assert (await decide(store, web(op, "reject", "ou_bob", "form-close"))).decided is not None
    assert (await decide(store, web(op, "confirm", "ou_alice", "form-late"))).decided is None
    assert await store.claim_count(op.id) == 0


async def test_a_replayed_web_form_records_one_decision(store: Store) -> None:
    op = await offered(store)
    first = await decide(store, web(op, "confirm", "ou_alice", "form-once"))
    again = await decide(store, web(op, "confirm", "ou_alice", "form-once"))
    assert isinstance(first.decided, Claimed) and first.received.first
    assert not again.received.first and again.decided is None
    assert len(await store.confirmations(op.id)) == 1


async def test_a_quorum_counts_the_web_and_the_card_alike(store: Store) -> None:
    op = await offered(store, audience=TRIO, approval=Approval(required=2))
    first = await decide(store, web(op, "confirm", "ou_alice", "form-q"))
    assert isinstance(first.decided, Counted)
    last = await decide(store, card(op, "confirm", "ou_bob", "ev-q"), kind="callback")
    assert isinstance(last.decided, Claimed)
    assert last.decided.operation.confirmed_by == ("ou_alice", "ou_bob")
    assert last.decided.operation.decision_entry == "lark"  # the last one needed decided it
    entries = [(c.operator_open_id, c.entry) for c in await store.confirmations(op.id)]
    assert sorted(entries) == [("ou_alice", "web"), ("ou_bob", "lark")]


async def test_a_web_confirmation_racing_a_card_click_claims_once(store: Store) -> None:
    winners: dict[str, int] = {"web": 0, "lark": 0}
    for race in range(RACES):
        op = await offered(store)
        on_web = web(op, "confirm", "ou_alice", f"form-race-{race}")
        on_card = card(op, "confirm", "ou_bob", f"ev-race-{race}")
        # both orders: which one the writer takes first alternates
        pair = (on_web, on_card) if race % 2 else (on_card, on_web)
        results = await asyncio.gather(
            *(decide(store, click, "web" if click.entry == "web" else "callback") for click in pair)
        )
        claimed = [r.decided for r in results if isinstance(r.decided, Claimed)]
        assert len(claimed) == 1, race
        assert await store.claim_count(op.id) == 1
        assert [c.accepted for c in await store.confirmations(op.id)].count(True) == 1
        winners[claimed[0].operation.decision_entry or "?"] += 1
    assert sum(winners.values()) == RACES
