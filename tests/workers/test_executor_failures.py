"""Issue 30, "confirmed and stuck forever": an executor pass that keeps raising is concluded
after `max_failed_passes`, by where the store says the operation stands, never a silent loop.

The stuck order is filed the way an older release could (the store's own propose path, no
API intake bounds): quantity 1e25 at a limit of 1e-22, which shows as 1,000 USDC and made
every preflight raise decimal.DivisionImpossible on the real simulated venue (and, with the
schema's decimal bounds, fails validation at every pass instead: stuck all the same).
"""

from __future__ import annotations

import decimal
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from store import (
    Conversation,
    DeliveryLedger,
    Execution,
    ExecutionLedger,
    Operation,
    Source,
    Store,
    open_store,
)
from tests.support.backends import Backend
from tests.support.stuck import STUCK, confirmed, executor, one_pass
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue
from workers.execution_failures import error_class
from workers.executor import ExecutionWorker

BUDGET = 5


@pytest.fixture
async def venue(tmp_path: Path) -> AsyncIterator[SimVenue]:
    async with await SimVenue.open(tmp_path / "venue.db") as opened:
        yield opened


def worker(store: Store, venue: SimVenue, budget: int = BUDGET) -> ExecutionWorker:
    return executor(store, venue, budget)


async def stuck(store: Store) -> Operation:
    """The stuck order, confirmed, whose proposer asked for the conclusion in a chat."""
    source = Source("dev-agent", "stuck-1", conversation=Conversation("oc_ops", "om_thread"))
    return await confirmed(store, payload=STUCK, source=source)


async def test_a_pass_that_always_raises_is_concluded_unresolved_after_the_budget(
    store: Store, venue: SimVenue
) -> None:
    op = await stuck(store)
    work = worker(store, venue)
    ledger = ExecutionLedger(store)
    for _ in range(BUDGET - 1):
        await one_pass(store, work, op.id)
        assert await ledger.outcomes(op.id) == []  # still trying: nothing concluded yet
    await one_pass(store, work, op.id)

    assert work.failures == BUDGET
    [outcome] = await ledger.outcomes(op.id)
    assert (outcome.stage, outcome.status) == ("initial", "unresolved")
    # the class, never the message: the preflight's DivisionImpossible, or, once the schema
    # bounds decimals (issue 30, item 2), its refusal of what an older release filed
    assert outcome.detail["error_class"] in ("DivisionImpossible", "ValidationError")
    assert "0000000000" not in str(outcome.detail)  # no value from the message leaks
    assert outcome.detail["failed_passes"] == BUDGET and outcome.detail["nothing_sent"] is True
    concluded = await store.get(op.id)
    assert concluded is not None and concluded.execution_state == "preflight_rejected"
    assert concluded.state.value == "outcome_observed"
    # final: nothing is due any more, nothing reached the venue, no attempt was made
    assert await ledger.lease_due(10) == []
    assert await ledger.next_due() is None
    assert await venue.orders() == [] and await ledger.attempt(op.id) is None
    # the proposer hears of it like any other conclusion
    [conclusion] = await DeliveryLedger(store).find(operation_id=op.id)
    assert (conclusion.stage, conclusion.outcome_digest) == ("initial", outcome.outcome_digest)


async def test_the_count_of_failed_passes_survives_a_restart(
    store: Store, venue: SimVenue, backend: Backend
) -> None:
    op = await stuck(store)
    before = worker(store, venue)
    for _ in range(BUDGET - 2):
        await one_pass(store, before, op.id)
    ledger = ExecutionLedger(store)
    assert await ledger.outcomes(op.id) == []

    # a restart: a new store connection and a new worker, which remember nothing themselves
    reopened = await open_store(backend.url, schema=backend.schema)
    try:
        after = worker(reopened, venue)
        await one_pass(reopened, after, op.id)
        assert await ledger.outcomes(op.id) == []
        await one_pass(reopened, after, op.id)
    finally:
        await reopened.close()

    assert after.failures == 2  # the budget was spent across the restart, not reset by it
    [outcome] = await ledger.outcomes(op.id)
    assert outcome.status == "unresolved" and outcome.detail["failed_passes"] == BUDGET


async def test_a_pass_that_ends_normally_resets_the_count(store: Store, venue: SimVenue) -> None:
    """Failures must come in a row: one good pass in between starts the count again."""
    op = await stuck(store)
    work = worker(store, venue, budget=2)
    await one_pass(store, work, op.id)
    await ExecutionLedger(store).schedule(op.id, 0.0, tried=True)  # a pass that learned nothing
    await one_pass(store, work, op.id)
    assert await ExecutionLedger(store).outcomes(op.id) == []  # 1 in a row, not 2
    await one_pass(store, work, op.id)
    [outcome] = await ExecutionLedger(store).outcomes(op.id)
    assert outcome.status == "unresolved" and outcome.detail["failed_passes"] == 2


async def test_a_pass_that_failed_after_dispatch_is_reconciled_never_concluded_unsent(
    store: Store, venue: SimVenue
) -> None:
    """The order reached the venue, then the pass raised: with a budget of one failure, the
    operation goes to reconciliation (unknown), which finds the fill; never "nothing sent"."""
    op = await confirmed(store)
    work = worker(store, venue, budget=1)
    venue.after_commit, raised = raising_once()
    ledger = ExecutionLedger(store)
    await one_pass(store, work, op.id)
    assert raised == [client_id_for(op.id)] and work.failures == 1
    [unknown] = await ledger.outcomes(op.id)
    assert (unknown.status, unknown.detail["error_class"]) == ("unknown", "ArithmeticError")
    assert unknown.detail["nothing_sent"] is False
    assert await ledger.reservation_state(op.id) == "active"  # held while it is unknown

    await one_pass(store, work, op.id)  # the reconciler looks the client id up
    statuses = [(o.stage, o.status) for o in await ledger.outcomes(op.id)]
    assert statuses == [("initial", "unknown"), ("reconciled", "filled")]
    assert all(o.submit_count == 1 for o in await venue.orders())  # never sent again


async def test_a_reconciliation_that_keeps_failing_ends_unresolved_with_the_reservation_held(
    store: Store, venue: SimVenue, tmp_path: Path
) -> None:
    """An unknown whose lookups keep raising (the venue's record of it is unreadable) ends
    unresolved for people, the reservation still held: it may be on the venue."""
    op = await confirmed(store)
    work = worker(store, venue, budget=2)
    venue.after_commit, _ = raising_once()
    await one_pass(store, work, op.id)  # sent, then raised: 1 of 2, still dispatching
    ledger = ExecutionLedger(store)
    assert await ledger.outcomes(op.id) == []
    with sqlite3.connect(tmp_path / "venue.db") as venue_db:  # its record is corrupted
        venue_db.execute("UPDATE orders SET filled_qty = 'not a number'")

    await one_pass(store, work, op.id)  # dispatching: unknown, then the lookup raises
    assert [o.status for o in await ledger.outcomes(op.id)] == ["unknown"]
    stored = await store.get(op.id)
    assert stored is not None and stored.execution_state == Execution.SUBMISSION_UNKNOWN
    await one_pass(store, work, op.id)  # the lookup raises again: 2 in a row

    unknown, unresolved = await ledger.outcomes(op.id)
    assert (unresolved.stage, unresolved.status) == ("reconciled", "unresolved")
    assert unresolved.reconciles_digest == unknown.outcome_digest
    assert unresolved.detail["nothing_sent"] is False
    assert "not a number" not in str(unresolved.detail)  # the class only, never the message
    assert await ledger.reservation_state(op.id) == "active"
    assert await ledger.next_due() is None  # no silent loop: people take over


def raising_once() -> tuple[Callable[[str], None], list[str]]:
    """A venue hook that raises the first time an order is committed (it is on the venue by
    then), and the client ids it raised for."""
    raised: list[str] = []

    def hook(client_id: str) -> None:
        if not raised:
            raised.append(client_id)
            raise ArithmeticError("after the venue took it")

    return hook, raised


def test_the_error_class_names_the_decimal_condition_never_the_message() -> None:
    """What the card and the proposer read of a failure: a class name, no value from it."""
    with pytest.raises(decimal.InvalidOperation) as division:
        decimal.Decimal(10**25) // decimal.Decimal("1e-22")  # the finding's arithmetic
    assert error_class(division.value) == "DivisionImpossible"
    assert error_class(KeyError("token-0123456789")) == "KeyError"
