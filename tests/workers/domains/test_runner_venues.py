"""The finance runner holds one venue per name and sends each call to the order's own venue,
never another. Two real simulated venues in two files under two names stand in for two
venues; the store is real. Also: a venue's capabilities fail only its own proposals, a
venue changed since the confirmation refuses before anything is sent, and a venue's proof
that an order never landed is `not_submitted` at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from store import Claimed, Click, ExecutionLedger, Operation, Store, World
from tests.support.factories import ORDER_PAYLOAD, offered
from tests.support.waiting import eventually
from workers.domains.base import ReadingUnavailable, RunnerContext
from workers.domains.execution import Refusal, client_id_for
from workers.domains.finance.capability import VenueReadings
from workers.domains.finance.domain import FinanceDomain
from workers.domains.finance.runner import FinanceRunner
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.settings import FinanceAccount, FinanceSettings
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import VenueOrder
from workers.executor import ExecutionWorker

SETTINGS = FinanceSettings(
    accounts=[
        FinanceAccount(name="sim-main", budget="100000"),
        FinanceAccount(name="b-main", venue="sim-b", budget="100000"),
    ]
)
ON_B = {**ORDER_PAYLOAD, "venue": "sim-b", "account": "b-main"}


@pytest.fixture
async def venues(tmp_path: Path) -> AsyncIterator[dict[str, SimVenue]]:
    a = await SimVenue.open(tmp_path / "a.db")
    b = await SimVenue.open(tmp_path / "b.db", accounts=["b-main"])
    yield {"sim": a, "sim-b": b}
    await a.close()
    await b.close()


def runner_for(store: Store, venues: dict[str, SimVenue], **options: Any) -> FinanceRunner:
    ledger = ExecutionLedger(store)
    return FinanceRunner(
        dict(venues),
        SETTINGS,
        clock=store.clock,
        record_evidence=ledger.record_evidence,
        evidence_of=ledger.evidence,
        **options,
    )


def worker_for(store: Store, runner: FinanceRunner) -> ExecutionWorker:
    return ExecutionWorker(
        store,
        {runner.kind: runner},
        submit_timeout_s=2.0,
        not_found_after_s=600.0,  # a "never received" must come from the venue, not time
        track_max_s=1.0,
    )


async def claimed(store: Store, **overrides: Any) -> Operation:
    op = await offered(store, **overrides)
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


async def drive(worker: ExecutionWorker, done: Callable[[], Awaitable[bool]]) -> None:
    async def passed() -> bool:
        if await done():
            return True
        await worker.drain()
        return False

    await eventually(passed, what="the executor to finish")


def statuses(store: Store, operation_id: str) -> Callable[[], Awaitable[list[str]]]:
    async def read() -> list[str]:
        return [o.status for o in await ExecutionLedger(store).outcomes(operation_id)]

    return read


async def test_each_order_goes_to_its_own_venue_and_says_which(
    store: Store, venues: dict[str, SimVenue]
) -> None:
    worker = worker_for(store, runner_for(store, venues))
    on_b = await claimed(store, payload=ON_B, target_ref="account:sim-b/b-main")
    on_a = await claimed(store)

    async def both_filled() -> bool:
        return await statuses(store, on_b.id)() == ["filled"] == await statuses(store, on_a.id)()

    await drive(worker, both_filled)
    for op, name in ((on_a, "sim"), (on_b, "sim-b")):
        [outcome] = await ExecutionLedger(store).outcomes(op.id)
        assert (outcome.detail["venue"], outcome.detail["world"]) == (name, "simulated")
        other = venues["sim-b" if name == "sim" else "sim"]
        assert await other.lookup(client_id_for(op.id)) is None  # never the other venue
        mine = await venues[name].lookup(client_id_for(op.id))
        assert mine is not None and mine.submit_count == 1
        evidence = await ExecutionLedger(store).evidence(client_id_for(op.id))
        assert evidence == {"venue": "sim", "client_id": client_id_for(op.id)}
    assert {o.account for o in await venues["sim-b"].orders()} == {"b-main"}
    assert {o.account for o in await venues["sim"].orders()} == {"sim-main"}


async def test_the_runner_runs_the_executors_of_the_venues_it_opened(
    store: Store, venues: dict[str, SimVenue]
) -> None:
    runner = runner_for(store, venues)
    assert runner.runs("sim-venue", "1")
    assert not runner.runs("sim-venue", "2") and not runner.runs("hyperliquid", "1")
    with pytest.raises(ValueError, match="at least one venue"):
        FinanceRunner({}, SETTINGS, clock=store.clock)


async def test_a_venue_that_cannot_be_read_holds_up_only_its_own_proposals(
    store: Store, venues: dict[str, SimVenue]
) -> None:
    runner = runner_for(store, venues)
    domain = FinanceDomain()
    await venues["sim-b"].close()  # it can no longer answer
    readings = await runner.capabilities()
    assert isinstance(readings, VenueReadings)
    assert set(readings.read) == {"sim"} and set(readings.failed) == {"sim-b"}
    assert domain.capability_problems(FinanceOrderV1.model_validate(ORDER_PAYLOAD), readings) == []
    with pytest.raises(ReadingUnavailable, match="sim-b"):
        domain.capability_problems(FinanceOrderV1.model_validate(ON_B), readings)
    elsewhere = FinanceOrderV1.model_validate({**ORDER_PAYLOAD, "venue": "elsewhere"})
    [problem] = domain.capability_problems(elsewhere, readings)
    assert problem.field == "payload.venue" and "not connected" in problem.reason
    assert "sim, sim-b" in problem.reason
    # the approval amount of a market order is weighed at its own venue's mark
    market = FinanceOrderV1.model_validate(
        {
            **ORDER_PAYLOAD,
            "order_type": "market",
            "limit_price": None,
            "max_slippage_bps": "100",
            "time_in_force": "IOC",
            "protective": None,
        }
    )
    amount = domain.notional(market, SETTINGS, readings)
    assert amount is not None and amount.value == Decimal("0.010") * 60000 * Decimal("1.01")


async def test_every_venue_is_watched_and_the_operations_it_names_are_woken(
    store: Store, venues: dict[str, SimVenue]
) -> None:
    woken: list[str] = []

    async def wake(ids: Any) -> None:
        woken.extend(ids)

    runner = runner_for(store, venues, wake=wake, tick_s=0.05)
    resting = VenueOrder(
        client_id="cs-opb",  # operation opb's order
        account="b-main",
        instrument="BTC-PERP",
        side="buy",
        quantity=Decimal("0.010"),
        order_type="limit",
        time_in_force="GTC",
        leverage=Decimal(2),
        limit_price=Decimal(59000),
    )
    await venues["sim-b"].submit(resting)
    stop = asyncio.Event()
    clocks = runner.background()
    assert len(clocks) == 2  # one per venue: a slow one never holds up the other
    tasks = [asyncio.create_task(clock(stop)) for clock in clocks]
    try:
        await venues["sim-b"].set_mark("BTC-PERP", Decimal(58000))
        await eventually(lambda: "opb" in woken, what="the operation on sim-b to be woken")
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    assert woken == ["opb"]


async def test_a_venue_changed_since_the_confirmation_refuses_and_sends_nothing(
    store: Store, venues: dict[str, SimVenue]
) -> None:
    # confirmed while the venue was an emulator; the sim is open now
    op = await claimed(store, world=World.EMULATOR)
    runner = runner_for(store, venues)
    refusal = await runner.prepare(op)
    assert isinstance(refusal, Refusal) and refusal.code == "venue_changed"
    assert "emulator" in refusal.reason and "simulated" in refusal.reason
    worker = worker_for(store, runner)

    async def refused() -> bool:
        return await statuses(store, op.id)() == ["preflight_rejected"]

    await drive(worker, refused)
    [outcome] = await ExecutionLedger(store).outcomes(op.id)
    assert outcome.detail["code"] == "venue_changed"
    assert await venues["sim"].orders() == [] and await venues["sim-b"].orders() == []


async def test_a_venue_that_proves_an_order_never_landed_concludes_not_submitted_at_once(
    store: Store, venues: dict[str, SimVenue]
) -> None:
    venues["sim"].faults = Faults.parse("fence")
    op = await claimed(store)
    worker = worker_for(store, runner_for(store, venues))

    async def concluded() -> bool:
        return await statuses(store, op.id)() == ["unknown", "not_submitted"]

    await drive(worker, concluded)  # not_found_after is 10 minutes: the venue decided
    last = (await ExecutionLedger(store).outcomes(op.id))[-1]
    assert last.detail["reason"].startswith("fenced")
    assert (last.detail["venue"], last.detail["world"]) == ("sim", "simulated")
    assert last.detail["client_id"] == client_id_for(op.id)
    assert await venues["sim"].orders() == []  # and nothing was ever placed


async def test_a_disabled_finance_opens_only_venues_that_hold_state(tmp_path: Path) -> None:
    """Disabled, finance creates no venue file (nothing in the working directory); a venue
    file left from when it was enabled still opens, so earlier orders are reconciled."""

    async def nothing(*_args: Any) -> None:
        return None

    async def no_decision(_operation_id: str) -> str | None:
        return None

    context = RunnerContext(
        clock=lambda: datetime.now(UTC),
        environ={},
        decision_of=no_decision,
        on_dispatched=lambda _operation_id: None,
        wake=nothing,
    )
    path = tmp_path / "var" / "sim-venue.db"
    settings = FinanceSettings(
        enabled=False, venue_path=str(path), accounts=[FinanceAccount(name="sim-main", budget="1")]
    )
    domain = FinanceDomain()
    assert await domain.open_runner(settings, context) is None
    assert not path.exists() and not path.parent.exists()

    enabled = await domain.open_runner(settings.model_copy(update={"enabled": True}), context)
    assert enabled is not None and path.exists()
    await enabled.close()
    later = await domain.open_runner(settings, context)  # disabled again, the file there
    assert later is not None and "sim" in later.venues
    await later.close()
