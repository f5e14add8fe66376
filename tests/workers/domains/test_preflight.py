"""Preflight against a real venue observation: refuse what would need other terms; exposure."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.factories import ORDER_PAYLOAD
from workers.domains.finance.preflight import observed_exposure, preflight
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import Instrument, Observation, VenueOrder
from workers.domains.finance.worst_case import order_exposure, worst_case_price


def order(**changes: Any) -> FinanceOrderV1:
    payload = {**ORDER_PAYLOAD, "protective": None, **changes}
    return FinanceOrderV1.model_validate({k: v for k, v in payload.items() if v is not None})


async def observe(venue: SimVenue) -> Observation:
    return await venue.observe("sim-main")


async def test_a_well_formed_order_passes(venue: SimVenue) -> None:
    obs = await observe(venue)
    assert preflight(order(), obs, now=obs.observed_at) is None
    assert (
        preflight(
            order(protective={"stop_loss": "57000", "take_profit": "65000"}),
            obs,
            now=obs.observed_at,
        )
        is None
    )


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"quantity": "0.0105"}, "quantity_off_lot"),
        ({"quantity": "0.0005"}, "quantity_off_lot"),
        (
            {"instrument": "ETH-PERP", "quantity": "0.005", "limit_price": "3000"},
            "quantity_off_lot",
        ),
        ({"limit_price": "60000.25"}, "price_off_tick"),
        ({"protective": {"stop_loss": "57000.1"}}, "protective_off_tick"),
        ({"leverage": "50"}, "leverage_above_max"),
        ({"fee_currency": "USDT"}, "fee_currency_mismatch"),
        ({"max_fee": "0.01"}, "fee_cap_too_low"),
        ({"reduce_only": True}, "reduce_only_would_increase"),
        ({"instrument": "DOGE-PERP"}, "unknown_instrument"),
    ],
)
async def test_anything_outside_the_confirmed_bounds_is_refused(
    venue: SimVenue, changes: dict[str, Any], code: str
) -> None:
    obs = await observe(venue)
    rejection = preflight(order(**changes), obs, now=obs.observed_at)
    assert rejection is not None and rejection.code == code
    assert rejection.reason and rejection.hint


async def test_below_the_minimum_is_refused_not_rounded_up(tmp_path: Path) -> None:
    btc = Instrument("BTC-PERP", Decimal("0.5"), Decimal("0.001"), Decimal("0.005"), Decimal(60000))
    async with await SimVenue.open(tmp_path / "v.db", instruments=[btc]) as venue:
        obs = await observe(venue)
        rejection = preflight(order(quantity="0.004"), obs, now=obs.observed_at)
        assert rejection is not None and rejection.code == "below_minimum"
        assert "never rounded" in rejection.hint


async def test_stale_and_incomplete_observations_refuse(tmp_path: Path, venue: SimVenue) -> None:
    obs = await observe(venue)
    stale = preflight(order(), obs, now=obs.observed_at + timedelta(seconds=6))
    assert stale is not None and stale.code == "observation_stale"
    async with await SimVenue.open(
        tmp_path / "partial.db", faults=Faults.parse("incomplete")
    ) as partial:
        incomplete = await partial.observe("sim-main")
        rejection = preflight(order(), incomplete, now=incomplete.observed_at)
        assert rejection is not None and rejection.code == "observation_incomplete"


async def test_exposure_counts_positions_open_orders_and_the_worst_case(venue: SimVenue) -> None:
    base = VenueOrder(
        client_id="fill",
        account="sim-main",
        instrument="BTC-PERP",
        side="buy",
        quantity=Decimal("0.010"),
        order_type="limit",
        limit_price=Decimal(60000),
        max_slippage_bps=None,
        time_in_force="GTC",
        reduce_only=False,
        leverage=Decimal(2),
    )
    await venue.submit(base)  # fills at the mark: a position of 0.010
    resting = dataclasses.replace(base, client_id="rest", limit_price=Decimal(50000))
    await venue.submit(resting)  # rests below the mark
    obs = await observe(venue)
    assert observed_exposure(obs) == Decimal("0.010") * 60000 + Decimal("0.010") * 50000
    market = order(
        order_type="market", limit_price=None, max_slippage_bps="25", time_in_force="IOC"
    )
    btc = obs.instruments["BTC-PERP"]
    assert worst_case_price(market, btc.mark) == Decimal(60000) * (1 + Decimal(25) / 10000)
    assert order_exposure(order(), btc) == Decimal("0.010") * 60000 + Decimal("1.5")
