"""The adapter's fresh observation read by the finance preflight: what the emulator takes
passes, and what it would refuse is refused before anything is sent, with the same words a
card shows (the observation's precision, minimum and leverage are Hyperliquid's)."""

from __future__ import annotations

from typing import Any

import pytest

from workers.domains.finance.hyperliquid.venue import HyperliquidVenue
from workers.domains.finance.preflight import preflight
from workers.domains.finance.schema import FinanceOrderV1


def payload(**overrides: Any) -> FinanceOrderV1:
    values: dict[str, Any] = {
        "venue": "hyperliquid",
        "account": "hl-main",
        "instrument": "BTC-PERP",
        "side": "buy",
        "quantity": "0.001",
        "order_type": "limit",
        "limit_price": "60000",
        "time_in_force": "GTC",
        "leverage": "20",
        "max_fee": "1",
        "fee_currency": "USDC",
    }
    return FinanceOrderV1.model_validate(values | overrides)


async def check(venue: HyperliquidVenue, order: FinanceOrderV1) -> str | None:
    observation = await venue.observe(order.account, [order.instrument])
    refusal = preflight(
        order,
        observation,
        now=observation.observed_at,
        bounded_market=venue.profile.market_as_bounded_limit,
    )
    return None if refusal is None else refusal.code


async def test_a_valid_order_passes(hl_venue: HyperliquidVenue) -> None:
    assert await check(hl_venue, payload()) is None
    market = payload(
        order_type="market", limit_price=None, max_slippage_bps="50", time_in_force="IOC"
    )
    assert await check(hl_venue, market) is None


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"limit_price": "60000.5"}, "price_too_precise"),
        ({"quantity": "0.0001", "limit_price": "59000"}, "below_minimum_notional"),
        ({"leverage": "10"}, "leverage_mismatch"),
        ({"instrument": "DOGE-PERP"}, "unknown_instrument"),
    ],
)
async def test_what_the_venue_would_refuse_is_refused_first(
    hl_venue: HyperliquidVenue, overrides: dict[str, Any], code: str
) -> None:
    assert await check(hl_venue, payload(**overrides)) == code


async def test_the_leverage_read_is_the_accounts_per_coin(hl_venue: HyperliquidVenue) -> None:
    observation = await hl_venue.observe("hl-main", ["ETH-PERP"])
    assert set(observation.leverage) == {"ETH-PERP"}  # only what was asked for
    assert observation.complete
