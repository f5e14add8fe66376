"""The store's side of the executor's failure budget: failed passes counted durably, reset
by a pass that ends normally, and an "unresolved, nothing sent" conclusion that releases the
reservation and holds only while the store proves that no attempt was recorded."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import update

from store.authority.records import Operation
from store.authority.store import Store
from store.claims.exposure import Exposure
from store.execution.execution_ledger import ExecutionLedger
from store.execution.records import FailedPass
from store.lifecycle import Execution, IllegalExecutionStep
from store.schema.tables import OperationRow
from tests.support.factories import dispatching, refused_by_budget
from tests.support.stuck import confirmed
from workers.execution_failures import concluding


async def preflighted(store: Store) -> Operation:
    op = await confirmed(store)
    await ExecutionLedger(store).begin_preflight(op.id)
    return op


async def test_failed_passes_are_counted_in_the_store_and_reset_by_a_normal_end(
    store: Store,
) -> None:
    op = await preflighted(store)
    ledger = ExecutionLedger(store)
    first = await ledger.failed_pass(op.id, 0.0)
    second = await ledger.failed_pass(op.id, 0.0)
    assert (first.count, second.count) == (1, 2)
    assert second == FailedPass(2, Execution.PREFLIGHT, attempt_recorded=False)
    await ledger.schedule(op.id, 0.0, tried=True)  # a pass that ended normally
    assert (await ledger.failed_pass(op.id, 0.0)).count == 1


async def test_giving_up_before_dispatch_releases_the_reservation(store: Store) -> None:
    op = await preflighted(store)
    ledger = ExecutionLedger(store)
    exposure = Exposure("sim-main", Decimal("600"), Decimal("1000"), Decimal(0))
    await ledger.reserve_and_mark(op.id, exposure, refused=refused_by_budget)
    assert await ledger.held("sim-main") == Decimal("600")
    failed = await ledger.failed_pass(op.id, 0.0)
    assert failed.execution is Execution.RESERVED
    seen = concluding(failed, "KeyError", None)
    assert seen is not None
    await ledger.record_observation(op.id, seen)

    assert await ledger.reservation_state(op.id) == "released"
    assert await ledger.held("sim-main") == Decimal(0)
    [outcome] = await ledger.outcomes(op.id)
    assert (outcome.status, outcome.detail["nothing_sent"]) == ("unresolved", True)


async def test_nothing_sent_is_refused_by_the_store_when_an_attempt_is_recorded(
    store: Store,
) -> None:
    """Should an operation show a pre-dispatch state beside a recorded attempt (an older
    release's leftovers), the store refuses to write "nothing was sent" for it."""
    op = await confirmed(store)
    await dispatching(store, op.id)
    async with store.engine.begin() as conn:  # the state as an older release could leave it
        await conn.execute(
            update(OperationRow)
            .where(OperationRow.id == op.id)
            .values(execution_state=Execution.RESERVED.value)
        )
    ledger = ExecutionLedger(store)
    forged = FailedPass(5, Execution.RESERVED, attempt_recorded=False)  # what a race could see
    seen = concluding(forged, "KeyError", None)
    assert seen is not None and seen.nothing_sent
    with pytest.raises(IllegalExecutionStep):
        await ledger.record_observation(op.id, seen)
    assert await ledger.outcomes(op.id) == []
    # and what the store reports after a failed pass sends it nowhere "unsent"
    failed = await ledger.failed_pass(op.id, 0.0)
    assert failed.attempt_recorded and concluding(failed, "KeyError", None) is None
