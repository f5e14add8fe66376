"""Leasing is one statement for a batch: concurrent leasers (two replicas, several workers
each) never get the same row, and a lease left by a dead worker falls due again."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import update

from kernel.timeutil import utc_now
from store.authority.store import Store
from store.cards.card_ledger import CardLedger
from store.claims.decisions import Claimed, Click
from store.execution.execution_ledger import ExecutionLedger
from store.schema.tables import OperationRow
from tests.support.factories import draft, offered, writes

ROWS = 60
WORKERS_PER_REPLICA = 4


async def test_concurrent_leasers_on_two_replicas_never_get_the_same_row(
    store: Store, replica: Store
) -> None:
    for _ in range(ROWS):
        await store.propose(draft())  # each new card is due at once
    start = asyncio.Barrier(2 * WORKERS_PER_REPLICA)

    async def lease_until_empty(on: Store) -> list[str]:
        cards = CardLedger(on)
        mine: list[str] = []
        await start.wait()
        while leased := await cards.lease_due(limit=3, lease_s=600):
            assert len(leased) <= 3
            mine.extend(op.id for op in leased)
        return mine

    takes = await asyncio.gather(
        *(lease_until_empty(on) for on in (store, replica) for _ in range(WORKERS_PER_REPLICA))
    )
    every = [row for take in takes for row in take]
    assert len(every) == ROWS and len(set(every)) == ROWS  # all leased, none twice
    assert await CardLedger(replica).lease_due(limit=ROWS) == []  # nothing due, nothing locked


async def test_a_batch_is_the_oldest_due_rows_and_moves_only_them(store: Store) -> None:
    ids = [(await store.propose(draft())).operation.id for _ in range(5)]
    cards = CardLedger(store)
    first = await cards.lease_due(limit=2, lease_s=600)
    assert [op.id for op in first] == ids[:2]  # the oldest due first
    leased = await store.get(ids[0])
    assert leased is not None and leased.card_due_at is not None
    assert leased.card_due_at > store.clock() + timedelta(seconds=590)
    untouched = await store.get(ids[2])
    assert untouched is not None and untouched.card_due_at is not None
    assert untouched.card_due_at <= store.clock()
    assert [op.id for op in await cards.lease_due(limit=10, lease_s=600)] == ids[2:]
    assert await cards.lease_due(limit=0) == []


async def test_a_lease_is_one_write_and_skips_what_the_caller_excludes(store: Store) -> None:
    failing, due = [(await store.propose(draft())).operation.id for _ in range(2)]
    async with store.write() as conn:  # its card failed for good, and it is due again
        refused = update(OperationRow).where(OperationRow.id == failing)
        await conn.execute(refused.values(card_error="refused by Lark"))
    assert store.writer is not None
    before = (writes(store), store.writer.stats.intents, store.writer.stats.turns)
    leased = await CardLedger(store).lease_due(limit=10, lease_s=600)
    after = (writes(store), store.writer.stats.intents, store.writer.stats.turns)
    assert [op.id for op in leased] == [due]
    # one write, never a lent turn: on SQLite an intent in the group commit, on PostgreSQL
    # a short transaction of its own (its row locks are not held for a whole batch)
    intents = 1 if store.sqlite else 0
    assert (after[0] - before[0], after[1] - before[1], after[2] - before[2]) == (1, intents, 0)


async def test_a_lease_left_by_a_dead_worker_falls_due_again(store: Store, replica: Store) -> None:
    op = await offered(store)
    claim = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claim, Claimed)
    leased_from = store.clock()
    [leased] = await ExecutionLedger(store).lease_due(limit=5, lease_s=30)
    assert leased.id == op.id
    # the worker that took it dies here; the other replica finds nothing while the lease holds
    other = ExecutionLedger(replica)
    assert await other.lease_due(limit=5, lease_s=30) == []
    runs_out = await other.next_due()  # and knows when to look again
    assert runs_out is not None
    assert leased_from + timedelta(seconds=30) <= runs_out <= utc_now() + timedelta(seconds=30)
    replica.clock = lambda: utc_now() + timedelta(seconds=31)
    [again] = await other.lease_due(limit=5, lease_s=30)
    assert again.id == op.id and again.version == leased.version
    assert await other.lease_due(limit=5, lease_s=30) == []  # leased anew, to the replica
    later = await ExecutionLedger(store).next_due()
    assert later is not None and later >= runs_out + timedelta(seconds=31)
