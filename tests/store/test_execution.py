"""After the claim: the executor's four writes, one attempt, budget-bound reservations,
append-only outcomes."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert, select

from store.authority.envelope import Conversation, Source
from store.authority.records import Operation
from store.authority.store import Store
from store.authority.transitions import OperationNotFound
from store.backend.opening import open_store
from store.claims.decisions import Claimed, Click
from store.claims.exposure import Exposure
from store.claims.reservations import ReservationRefused, Reserved
from store.deliveries.delivery_ledger import DeliveryLedger
from store.execution.execution_ledger import ExecutionLedger
from store.execution.records import Attempt, Observation
from store.lifecycle import Execution, IllegalExecutionStep, IllegalTransition, State
from store.schema.tables import AttemptRow, OperationRow
from store.vocabulary import ReservationState, Stage
from tests.support.backends import Backend
from tests.support.factories import claimed, dispatching, offered, refused_by_budget, writes


async def preflighted(store: Store) -> Operation:
    op = await claimed(store)
    await ExecutionLedger(store).begin_preflight(op.id)
    return op


def hold(
    account: str, amount: Decimal, budget: Decimal, observed: Decimal, observed_at: Any = None
) -> Exposure:
    return Exposure(account, amount, budget, observed, observed_at)


async def reserve(
    ledger: ExecutionLedger, operation_id: str, exposure: Exposure
) -> Reserved | ReservationRefused | None:
    return await ledger.reserve_and_mark(operation_id, exposure, refused=refused_by_budget)


async def test_the_attempt_is_recorded_once_whoever_asks(store: Store) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    await ledger.begin_preflight(op.id)
    await ledger.reserve_and_mark(op.id, None, refused=refused_by_budget)
    results = await asyncio.gather(
        *[ledger.begin_dispatch(op.id, f"cs-{op.id}") for _ in range(10)], return_exceptions=True
    )
    [attempt] = [r for r in results if isinstance(r, Attempt)]
    assert all(isinstance(r, IllegalExecutionStep) for r in results if r is not attempt)
    assert attempt.client_id == f"cs-{op.id}" and attempt.dispatched_at is not None
    with pytest.raises(IllegalExecutionStep):
        await ledger.begin_dispatch(op.id, "another-client-id")
    again = await ledger.attempt(op.id)
    assert again == attempt, "a restart never mints a second client id"
    current = await store.get(op.id)
    assert current is not None and current.execution_state == "dispatching"


async def test_an_attempt_an_older_release_recorded_keeps_its_client_id(store: Store) -> None:
    """Before 0007 the attempt was its own write, before `dispatching`: a pass that died
    between the two left a reserved operation with its attempt recorded."""
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    await ledger.begin_preflight(op.id)
    await ledger.reserve_and_mark(op.id, None, refused=refused_by_budget)
    async with store.write() as conn:
        await conn.execute(
            insert(AttemptRow).values(
                id="01J0000000000000000000OLD0",
                operation_id=op.id,
                client_id=f"cs-{op.id}",
                recorded_at=store.clock(),
            )
        )
    attempt = await ledger.begin_dispatch(op.id, "a-client-id-minted-today")
    assert (attempt.id, attempt.client_id) == ("01J0000000000000000000OLD0", f"cs-{op.id}")
    assert attempt.dispatched_at is not None


async def test_execution_steps_follow_the_table(store: Store) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    with pytest.raises(IllegalExecutionStep):  # not before preflight and reservation
        await ledger.begin_dispatch(op.id, f"cs-{op.id}")
    with pytest.raises(IllegalExecutionStep):
        await ledger.reserve_and_mark(op.id, None, refused=refused_by_budget)
    assert await ledger.attempt(op.id) is None, "a refused step leaves nothing behind"
    await dispatching(store, op.id)
    current = await store.get(op.id)
    assert current is not None and current.execution_state == "dispatching"
    with pytest.raises(IllegalExecutionStep):
        await ledger.begin_preflight(op.id)


async def test_an_observation_needs_a_claimed_operation_in_a_step_that_allows_it(
    store: Store,
) -> None:
    ledger = ExecutionLedger(store)
    seen = Observation(Stage.INITIAL, "filled", Execution.COMPLETED, {"filled": "1"})
    unclaimed = await offered(store)
    with pytest.raises(IllegalTransition):  # nobody confirmed it: nothing can be observed
        await ledger.record_observation(unclaimed.id, seen)
    claimed_op = await claimed(store)
    with pytest.raises(IllegalExecutionStep) as raised:  # claimed, but nothing was sent
        await ledger.record_observation(claimed_op.id, seen)
    assert raised.value.current is Execution.QUEUED
    for op in (unclaimed, claimed_op):
        assert await ledger.outcomes(op.id) == [], "a refused observation writes nothing"
        assert await ledger.attempt(op.id) is None
    with pytest.raises(OperationNotFound):  # said plainly, not as a step from "queued"
        await ledger.begin_preflight("01NO0PERAT10N0F0UND0000000")
    await dispatching(store, claimed_op.id)
    [outcome] = [await ledger.record_observation(claimed_op.id, seen)]
    assert await ledger.outcomes(claimed_op.id) == [outcome]


async def test_a_refusal_by_the_budget_concludes_once_for_the_proposers_route(
    store: Store,
) -> None:
    source = Source("dev-agent", uuid.uuid4().hex, conversation=Conversation("oc_ops", "om_t"))
    routed = await offered(store, request_id=source.request_id, source=source)
    claim = await store.confirm_and_claim(
        Click(routed.id, "confirm", routed.confirm_digest, "ou_alice")
    )
    assert isinstance(claim, Claimed)
    ledger = ExecutionLedger(store)
    await ledger.begin_preflight(routed.id)
    refusal = await reserve(ledger, routed.id, hold("acct", Decimal(20), Decimal(10), Decimal(0)))
    assert isinstance(refusal, ReservationRefused)
    [outcome] = await ledger.outcomes(routed.id)
    assert outcome.status == "reservation_refused"
    [conclusion] = await DeliveryLedger(store).find(operation_id=routed.id)
    assert (conclusion.channel, conclusion.stage) == ("reply", "initial")
    assert conclusion.outcome_digest == outcome.outcome_digest
    current = await store.get(routed.id)
    assert current is not None and current.execution_state == "reservation_refused"
    assert await ledger.held("acct") == Decimal(0), "nothing is held for a refused order"


async def test_two_orders_that_fit_alone_but_not_together_reserve_once(store: Store) -> None:
    first, second = await preflighted(store), await preflighted(store)
    ledger = ExecutionLedger(store)
    results = await asyncio.gather(
        reserve(ledger, first.id, hold("acct", Decimal("600.5"), Decimal(1000), Decimal(100))),
        reserve(ledger, second.id, hold("acct", Decimal("600.5"), Decimal(1000), Decimal(100))),
    )
    assert sorted(type(r).__name__ for r in results) == ["ReservationRefused", "Reserved"]
    refused = next(r for r in results if isinstance(r, ReservationRefused))
    assert "exceed" in refused.reason and refused.held == Decimal("600.5")
    assert await ledger.held("acct") == Decimal("600.5")
    # the refusal was recorded by the write that found it: outcome, state, nothing due
    loser = first if results[0] is refused else second
    [outcome] = await ledger.outcomes(loser.id)
    assert outcome.status == "reservation_refused" and "exceed" in outcome.detail["reason"]
    current = await store.get(loser.id)
    assert current is not None and current.state is State.OUTCOME_OBSERVED
    assert current.execution_state == "reservation_refused"
    assert await _exec_due_at(store, loser.id) is None


async def test_an_order_converted_after_the_observation_still_counts(store: Store) -> None:
    """The race two replicas really run: B observed the venue before A's order was placed,
    and A's reservation turned into that order before B reserved."""
    first, second, third = (
        await preflighted(store),
        await preflighted(store),
        await preflighted(store),
    )
    ledger = ExecutionLedger(store)
    budget, amount = Decimal(1000), Decimal(600)
    b_observed_at = store.clock()  # B's observation: A's order is not on the venue yet
    assert isinstance(
        await reserve(ledger, first.id, hold("acct", amount, budget, Decimal(0))), Reserved
    )
    assert await ledger.settle(first.id, converted=True)  # A's order is now on the venue
    assert await ledger.held("acct") == 0
    refused = await reserve(
        ledger, second.id, hold("acct", amount, budget, Decimal(0), b_observed_at)
    )
    assert isinstance(refused, ReservationRefused) and refused.held == amount
    # An observation taken after the conversion shows A's order itself: counted once, there.
    fresh = await reserve(
        ledger,
        third.id,
        hold("acct", Decimal(300), budget, amount, store.clock() + timedelta(seconds=1)),
    )
    assert isinstance(fresh, Reserved) and fresh.held_after == Decimal(300)


async def test_fifty_concurrent_reservations_never_exceed_the_budget(store: Store) -> None:
    ops = [await preflighted(store) for _ in range(50)]
    ledger = ExecutionLedger(store)
    amounts = [Decimal(random.randint(1, 400)) / 10 for _ in ops]
    budget, observed = Decimal(500), Decimal("37.5")
    results = await asyncio.gather(
        *[
            reserve(ledger, op.id, hold("busy", amount, budget, observed))
            for op, amount in zip(ops, amounts, strict=True)
        ]
    )
    reserved = sum((r.amount for r in results if isinstance(r, Reserved)), Decimal(0))
    assert observed + reserved <= budget
    assert await ledger.held("busy") == reserved
    assert any(isinstance(r, ReservationRefused) for r in results)
    # every operation got exactly one answer: reserved, or refused with the refusal recorded
    current = [await store.get(op.id) for op in ops]
    states = Counter(op.execution_state for op in current if op is not None)
    assert states == {
        "reserved": sum(isinstance(r, Reserved) for r in results),
        "reservation_refused": sum(isinstance(r, ReservationRefused) for r in results),
    }


async def test_a_reservation_survives_a_restart_and_is_released_once(
    store: Store, backend: Backend
) -> None:
    op = await preflighted(store)
    ledger = ExecutionLedger(store)
    assert isinstance(
        await reserve(ledger, op.id, hold("acct", Decimal(10), Decimal(100), Decimal(0))),
        Reserved,
    )
    reopened = await open_store(backend.url, schema=backend.schema)
    try:
        again = ExecutionLedger(reopened)
        assert await again.held("acct") == Decimal(10)
        # asking again after a restart takes no second hold: the operation is reserved
        with pytest.raises(IllegalExecutionStep):
            await reserve(again, op.id, hold("acct", Decimal(10), Decimal(15), Decimal(0)))
        assert await again.held("acct") == Decimal(10)
        assert await again.release(op.id) and not await again.release(op.id)
        assert await again.held("acct") == Decimal(0)
    finally:
        await reopened.close()


async def test_an_observation_is_one_write_with_everything_that_follows(store: Store) -> None:
    op = await preflighted(store)
    ledger = ExecutionLedger(store)
    await reserve(ledger, op.id, hold("acct", Decimal(10), Decimal(100), Decimal(0)))
    await ledger.begin_dispatch(op.id, f"cs-{op.id}")
    before = writes(store)
    await ledger.record_observation(
        op.id,
        Observation(
            Stage.INITIAL,
            "working",
            Execution.SUBMITTED,
            {"filled": "0"},
            concludes=False,
            settles=ReservationState.CONVERTED,
            look_again_in_s=30,
            answers_attempt=True,
        ),
    )
    assert writes(store) == before + 1
    current = await store.get(op.id)
    assert current is not None and current.state is State.OUTCOME_OBSERVED
    assert current.execution_state == "submitted" and current.card_due_at is not None
    assert await ledger.reservation_state(op.id) == "converted"
    due = await _exec_due_at(store, op.id)
    assert due is not None and due > store.clock() + timedelta(seconds=20)
    attempt = await ledger.attempt(op.id)
    assert attempt is not None and attempt.resolved_at is not None and attempt.last_error is None


async def test_a_failing_observation_writes_nothing(store: Store) -> None:
    op = await preflighted(store)
    ledger = ExecutionLedger(store)
    await reserve(ledger, op.id, hold("acct", Decimal(10), Decimal(100), Decimal(0)))
    with pytest.raises(IllegalExecutionStep):  # reserved: nothing was sent to observe
        await ledger.record_observation(
            op.id,
            Observation(
                Stage.INITIAL,
                "filled",
                Execution.COMPLETED,
                settles=ReservationState.CONVERTED,
            ),
        )
    assert await ledger.outcomes(op.id) == []
    assert await ledger.reservation_state(op.id) == "active"
    current = await store.get(op.id)
    assert current is not None and current.execution_state == "reserved"


async def test_outcomes_append_and_a_reconciliation_names_what_it_reconciles(store: Store) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    await dispatching(store, op.id)
    unknown = await ledger.record_observation(
        op.id,
        Observation(
            Stage.INITIAL,
            "unknown",
            Execution.SUBMISSION_UNKNOWN,
            {"why": "response lost"},
            answers_attempt=True,
            attempt_error="response lost",
        ),
    )
    after = await store.get(op.id)
    assert after is not None and after.state is State.OUTCOME_OBSERVED
    assert after.execution_state == "submission_unknown" and after.version == op.version + 1
    attempt = await ledger.attempt(op.id)
    assert attempt is not None and attempt.last_error == "response lost"
    filled = await ledger.record_observation(
        op.id,
        Observation(
            Stage.RECONCILED,
            "filled",
            Execution.RECONCILED,
            {"filled_qty": "0.010", "avg_price": "60000"},
            reconciles=unknown.outcome_digest,
            answers_attempt=True,
        ),
    )
    outcomes = await ledger.outcomes(op.id)
    assert [(o.stage, o.status) for o in outcomes] == [
        ("initial", "unknown"),
        ("reconciled", "filled"),
    ]
    assert outcomes[1].reconciles_digest == unknown.outcome_digest != filled.outcome_digest
    assert outcomes[1].detail == {"filled_qty": "0.010", "avg_price": "60000"}
    attempt = await ledger.attempt(op.id)
    assert attempt is not None and attempt.last_error is None
    with pytest.raises(IllegalExecutionStep):
        await ledger.record_observation(
            op.id, Observation(Stage.INITIAL, "filled", Execution.SUBMITTED)
        )


async def _exec_due_at(store: Store, operation_id: str) -> Any:
    async with store.read() as conn:
        return (
            await conn.execute(
                select(OperationRow.exec_due_at).where(OperationRow.id == operation_id)
            )
        ).scalar_one()


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
            ops = [await preflighted(store) for _ in amounts]
            ledger = ExecutionLedger(store)
            results = await asyncio.gather(
                *[
                    reserve(ledger, op.id, hold(account, a, budget, observed))
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
