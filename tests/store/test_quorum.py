"""N of M: confirmations counted once per person by the database, the claim in the write
that records the last one needed, a veto closing it, and replicas racing for the last one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError

from kernel.reasons import Reason
from store.authority.envelope import Approval, Audience
from store.authority.records import Operation
from store.authority.store import Store
from store.backend.opening import open_store
from store.claims.decisions import Claimed, Click, Counted, Decided, Refused
from store.lifecycle import State
from tests.support.backends import Backend
from tests.support.factories import offered

TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))


def quorum(required: int = 2, **more: Any) -> dict[str, Any]:
    return {"audience": TRIO, "approval": Approval(required=required, **more)}


def confirm(op: Operation, operator: str) -> Click:
    return Click(op.id, "confirm", op.confirm_digest, operator, "oc_ops", op.card_message_id)


def reject(op: Operation, operator: str) -> Click:
    return Click(op.id, "reject", op.confirm_digest, operator, "oc_ops", op.card_message_id)


async def test_two_of_three_counts_alice_once_and_claims_on_bobs(store: Store) -> None:
    op = await offered(store, **quorum())

    first = await store.confirm_and_claim(confirm(op, "ou_alice"))
    assert isinstance(first, Counted)
    assert first.operation.state is State.AWAITING_CONFIRMATION
    assert first.operation.confirmed_by == ("ou_alice",)
    assert first.operation.version == op.version + 1  # the card shows the progress
    assert await store.claim_count(op.id) == 0

    again = await store.confirm_and_claim(confirm(op, "ou_alice"))
    assert isinstance(again, Refused) and again.reason is Reason.ALREADY_CONFIRMED
    unchanged = await store.get(op.id)
    assert unchanged is not None
    assert (unchanged.version, unchanged.confirmed_by) == (op.version + 1, ("ou_alice",))
    assert await store.claim_count(op.id) == 0

    last = await store.confirm_and_claim(confirm(op, "ou_bob"))
    assert isinstance(last, Claimed)
    assert last.operation.state is State.CLAIMED
    assert last.operation.confirmed_by == ("ou_alice", "ou_bob")
    assert last.operation.decided_by == "ou_bob"
    assert await store.claim_count(op.id) == 1

    late = await store.confirm_and_claim(confirm(op, "ou_carol"))
    assert isinstance(late, Refused) and late.reason is Reason.ALREADY_CLAIMED
    records = await store.confirmations(op.id)
    counted = [(c.operator_open_id, c.accepted, c.reason_code) for c in records]
    assert counted == [
        ("ou_alice", True, None),
        ("ou_alice", False, Reason.ALREADY_CONFIRMED.value),
        ("ou_bob", True, None),
        ("ou_carol", False, Reason.ALREADY_CLAIMED.value),
    ]
    events = [entry.event for entry in await store.audit(op.id)]
    assert events.count("confirmation_counted") == 1 and events.count("confirmed") == 1


async def test_one_confirmation_needed_claims_at_once_as_before(store: Store) -> None:
    op = await offered(store, **quorum(required=1))
    claimed = await store.confirm_and_claim(confirm(op, "ou_carol"))
    assert isinstance(claimed, Claimed) and claimed.operation.confirmed_by == ("ou_carol",)


async def test_a_reject_after_a_confirmation_vetoes_it(store: Store) -> None:
    op = await offered(store, **quorum())
    assert isinstance(await store.confirm_and_claim(confirm(op, "ou_alice")), Counted)

    vetoed = await store.reject(reject(op, "ou_bob"))
    assert isinstance(vetoed, Decided) and vetoed.operation.state is State.REJECTED

    after = await store.confirm_and_claim(confirm(op, "ou_carol"))
    assert isinstance(after, Refused) and after.reason is Reason.ALREADY_REJECTED
    assert await store.claim_count(op.id) == 0


async def test_the_database_refuses_a_second_counted_confirmation_by_one_person(
    store: Store,
) -> None:
    op = await offered(store, **quorum())
    assert isinstance(await store.confirm_and_claim(confirm(op, "ou_alice")), Counted)
    sql = (
        "INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, "
        "accepted) VALUES (:op, CURRENT_TIMESTAMP, 'confirm', 'ou_alice', 'x', :yes)"
    )
    with pytest.raises(IntegrityError, match=r"uq_confirmations_counted|UNIQUE"):
        async with store.write() as conn:
            await conn.exec_driver_sql(
                sql.replace(":op", "'" + op.id + "'").replace(
                    ":yes", "1" if store.sqlite else "true"
                )
            )


async def test_a_reject_past_expiry_is_refused_before_the_sweep(store: Store) -> None:
    op = await offered(store)
    store.clock = lambda: op.envelope.expires_at  # the expiry instant; no sweep has run
    refused = await store.reject(reject(op, "ou_bob"))
    assert isinstance(refused, Refused) and refused.reason is Reason.EXPIRED
    still = await store.get(op.id)
    assert still is not None and still.state is State.AWAITING_CONFIRMATION


async def test_a_confirmation_at_expiry_counts_nothing_though_one_was_counted_before(
    store: Store,
) -> None:
    """The quorum branch's own condition: Alice counted while it was open; at the expiry
    instant (no sweep has run) Bob's confirm is refused by the write, not counted, no claim."""
    op = await offered(store, **quorum())
    assert isinstance(await store.confirm_and_claim(confirm(op, "ou_alice")), Counted)

    store.clock = lambda: op.envelope.expires_at
    late = await store.confirm_and_claim(confirm(op, "ou_bob"))
    assert isinstance(late, Refused) and late.reason is Reason.EXPIRED
    assert await store.claim_count(op.id) == 0
    still = await store.get(op.id)
    assert still is not None and still.state is State.AWAITING_CONFIRMATION
    assert still.confirmed_by == ("ou_alice",)
    records = await store.confirmations(op.id)
    assert [(c.operator_open_id, c.accepted, c.reason_code) for c in records] == [
        ("ou_alice", True, None),
        ("ou_bob", False, Reason.EXPIRED.value),
    ]


@pytest.mark.parametrize("required", [2, 3])
async def test_replicas_racing_for_the_last_confirmations_claim_exactly_once(
    store: Store, backend: Backend, required: int
) -> None:
    """Alice has confirmed; Bob and Carol confirm at the same moment through two stores on
    one database (two replicas, each with its own writer), many times over: exactly one
    claim each time. 2 of 3: one claims, the other is told it is claimed. 3 of 3: both
    count, and whichever commits second sees three and claims (never both, never none)."""
    other = await open_store(backend.url, schema=backend.schema, pool_size=10)
    try:
        for _ in range(15):
            op = await offered(store, **quorum(required=required))
            assert isinstance(await store.confirm_and_claim(confirm(op, "ou_alice")), Counted)
            results = await asyncio.gather(
                store.confirm_and_claim(confirm(op, "ou_bob")),
                other.confirm_and_claim(confirm(op, "ou_carol")),
            )
            kinds = sorted(type(result).__name__ for result in results)
            if required == 2:
                assert kinds == ["Claimed", "Refused"], results
                (refused,) = [r for r in results if isinstance(r, Refused)]
                assert refused.reason is Reason.ALREADY_CLAIMED
            else:
                assert kinds == ["Claimed", "Counted"], results
            assert await store.claim_count(op.id) == 1
            final = await store.get(op.id)
            assert final is not None and final.state is State.CLAIMED
            assert len(final.confirmed_by) == required
    finally:
        await other.close()
