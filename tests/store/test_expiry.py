from __future__ import annotations

import asyncio
from datetime import timedelta

from store.authority import Store
from store.lifecycle import State
from store.timeutil import utc_now
from tests.factories import draft, offered
from workers.expiry import run_expiry


async def test_expire_due_moves_only_unclaimed_operations_past_expiry(store: Store) -> None:
    due_offered = await offered(store, expires_in_s=30)
    due_prepared = (await store.propose(draft(expires_in_s=30))).operation
    later = await offered(store, expires_in_s=120)
    store.clock = lambda: utc_now() + timedelta(seconds=60)
    assert sorted(await store.expire_due()) == sorted([due_offered.id, due_prepared.id])
    assert await store.expire_due() == []
    for op_id, state in [
        (due_offered.id, State.EXPIRED),
        (due_prepared.id, State.EXPIRED),
        (later.id, State.AWAITING_CONFIRMATION),
    ]:
        op = await store.get(op_id)
        assert op is not None and op.state is state
    audit = await store.audit(due_offered.id)
    assert (audit[-1].actor, audit[-1].event, audit[-1].to_state) == (
        "system:expiry",
        "expired",
        "expired",
    )


async def test_the_expiry_worker_sweeps_until_stopped(store: Store) -> None:
    op = await offered(store, expires_in_s=30)
    store.clock = lambda: utc_now() + timedelta(seconds=31)
    stop = asyncio.Event()
    batches: list[list[str]] = []
    swept = asyncio.Event()

    async def on_expired(ids: list[str]) -> None:
        batches.append(ids)
        swept.set()

    worker = asyncio.create_task(run_expiry(store, 0.05, stop, on_expired))
    await asyncio.wait_for(swept.wait(), 10)
    stop.set()
    await asyncio.wait_for(worker, 5)
    assert batches == [[op.id]]
    current = await store.get(op.id)
    assert current is not None and current.state is State.EXPIRED
