"""The conformance suite every finance venue passes before it ships (design M4 rule).

Each test runs once per venue harness (the simulated venue; the Hyperliquid adapter on an
in-process hlsandbox), on the real store (both backends), driving the real ExecutionWorker
with a FinanceRunner that keeps its evidence in the store: submit once; each fault the
harness can inject settled by lookup or the fence without a second order; preflight and
precision refusals send nothing; two orders that each fit the budget but not together race
for it; partial fills; protective children; fees unknown vs zero.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cards.outcomes import outcome_parts, outcome_title
from store import Claimed, Click, ExecutionLedger, Operation, Store
from tests.support.driving import drive, statuses
from tests.support.factories import draft
from tests.support.projection import outcome_view_of
from tests.support.venue_harness import FAULTS, HARNESSES, VenueHarness, open_harness
from workers.domains.execution import client_id_for
from workers.executor import ExecutionWorker

ZERO = Decimal(0)


async def claimed(store: Store, harness: VenueHarness, **payload: Any) -> Operation:
    """An order on the harness's venue, confirmed by an operator: claimed, not yet run."""
    proposed = await store.propose(
        draft(payload=harness.payload(**payload), **harness.draft_fields())
    )
    op = await store.mark_card_sent(proposed.operation.id, f"om_{proposed.operation.id}")
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


def worker_for(store: Store, harness: VenueHarness) -> ExecutionWorker:
    runner = harness.runner(ExecutionLedger(store), store.clock)
    # the executor waits longer than the adapter's own request timeout (2 s), so the
    # adapter, not the executor, decides a request was ambiguous
    return ExecutionWorker(
        store,
        {runner.kind: runner},
        submit_timeout_s=4.0,
        not_found_after_s=6.0,
        track_max_s=0.5,
    )


async def run_until(store: Store, harness: VenueHarness, op: Operation, *last: str) -> list[str]:
    """Drive one worker until the operation's last outcomes are `last`; all its statuses."""
    read = statuses(store, op)

    async def there() -> bool:
        return (await read())[-len(last) :] == list(last)

    await drive(worker_for(store, harness), there)
    return await read()


# -- submit once --------------------------------------------------------------------------------


async def test_a_confirmed_order_is_submitted_once_and_filled(
    store: Store, harness: VenueHarness
) -> None:
    op = await claimed(store, harness)
    # an answer slower than the request timeout (a busy machine) is unknown, then reconciled
    # to the same one fill: either way one order and the same fill
    assert await run_until(store, harness, op, "filled") in (["filled"], ["unknown", "filled"])
    outcome = (await ExecutionLedger(store).outcomes(op.id))[-1]
    detail = outcome.detail
    assert (detail["venue"], detail["world"]) == (harness.kind, harness.world.value)
    assert (Decimal(detail["filled_qty"]), Decimal(detail["avg_price"])) == (
        Decimal("0.001"),
        Decimal(60000),
    )
    assert (Decimal(detail["fees"]), detail["fee_currency"]) == (Decimal("0.027"), "USDC")
    client_id = client_id_for(op.id)
    assert (await harness.seen(client_id), await harness.placed(client_id)) == (1, 1)
    assert await ExecutionLedger(store).reservation_state(op.id) == "converted"


# -- each fault, settled without a second order --------------------------------------------------

# fault -> the outcomes it ends with, how many orders the venue holds at the end, and what
# the card says of the last outcome (then " · " and the world)
RECONCILED_FILLED = (["unknown", "filled"], 1, "Reconciled: Filled")
NEVER_PLACED = (["unknown", "not_submitted"], 0, "Reconciled: Not executed — it was never received")
ENDS: dict[str, tuple[list[str], int, str]] = {
    "answer_lost_after_commit": RECONCILED_FILLED,
    "never_landed": NEVER_PLACED,
    "error_after_commit": RECONCILED_FILLED,
    "delivered_twice": RECONCILED_FILLED,
    "rate_limited": NEVER_PLACED,
    "fee_missing": (["filled"], 1, "Filled"),
}
# every fault a harness declares, and only those: nothing is skipped
CASES = [
    pytest.param(kind, fault, id=f"{kind}-{fault}")
    for kind, harness_type in HARNESSES.items()
    for fault in FAULTS
    if fault in harness_type.faults
]


@pytest.mark.parametrize(("kind", "fault"), CASES)
async def test_each_fault_is_settled_by_lookup_never_by_a_second_order(
    store: Store, tmp_path: Path, kind: str, fault: str
) -> None:
    ending, orders, title = ENDS[fault]
    async with open_harness(kind, tmp_path) as harness:
        op = await claimed(store, harness)
        await harness.inject(fault)
        assert await run_until(store, harness, op, ending[-1]) == ending
        await harness.settle()  # a held request is let go now: fenced, it must not land
        client_id = client_id_for(op.id)
        seen, placed = await harness.seen(client_id), await harness.placed(client_id)
        # the adapter sent it once: only the network's duplicate reaches the venue twice
        assert seen <= (2 if fault == "delivered_twice" else 1), seen
        assert placed == orders, placed
        outcomes = await ExecutionLedger(store).outcomes(op.id)
        last = outcomes[-1]
        if len(outcomes) == 2:
            assert last.stage == "reconciled"
            assert last.reconciles_digest == outcomes[0].outcome_digest
        said = outcome_view_of({"stage": last.stage, "status": last.status, "words": last.words})
        card_title = outcome_title(said, harness.world, "en")
        assert card_title == f"{title} · {harness.world.value.upper()}", card_title
        words = outcome_parts(last.detail)
        if ending[-1] == "not_submitted":  # proved never placed: a new card is the way on
            assert await ExecutionLedger(store).reservation_state(op.id) == "released"
            assert any("new confirmation" in line for line in words), words
        if fault == "fee_missing":
            assert last.detail["fees"] is None
            assert "Fee unknown" in outcome_parts(last.detail)


# -- refusals: nothing is sent ---------------------------------------------------------------------

REFUSALS = [
    pytest.param({"quantity": "0.000001"}, "quantity_off_lot", id="off-lot"),
    pytest.param({"limit_price": "60000.5"}, "price_too_precise", id="six-significant-figures"),
    pytest.param({"quantity": "0.0001"}, "below_minimum_notional", id="below-10-dollars"),
    pytest.param({"max_fee": "0.001"}, "fee_cap_too_low", id="fee-cap"),
    pytest.param({"leverage": "50"}, "leverage_above_max", id="leverage-above-max"),
    pytest.param(
        {"protective": {"stop_loss": "57000.5"}}, "protective_too_precise", id="stop-precision"
    ),
]


@pytest.mark.parametrize(("terms", "code"), REFUSALS)
async def test_preflight_and_precision_refusals_send_nothing(
    store: Store, harness: VenueHarness, terms: dict[str, Any], code: str
) -> None:
    op = await claimed(store, harness, **terms)
    assert await run_until(store, harness, op, "preflight_rejected") == ["preflight_rejected"]
    [outcome] = await ExecutionLedger(store).outcomes(op.id)
    assert outcome.detail["code"] == code, outcome.detail
    assert await ExecutionLedger(store).attempt(op.id) is None
    assert await harness.seen(client_id_for(op.id)) == 0


# -- the budget under a race -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(HARNESSES))
async def test_two_orders_that_fit_alone_but_not_together_race_for_the_budget(
    store: Store, tmp_path: Path, kind: str
) -> None:
    # each holds 60 (0.001 at 60000) + 1 (its fee cap); the budget holds one, not two
    async with open_harness(kind, tmp_path, budget="100") as harness:
        first, second = await claimed(store, harness), await claimed(store, harness)
        ledger = ExecutionLedger(store)

        async def both_settled() -> bool:
            return all([await ledger.outcomes(first.id), await ledger.outcomes(second.id)])

        # two workers, as two replicas would run them, each draining at once
        workers = [worker_for(store, harness), worker_for(store, harness)]
        await asyncio.gather(*(drive(worker, both_settled) for worker in workers))
        ends = sorted(
            [(await statuses(store, op)(), client_id_for(op.id)) for op in (first, second)]
        )
        assert [status for status, _ in ends] == [["filled"], ["reservation_refused"]], ends
        [(_, filled_id), (_, refused_id)] = ends
        refused_op = first if client_id_for(first.id) == refused_id else second
        [refused] = await ledger.outcomes(refused_op.id)
        assert refused.detail["code"] == "budget_exceeded", refused.detail
        assert await ledger.reservation_state(refused_op.id) is None
        assert (await harness.seen(filled_id), await harness.placed(filled_id)) == (1, 1)
        assert (await harness.seen(refused_id), await harness.placed(refused_id)) == (0, 0)


# -- partial fills and protective orders -------------------------------------------------------------


async def test_a_partial_fill_rests_and_fills_on(store: Store, harness: VenueHarness) -> None:
    await harness.set_liquidity(Decimal("0.0004"))
    op = await claimed(store, harness)
    assert await run_until(store, harness, op, "partially_filled") == ["partially_filled"]
    [partial] = await ExecutionLedger(store).outcomes(op.id)
    filled, remaining = partial.detail["filled_qty"], partial.detail["remaining_qty"]
    assert (Decimal(filled), Decimal(remaining)) == (Decimal("0.0004"), Decimal("0.0006"))
    await harness.set_liquidity(None)
    await harness.match()
    assert await run_until(store, harness, op, "filled") == ["partially_filled", "filled"]
    outcomes = await ExecutionLedger(store).outcomes(op.id)
    assert Decimal(outcomes[-1].detail["filled_qty"]) == Decimal("0.001")
    client_id = client_id_for(op.id)
    assert (await harness.seen(client_id), await harness.placed(client_id)) == (1, 1)


async def test_protective_children_are_placed_and_trigger_on_a_mark_move(
    store: Store, harness: VenueHarness
) -> None:
    protective = {"stop_loss": "57000", "take_profit": "65000"}
    op = await claimed(store, harness, protective=protective)
    await run_until(store, harness, op, "filled")
    ledger = ExecutionLedger(store)
    placed = (await ledger.outcomes(op.id))[-1].detail["protective"]
    assert [(c["role"], c["trigger_price"]) for c in placed] == [
        ("stop_loss", "57000"),
        ("take_profit", "65000"),
    ]
    assert all(c["status"] not in ("filled", "cancelled", "rejected") for c in placed), placed

    await harness.set_mark(Decimal("65000"))

    async def triggered() -> bool:
        children = (await ledger.outcomes(op.id))[-1].detail["protective"]
        return [c["status"] for c in children] == ["cancelled", "filled"]

    await drive(worker_for(store, harness), triggered)
    children = (await ledger.outcomes(op.id))[-1].detail["protective"]
    assert Decimal(children[1]["filled_qty"]) == Decimal("0.001"), children
    assert await harness.placed(client_id_for(op.id)) == 1


# -- fees: unknown is not zero -------------------------------------------------------------------------


@pytest.mark.parametrize("fees", ["missing", "zero"])
async def test_a_missing_fee_is_unknown_and_a_zero_rate_is_zero(
    store: Store, harness: VenueHarness, fees: str
) -> None:
    if fees == "missing":
        await harness.inject("fee_missing")
    else:
        await harness.zero_fees()
    op = await claimed(store, harness)
    await run_until(store, harness, op, "filled")
    [outcome] = await ExecutionLedger(store).outcomes(op.id)
    words = outcome_parts(outcome.detail)
    if fees == "missing":
        assert outcome.detail["fees"] is None and "Fee unknown" in words, words
    else:
        # known and zero: said as a number ("Fees 0 USDC"; the venue's own "0.0" as is)
        [said] = [w for w in words if w.startswith("Fees ")]
        amount, currency = said.removeprefix("Fees ").split()
        assert (Decimal(outcome.detail["fees"]), Decimal(amount), currency) == (ZERO, ZERO, "USDC")
