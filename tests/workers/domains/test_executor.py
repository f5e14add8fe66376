"""The executor worker on the real store and the real simulated venue, without Lark.

What only the worker decides: a revision this build does not run is refused, a disabled
domain sends nothing new but still reconciles what it sent, and a submission that outlives
its timeout is looked up, never sent again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from store import Claimed, Click, ExecutionLedger, Operation, Store
from tests.support.factories import ORDER_PAYLOAD, offered, writes
from workers.domains.execution import client_id_for
from workers.domains.finance.runner import FinanceRunner
from workers.domains.finance.settings import FinanceAccount, FinanceSettings
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.venue import SimVenue
from workers.executor import ExecutionWorker

SETTINGS = FinanceSettings(accounts=[FinanceAccount(name="sim-main", budget="100000")])


def worker_for(store: Store, runner: FinanceRunner, **options: float) -> ExecutionWorker:
    return ExecutionWorker(
        store,
        {runner.kind: runner},
        submit_timeout_s=options.get("submit_timeout_s", 2.0),
        not_found_after_s=options.get("not_found_after_s", 4.0),
        track_max_s=1.0,
    )


async def claimed(store: Store, **overrides: object) -> Operation:
    op = await offered(store, **overrides)
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


async def drive(
    worker: ExecutionWorker, done: Callable[[], Awaitable[bool]], deadline_s: float = 15
) -> None:
    """Run the worker's passes until `done()` holds (due times are real: poll them)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while not await done():
        if loop.time() > deadline:
            raise AssertionError(f"not done within {deadline_s} s")
        if not await worker.drain():
            await asyncio.sleep(0.05)


def statuses_of(ledger: ExecutionLedger, operation_id: str) -> Callable[[], Awaitable[list[str]]]:
    async def read() -> list[str]:
        return [o.status for o in await ledger.outcomes(operation_id)]

    return read


async def test_a_revision_this_build_does_not_run_is_refused_and_nothing_is_sent(
    store: Store, venue: SimVenue
) -> None:
    op = await claimed(store, executor_revision="2")
    worker = worker_for(store, FinanceRunner({"sim": venue}, SETTINGS, clock=store.clock))
    ledger = ExecutionLedger(store)
    statuses = statuses_of(ledger, op.id)

    async def refused() -> bool:
        return await statuses() == ["preflight_rejected"]

    await drive(worker, refused)
    [outcome] = await ledger.outcomes(op.id)
    assert outcome.detail["code"] == "executor_revision_unsupported"
    assert "revision 2" in outcome.detail["reason"] and "revision 1" in outcome.detail["reason"]
    assert await venue.orders() == [] and await ledger.attempt(op.id) is None


async def test_a_disabled_domain_sends_nothing_new_but_reconciles_what_it_sent(
    store: Store, venue: SimVenue
) -> None:
    sent = await claimed(store)
    runner = FinanceRunner({"sim": venue}, SETTINGS, clock=store.clock)
    worker = worker_for(store, runner)
    ledger = ExecutionLedger(store)
    venue.faults = Faults.parse("lose_response")  # `sent` reaches the venue, its answer does not

    async def unknown() -> bool:
        return await statuses_of(ledger, sent.id)() == ["unknown"]

    await drive(worker, unknown)
    venue.faults = Faults()
    runner.enabled = False  # the operator switches finance off while `sent` is unknown
    fresh = await claimed(store)  # and an operator confirms another order meanwhile

    async def both_settled() -> bool:
        return (
            len(await ledger.outcomes(sent.id)) == 2 and len(await ledger.outcomes(fresh.id)) == 1
        )

    await drive(worker, both_settled)
    [_unknown, reconciled] = await ledger.outcomes(sent.id)
    assert (reconciled.stage, reconciled.status) == ("reconciled", "filled")
    [refused] = await ledger.outcomes(fresh.id)
    assert refused.status == "preflight_rejected" and refused.detail["code"] == "domain_disabled"
    orders = await venue.orders()
    assert [o.client_id for o in orders if o.role == "order"] == [client_id_for(sent.id)]
    assert all(o.submit_count == 1 for o in orders)


async def test_a_submission_past_its_timeout_is_looked_up_not_sent_again(
    store: Store, venue: SimVenue
) -> None:
    op = await claimed(store)

    def slow_answer(_client_id: str) -> None:  # committed; the answer now takes 1.5 s
        venue.faults = Faults.parse("latency_ms=1500")

    runner = FinanceRunner({"sim": venue}, SETTINGS, clock=store.clock, on_dispatched=slow_answer)
    worker = worker_for(store, runner, submit_timeout_s=0.5)
    ledger = ExecutionLedger(store)

    async def unknown() -> bool:
        return await statuses_of(ledger, op.id)() == ["unknown"]

    await drive(worker, unknown)
    venue.faults = Faults()

    async def reconciled() -> bool:
        return (await statuses_of(ledger, op.id)())[-1:] == ["filled"]

    await drive(worker, reconciled)
    outcomes = await ledger.outcomes(op.id)
    assert [(o.stage, o.status) for o in outcomes] == [
        ("initial", "unknown"),
        ("reconciled", "filled"),
    ]
    assert outcomes[1].reconciles_digest == outcomes[0].outcome_digest
    state = await venue.lookup(client_id_for(op.id))
    assert state is not None and state.submit_count == 1
    attempt = await ledger.attempt(op.id)
    assert attempt is not None and attempt.resolved_at is not None and attempt.last_error is None
    current = await store.get(op.id)
    assert current is not None and current.execution_state == "reconciled"


async def test_reconcile_now_brings_an_unknown_forward_and_leaves_settled_ones_alone(
    store: Store, venue: SimVenue
) -> None:
    plain_order = {k: v for k, v in ORDER_PAYLOAD.items() if k != "protective"}
    op = await claimed(store)  # with protective orders: still working once filled
    settled_op = await claimed(store, payload=plain_order)  # filled and done
    runner = FinanceRunner({"sim": venue}, SETTINGS, clock=store.clock)
    worker = worker_for(store, runner)
    ledger = ExecutionLedger(store)

    async def settled_filled() -> bool:
        return await statuses_of(ledger, settled_op.id)() == ["filled"]

    await drive(worker, settled_filled)
    venue.faults = Faults.parse("lose_response")
    late = await claimed(store)

    async def unknown() -> bool:
        return await statuses_of(ledger, late.id)() == ["unknown"]

    await drive(worker, unknown)
    venue.faults = Faults()
    await ledger.schedule(late.id, 3600)  # as if the reconciler had backed off for an hour
    assert await worker.drain() == 0

    assert await ledger.reconcile_now(settled_op.id) == []  # settled: nothing to look at
    assert sorted(await ledger.reconcile_now()) == sorted([op.id, late.id])

    async def reconciled() -> bool:
        return (await statuses_of(ledger, late.id)())[-1:] == ["filled"]

    await drive(worker, reconciled, deadline_s=5)
    assert [o.status for o in await ledger.outcomes(op.id)] == ["filled"]


# -- how many writes a pass takes (issue 11: at most four, each named for what it does) -----

PLAIN_ORDER = {k: v for k, v in ORDER_PAYLOAD.items() if k != "protective"}


async def leased(worker: ExecutionWorker, operation_id: str, deadline_s: float = 15) -> Operation:
    """Lease `operation_id` as `drain` would, once it is due (due times are real: poll them)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while loop.time() < deadline:
        found = await worker.ledger.lease_due(1, worker.lease_s)
        if found:
            [op] = found
            assert op.id == operation_id
            return op
        await asyncio.sleep(0.05)
    raise AssertionError(f"{operation_id} not due within {deadline_s} s")


async def pass_writes(store: Store, worker: ExecutionWorker, op: Operation) -> int:
    """Writes of one executor pass over the leased `op` (leasing not counted)."""
    before = writes(store)
    await worker.advance(op)
    assert worker.failures == 0
    return writes(store) - before


async def executor_trail(store: Store, operation_id: str) -> list[str]:
    return [e.event for e in await store.audit(operation_id) if e.actor == "system:executor"]


async def test_a_confirmed_order_runs_in_at_most_four_writes(store: Store, venue: SimVenue) -> None:
    op = await claimed(store, payload=PLAIN_ORDER)
    worker = worker_for(store, FinanceRunner({"sim": venue}, SETTINGS, clock=store.clock))
    ledger = ExecutionLedger(store)

    writes = await pass_writes(store, worker, await leased(worker, op.id))

    assert writes <= 4, writes
    assert await executor_trail(store, op.id) == [
        "execution:preflight",  # begin_preflight
        "execution:reserved",  # reserve_and_mark
        "execution:dispatching",  # begin_dispatch
        "outcome:filled",  # record_observation
    ]
    assert [o.status for o in await ledger.outcomes(op.id)] == ["filled"]
    assert await ledger.reservation_state(op.id) == "converted"
    done = await store.get(op.id)
    assert done is not None and done.execution_state == "completed"
    assert await worker.ledger.lease_due(10, worker.lease_s) == [], "nothing left to look at"


async def test_an_unknown_is_the_fourth_write_and_its_reconciliation_one_more(
    store: Store, venue: SimVenue
) -> None:
    op = await claimed(store, payload=PLAIN_ORDER)
    worker = worker_for(store, FinanceRunner({"sim": venue}, SETTINGS, clock=store.clock))
    ledger = ExecutionLedger(store)
    venue.faults = Faults.parse("lose_response")  # the order is placed, its answer lost

    assert await pass_writes(store, worker, await leased(worker, op.id)) <= 4
    assert [o.status for o in await ledger.outcomes(op.id)] == ["unknown"]
    venue.faults = Faults()

    assert await pass_writes(store, worker, await leased(worker, op.id)) == 1
    assert [(o.stage, o.status) for o in await ledger.outcomes(op.id)] == [
        ("initial", "unknown"),
        ("reconciled", "filled"),
    ]
    assert await ledger.reservation_state(op.id) == "converted"


async def test_a_pass_refused_at_preflight_takes_two_writes(store: Store, venue: SimVenue) -> None:
    op = await claimed(store, executor_revision="2")
    worker = worker_for(store, FinanceRunner({"sim": venue}, SETTINGS, clock=store.clock))
    ledger = ExecutionLedger(store)

    writes = await pass_writes(store, worker, await leased(worker, op.id))

    assert writes <= 4 and writes == 2, writes
    assert await executor_trail(store, op.id) == [
        "execution:preflight",
        "outcome:preflight_rejected",
    ]
    assert [o.status for o in await ledger.outcomes(op.id)] == ["preflight_rejected"]
    assert await worker.ledger.lease_due(10, worker.lease_s) == []


async def test_a_pass_refused_by_the_budget_takes_two_writes(store: Store, venue: SimVenue) -> None:
    op = await claimed(store, payload=PLAIN_ORDER)
    tight = FinanceSettings(accounts=[FinanceAccount(name="sim-main", budget="1")])
    worker = worker_for(store, FinanceRunner({"sim": venue}, tight, clock=store.clock))
    ledger = ExecutionLedger(store)

    writes = await pass_writes(store, worker, await leased(worker, op.id))

    assert writes == 2, writes
    assert await executor_trail(store, op.id) == [
        "execution:preflight",
        "outcome:reservation_refused",
    ]
    [refused] = await ledger.outcomes(op.id)
    assert refused.detail["code"] == "budget_exceeded"
    assert await ledger.reservation_state(op.id) is None and await venue.orders() == []
    assert worker.outcomes["reservation_refused"] == 1
