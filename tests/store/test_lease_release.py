"""A dead worker process's leases, released by its parent (issue 30): the rows still held
under the leases it announced fall due at once; a row whose lease another worker took since,
or whose pass ended and rescheduled it, is left alone. Both backends."""

from __future__ import annotations

from datetime import timedelta

from store.authority.store import Store
from store.backend.leases import Lease, announce_leases, release
from store.cards.card_ledger import CardLedger
from tests.support.factories import draft


async def test_released_rows_fall_due_now_and_only_those_still_under_the_lease(
    store: Store,
) -> None:
    ids = [(await store.propose(draft())).operation.id for _ in range(4)]
    cards = CardLedger(store)
    announced: list[Lease] = []
    undo = announce_leases(announced.append)
    try:
        dead_workers = await cards.lease_due(limit=3, lease_s=600)  # the child's lease
    finally:
        undo()
    assert [op.id for op in dead_workers] == ids[:3] and len(announced) == 1
    [lease] = announced
    assert (lease.table, lease.due) == ("operations", "card_due_at")
    assert Lease.from_json(lease.as_json()) == lease  # as it crosses the socketpair

    # the child finished one pass before it died: due again at a time of its own
    await cards.due_again(ids[1])
    # another worker (a replica) leases the fourth under a lease of its own
    assert [op.id for op in await cards.lease_due(limit=1, lease_s=600)] == [ids[3]]

    assert await release(store, announced) == 2  # ids[0] and ids[2]: still the child's
    due = {op.id for op in await cards.lease_due(limit=10, lease_s=600)}
    assert due == {ids[0], ids[1], ids[2]}  # ids[1] was due anyway; ids[3] stays leased


async def test_a_lease_that_ran_out_or_names_no_leased_column_releases_nothing(
    store: Store,
) -> None:
    await store.propose(draft())
    past = Lease("operations", "card_due_at", store.clock() - timedelta(seconds=1))
    assert await release(store, [past]) == 0
    assert await release(store, []) == 0
    try:
        await release(store, [Lease("operations", "state", store.clock() + timedelta(days=1))])
    except ValueError as refused:
        assert "no leased column" in str(refused)
    else:
        raise AssertionError("a column that is not a lease's was accepted")
