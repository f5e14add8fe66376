"""After the claim: one attempt, budget-bound reservations, append-only outcomes."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.authority import Claimed, Click, Store
from store.execution import ExecutionLedger, ReservationRefused, Reserved
from store.lifecycle import Execution, IllegalExecutionStep, State
from store.opening import open_store
from store.records import Operation
from tests.conftest import Backend
from tests.factories import offered


async def claimed(store: Store) -> Operation:
    op = await offered(store)
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


async def test_the_attempt_is_recorded_once_whoever_asks(store: Store) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    attempts = await asyncio.gather(
        *[ledger.record_attempt(op.id, f"cs-{op.id}") for _ in range(10)]
    )
    assert {a.id for a in attempts} == {attempts[0].id}
    assert attempts[0].client_id == f"cs-{op.id}" and attempts[0].state == "recorded"
    again = await ledger.record_attempt(op.id, "another-client-id")
    assert again.client_id == f"cs-{op.id}", "a restart never mints a second client id"


async def test_execution_steps_follow_the_table(store: Store) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    with pytest.raises(IllegalExecutionStep):
        await ledger.step(op.id, Execution.DISPATCHING)  # not before preflight and reservation
    for step in (Execution.PREFLIGHT, Execution.RESERVED, Execution.DISPATCHING):
        await ledger.step(op.id, step)
    current = await store.get(op.id)
    assert current is not None and current.execution_state == "dispatching"
    with pytest.raises(IllegalExecutionStep):
        await ledger.step(op.id, Execution.PREFLIGHT)


async def test_two_orders_that_fit_alone_but_not_together_reserve_once(store: Store) -> None:
    first, second = await claimed(store), await claimed(store)
    ledger = ExecutionLedger(store)
    results = await asyncio.gather(
        ledger.reserve(
            first.id, "acct", Decimal("600.5"), budget=Decimal(1000), observed=Decimal(100)
        ),
        ledger.reserve(
            second.id, "acct", Decimal("600.5"), budget=Decimal(1000), observed=Decimal(100)
        ),
    )
    assert sorted(type(r).__name__ for r in results) == ["ReservationRefused", "Reserved"]
    refused = next(r for r in results if isinstance(r, ReservationRefused))
    assert "exceed" in refused.reason and refused.held == Decimal("600.5")
    assert await ledger.held("acct") == Decimal("600.5")


async def test_an_order_converted_after_the_observation_still_counts(store: Store) -> None:
    """The race two replicas really run: B observed the venue before A's order was placed,
    and A's reservation turned into that order before B reserved."""
    first, second = await claimed(store), await claimed(store)
    ledger = ExecutionLedger(store)
    budget, amount = Decimal(1000), Decimal(600)
    b_observed_at = store.clock()  # B's observation: A's order is not on the venue yet
    assert isinstance(
        await ledger.reserve(first.id, "acct", amount, budget=budget, observed=Decimal(0)),
        Reserved,
    )
    assert await ledger.settle(first.id, converted=True)  # A's order is now on the venue
    assert await ledger.held("acct") == 0
    refused = await ledger.reserve(
        second.id, "acct", amount, budget=budget, observed=Decimal(0), observed_at=b_observed_at
    )
    assert isinstance(refused, ReservationRefused) and refused.held == amount
    # An observation taken after the conversion shows A's order itself: counted once, there.
    fresh = await ledger.reserve(
        second.id,
        "acct",
        Decimal(300),
        budget=budget,
        observed=amount,
        observed_at=store.clock() + timedelta(seconds=1),
    )
    assert isinstance(fresh, Reserved) and fresh.held_after == Decimal(300)


async def test_fifty_concurrent_reservations_never_exceed_the_budget(store: Store) -> None:
    ops = [await claimed(store) for _ in range(50)]
    ledger = ExecutionLedger(store)
    amounts = [Decimal(random.randint(1, 400)) / 10 for _ in ops]
    budget, observed = Decimal(500), Decimal("37.5")
    results = await asyncio.gather(
        *[
            ledger.reserve(op.id, "busy", amount, budget=budget, observed=observed)
            for op, amount in zip(ops, amounts, strict=True)
        ]
    )
    reserved = sum((r.amount for r in results if isinstance(r, Reserved)), Decimal(0))
    assert observed + reserved <= budget
    assert await ledger.held("busy") == reserved
    assert any(isinstance(r, ReservationRefused) for r in results)


async def test_a_reservation_survives_a_restart_and_is_released_once(
    store: Store, backend: Backend
) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    assert isinstance(
        await ledger.reserve(op.id, "acct", Decimal(10), budget=Decimal(100), observed=Decimal(0)),
        Reserved,
    )
    reopened = await open_store(backend.url, schema=backend.schema)
    try:
        again = ExecutionLedger(reopened)
        assert await again.held("acct") == Decimal(10)
        # asking again after a restart returns the same hold, not a second one
        assert isinstance(
            await again.reserve(
                op.id, "acct", Decimal(10), budget=Decimal(15), observed=Decimal(0)
            ),
            Reserved,
        )
        assert await again.held("acct") == Decimal(10)
        assert await again.release(op.id) and not await again.release(op.id)
        assert await again.held("acct") == Decimal(0)
    finally:
        await reopened.close()


async def test_outcomes_append_and_a_reconciliation_names_what_it_reconciles(store: Store) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    for step in (Execution.PREFLIGHT, Execution.RESERVED, Execution.DISPATCHING):
        await ledger.step(op.id, step)
    unknown = await ledger.record_outcome(
        op.id,
        stage="initial",
        status="unknown",
        concludes=True,
        detail={"why": "response lost"},
        execution=Execution.SUBMISSION_UNKNOWN,
    )
    after = await store.get(op.id)
    assert after is not None and after.state is State.OUTCOME_OBSERVED
    assert after.execution_state == "submission_unknown" and after.version == op.version + 1
    filled = await ledger.record_outcome(
        op.id,
        stage="reconciled",
        status="filled",
        concludes=True,
        detail={"filled_qty": "0.010", "avg_price": "60000"},
        execution=Execution.RECONCILED,
        reconciles=unknown.outcome_digest,
    )
    outcomes = await ledger.outcomes(op.id)
    assert [(o.stage, o.status) for o in outcomes] == [
        ("initial", "unknown"),
        ("reconciled", "filled"),
    ]
    assert outcomes[1].reconciles_digest == unknown.outcome_digest != filled.outcome_digest
    assert outcomes[1].detail == {"filled_qty": "0.010", "avg_price": "60000"}
    with pytest.raises(IllegalExecutionStep):
        await ledger.record_outcome(
            op.id,
            stage="initial",
            status="filled",
            concludes=True,
            detail={},
            execution=Execution.SUBMITTED,
        )


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    amounts=st.lists(
        st.decimals(min_value=Decimal("0.01"), max_value=Decimal(300), places=2),
        min_size=1,
        max_size=12,
    ),
    budget=st.decimals(min_value=Decimal(1), max_value=Decimal(1000), places=2),
    observed=st.decimals(min_value=Decimal(0), max_value=Decimal(200), places=2),
)
def test_property_concurrent_reservations_never_exceed_a_budget(
    backend: Backend, amounts: list[Decimal], budget: Decimal, observed: Decimal
) -> None:
    account = f"prop-{uuid.uuid4().hex[:8]}"  # a fresh account per example: no reset needed

    async def scenario() -> None:
        store = await open_store(backend.url, schema=backend.schema, pool_size=15)
        try:
            ops = [await claimed(store) for _ in amounts]
            ledger = ExecutionLedger(store)
            results = await asyncio.gather(
                *[
                    ledger.reserve(op.id, account, a, budget=budget, observed=observed)
                    for op, a in zip(ops, amounts, strict=True)
                ]
            )
            reserved = sum((r.amount for r in results if isinstance(r, Reserved)), Decimal(0))
            assert reserved == 0 or observed + reserved <= budget
            assert await ledger.held(account) == reserved
            for result in results:  # a refusal is only ever for a real overflow
                if isinstance(result, ReservationRefused):
                    assert result.observed + result.held + result.amount > result.budget
        finally:
            await store.close()

    asyncio.run(scenario())
