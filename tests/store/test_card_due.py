"""A decision's card: left to the callback answer for a grace, due at once when that answer
was "processing", and never taken from a worker that holds it or repeated once shown."""

from __future__ import annotations

from datetime import timedelta

from kernel.timeutil import utc_now
from store.authority.records import Operation
from store.authority.store import Store
from store.cards.card_ledger import CardLedger
from store.claims.decisions import Claimed, Click, Decided
from tests.support.factories import offered


def click(op: Operation, action: str) -> Click:
    return Click(op.id, action, op.confirm_digest, "ou_alice", "oc_ops", f"om_{op.id}", "ev-1")


async def claimed(store: Store) -> Operation:
    outcome = await store.confirm_and_claim(click(await offered(store), "confirm"))
    assert isinstance(outcome, Claimed)
    return outcome.operation


async def test_a_decision_answered_late_is_due_at_once_and_leased_by_one_worker(
    store: Store,
) -> None:
    cards = CardLedger(store)
    op = await claimed(store)
    assert op.card_due_at is not None and op.card_due_at > store.clock()
    assert await cards.lease_due() == []  # the answer may still carry the card
    assert await cards.due_now(op)
    [leased] = await cards.lease_due()
    assert (leased.id, leased.version) == (op.id, op.version)
    assert await cards.lease_due() == []  # one worker holds it
    assert not await cards.due_now(op)  # and keeps it


async def test_a_card_leased_or_shown_is_never_made_due_again_by_its_decision(
    store: Store,
) -> None:
    cards = CardLedger(store)
    leased_op = await claimed(store)
    store.clock = lambda: utc_now() + timedelta(minutes=1)  # past the grace: a worker leases
    [leased] = await cards.lease_due()
    assert leased.id == leased_op.id
    assert not await cards.due_now(leased_op)
    current = await store.get(leased_op.id)
    assert current is not None and current.card_due_at == leased.card_due_at  # the lease

    rejected = await store.reject(click(await offered(store), "reject"))
    assert isinstance(rejected, Decided)
    await cards.shown(rejected.operation.id, rejected.operation.version, "callback")
    assert not await cards.due_now(rejected.operation)
    shown = await store.get(rejected.operation.id)
    assert shown is not None and shown.card_due_at is None
    # its send (logged as the card was marked sent), then the answer that showed the reject
    assert [entry.action for entry in await cards.history(shown.id)] == ["send", "callback"]
