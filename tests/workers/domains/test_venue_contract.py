"""The simulated venue speaks the one Venue contract the executor speaks to every venue: its
profile, its world on every answer, evidence recorded before the write, lookup, fills, the
account as it reports it, and `watch()` naming what changed. On a real venue file."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from store import World
from workers.domains.finance.domain import FinanceDomain
from workers.domains.finance.preflight import observed_exposure
from workers.domains.finance.schema import EXECUTORS
from workers.domains.finance.settings import FinanceAccount, FinanceSettings
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.profile import PROFILE, VENUE_NAME
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.contract import Evidence, NeverLanded, Venue
from workers.domains.finance.venues.model import LOCAL_WORLDS, VenueOrder
from workers.domains.finance.venues.opening import (
    declared_profile,
    open_venues,
    venue_names,
)

D = Decimal
ORDER = VenueOrder(
    client_id="cs-one",
    account="sim-main",
    instrument="BTC-PERP",
    side="buy",
    quantity=D("0.010"),
    order_type="limit",
    time_in_force="GTC",
    leverage=D(2),
    limit_price=D(59000),  # below the mark: it rests
)


def test_the_sim_declares_what_it_is() -> None:
    assert issubclass(SimVenue, Venue)
    assert PROFILE.name == VENUE_NAME == "sim" and SimVenue.world is World.SIMULATED
    assert PROFILE.executor == ("sim-venue", "1") == EXECUTORS["sim"]
    assert PROFILE.executor == (FinanceDomain.executor_name, FinanceDomain.executor_revision)
    assert PROFILE.products == {"perp"} and PROFILE.account_modes == {"one_way"}
    assert PROFILE.order_types == {"limit", "market"} and PROFILE.protective
    assert not PROFILE.market_as_bounded_limit  # the sim fills a market order itself
    document = PROFILE.as_json()
    assert document["executor"] == "sim-venue r1" and document["name"] == "sim"
    assert all(document[k] for k in ("precision", "minimum", "fees", "client_ids"))


async def test_evidence_is_recorded_before_anything_is_written(venue: SimVenue) -> None:
    seen: list[tuple[str, Evidence, object]] = []

    async def record(client_id: str, evidence: Evidence) -> None:
        # at this moment the venue must not hold the order yet
        seen.append((client_id, dict(evidence), await venue.lookup(client_id)))

    submission = await venue.submit(ORDER, record)
    assert seen == [("cs-one", {"venue": "sim", "client_id": "cs-one"}, None)]
    assert submission.created and submission.order.status == "resting"
    assert submission.order.world is World.SIMULATED
    assert submission.order.to_json()["world"] == "simulated"
    assert submission.order.to_json()["simulated"] is True
    # the same evidence again does not matter to the sim: the stored order is the answer
    found = await venue.lookup("cs-one", seen[0][1])
    assert found is not None and found.client_id == "cs-one"


async def test_fills_and_watch_name_what_changed(venue: SimVenue) -> None:
    await venue.submit(ORDER)
    assert await venue.fills("cs-one") == () and await venue.fills("cs-none") == ()
    assert list(await venue.watch()) == []  # nothing crossed
    await venue.set_mark("BTC-PERP", D(58000))
    assert list(await venue.watch()) == ["cs-one"]
    [fill] = await venue.fills("cs-one")
    assert fill.quantity == D("0.010") and fill.price == D(59000) and fill.fee is not None
    state = await venue.lookup("cs-one")
    assert state is not None and state.fills == (fill,) and state.status == "filled"


async def test_the_account_reads_its_budget_as_balance_and_what_is_free(venue: SimVenue) -> None:
    venue.funds = {"sim-main": ("USDC", D(100000))}
    before = await venue.account_state("sim-main")
    assert before.world is World.SIMULATED and before.venue == "sim"
    assert before.account_mode == "one_way" and before.margin_mode is None
    [balance] = before.balances
    assert (balance.currency, balance.total, balance.available) == ("USDC", D(100000), D(100000))
    assert before.open_orders == 0
    await venue.submit(ORDER)
    after = await venue.account_state("sim-main")
    used = observed_exposure(await venue.observe("sim-main"))
    assert used == D("0.010") * 59000
    assert after.balances[0].available == D(100000) - used and after.open_orders == 1


async def test_a_fenced_request_is_proved_never_to_land(venue: SimVenue) -> None:
    recorded: dict[str, Evidence] = {}

    async def record(client_id: str, evidence: Evidence) -> None:
        recorded[client_id] = evidence

    venue.faults = Faults.parse("fence")
    with pytest.raises(Exception, match="timed out"):
        await venue.submit(ORDER, record)
    assert recorded["cs-one"]["fenced"] is True
    venue.faults = Faults()
    with pytest.raises(NeverLanded, match="fenced"):
        await venue.lookup("cs-one", recorded["cs-one"])
    # without the evidence the sim cannot tell: not known (yet), as before
    assert await venue.lookup("cs-one") is None
    assert await venue.orders() == []


def test_local_worlds_are_the_ones_nothing_leaves_this_machine_from() -> None:
    assert {World.SIMULATED, World.EMULATOR} == LOCAL_WORLDS


async def test_opening_opens_exactly_the_venues_the_accounts_name(tmp_path: Path) -> None:
    settings = FinanceSettings(
        accounts=[FinanceAccount(name="sim-main", budget="5000", currency="USDT")],
        venue_path=str(tmp_path / "sim.db"),
    )
    assert venue_names(settings) == ["sim"] == venue_names(FinanceSettings())
    assert declared_profile("sim", settings) is PROFILE
    with pytest.raises(ValueError, match="no venue named 'elsewhere'"):
        declared_profile("elsewhere", settings)
    with pytest.raises(FileNotFoundError):  # a read-only tool never creates the venue file
        await open_venues(settings, {}, _now, create=False)
    opened = await open_venues(settings, {}, _now)
    try:
        assert list(opened) == ["sim"] and isinstance(opened["sim"], SimVenue)
        state = await opened["sim"].account_state("sim-main")
        assert state.balances[0].currency == "USDT" and state.balances[0].total == D(5000)
    finally:
        for venue in opened.values():
            await venue.close()
    unknown = FinanceSettings(accounts=[FinanceAccount(name="x", venue="nowhere", budget="1")])
    with pytest.raises(ValueError, match="venue 'nowhere'"):
        await open_venues(unknown, {}, _now)
    hyperliquid = FinanceSettings(
        accounts=[FinanceAccount(name="hl", venue="hyperliquid", budget="1")]
    )
    with pytest.raises(ValueError, match=r"\[domains.finance.hyperliquid\] is not configured"):
        await open_venues(hyperliquid, {}, _now)


def _now() -> datetime:
    return datetime.now(UTC)


@pytest.mark.parametrize("name", sorted(EXECUTORS))
def test_what_filing_binds_is_what_each_venue_declares(name: str) -> None:
    """Filing binds a venue's executor without opening it (EXECUTORS); the executor then runs
    only what an open venue's profile declares: the two must never drift apart."""
    profile = declared_profile(name, FinanceSettings())
    assert profile.name == name and profile.executor == EXECUTORS[name]
    # a venue without market orders of its own says so, so preflight prices them in bounds
    assert profile.market_as_bounded_limit is (name == "hyperliquid")
