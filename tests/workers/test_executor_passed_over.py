"""A claimed operation whose row another transaction holds when the executor leases it
(PostgreSQL's FOR UPDATE SKIP LOCKED passes it over) is still due: the executor looks again
within `PASSED_OVER_S`, not after the poll (an hour in a worker process that only kicks
wake). Seen in CI: the click's answer marks the card shown on the same row just as the
claim's kick reaches the worker process, and the claim then waited for the poll."""

from __future__ import annotations

from sqlalchemy import text

from store import ExecutionLedger, Store
from tests.support.factories import claimed

HOLD = text("SELECT id FROM operations WHERE id = :id FOR UPDATE")


async def test_a_claim_not_yet_leased_counts_as_due_now(store: Store) -> None:
    await claimed(store)
    due = await ExecutionLedger(store).next_due()
    assert due is not None and due <= store.clock()  # 840eaf8: None (only `due > now` counts)


async def test_a_due_row_a_lease_passed_over_is_still_due(store: Store) -> None:
    if store.sqlite:
        return  # one writer at a time: a lease never passes a row over
    operation_id = (await claimed(store)).id
    ledger = ExecutionLedger(store)
    async with store.engine.connect() as other, other.begin():
        # another transaction writes the row (the click's answer marking its card shown)
        await other.execute(HOLD, {"id": operation_id})
        assert await ledger.lease_due(4, 7) == []  # passed over
        due = await ledger.next_due()
    assert due is not None and due <= store.clock()
