from __future__ import annotations

import asyncio
from datetime import timedelta

from kernel.timeutil import utc_now
from store.authority.envelope import CallbackRoute, Conversation, Source
from store.authority.store import Store
from store.claims.decisions import Click, Decided
from store.deliveries.conclusions import closing_outcome
from store.deliveries.delivery_ledger import DeliveryLedger
from store.lifecycle import State
from tests.support.factories import draft, offered
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


async def test_closing_unexecuted_enqueues_one_conclusion_per_route_only_if_routed(
    store: Store,
) -> None:
    def routed_source(request_id: str) -> Source:
        return Source(
            "dev-agent",
            request_id,
            conversation=Conversation("oc_ops", "om_thread"),
            callback=CallbackRoute("http://127.0.0.1:9/hook", "dev"),
        )

    routed = await offered(store, expires_in_s=30, source=routed_source("routed"))
    unrouted = await offered(store, expires_in_s=30)
    declined = await offered(store, expires_in_s=300, source=routed_source("declined"))
    rejected = await store.reject(Click(declined.id, "reject", declined.confirm_digest, "ou_bob"))
    assert isinstance(rejected, Decided)
    store.clock = lambda: utc_now() + timedelta(seconds=60)
    assert sorted(await store.expire_due()) == sorted([routed.id, unrouted.id])

    ledger = DeliveryLedger(store)
    for op in (routed, declined):
        current = await store.get(op.id)
        assert current is not None
        closing = closing_outcome(current)
        assert closing is not None
        found = await ledger.find(operation_id=op.id)
        assert sorted(d.channel for d in found) == ["reply", "webhook"]
        assert {d.outcome_digest for d in found} == {closing.outcome_digest}
        assert {d.stage for d in found} == {"initial"}
    assert await ledger.find(operation_id=unrouted.id) == []
    assert await store.expire_due() == []  # a second sweep adds nothing
    assert len(await ledger.find(operation_id=routed.id)) == 2


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
