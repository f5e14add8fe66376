"""A venue whose price rule is more than a tick (Hyperliquid: 5 significant figures, whole
numbers always; a $10 minimum notional; market orders sent as IOC limits at the bound), and an
account whose leverage is set at the venue: what would need other terms is refused with its
own code, field and a fix — never rounded, never edited, leverage never changed."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from store import World
from tests.support.factories import ORDER_PAYLOAD
from workers.domains.finance.preflight import (
    REFUSAL_FIELDS,
    filing_refusal,
    preflight,
    refusal_problem,
)
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.venues.model import Instrument, Observation

D = Decimal
NOW = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
# BTC as Hyperliquid lists it: szDecimals 5, so prices have at most 1 decimal and 5 figures
BTC = Instrument(
    "BTC-PERP",
    tick=D("0.1"),
    lot=D("0.00001"),
    min_qty=D("0.00001"),
    mark=D("60000"),
    sig_figs=5,
    min_notional=D(10),
)


def observation(leverage: dict[str, Decimal] | None = None) -> Observation:
    return Observation(
        venue="hyperliquid",
        account="sim-main",
        observed_at=NOW,
        account_mode="one_way",
        instruments={"BTC-PERP": BTC},
        positions={},
        open_orders=(),
        complete=True,
        world=World.EMULATOR,
        leverage=leverage or {},
    )


def order(**changes: Any) -> FinanceOrderV1:
    payload = {**ORDER_PAYLOAD, "protective": None, **changes}
    return FinanceOrderV1.model_validate({k: v for k, v in payload.items() if v is not None})


MARKET_SELL = {
    "order_type": "market",
    "side": "sell",
    "limit_price": None,
    "max_slippage_bps": "50",
    "time_in_force": "IOC",
}


def test_an_order_the_venue_takes_as_it_is_passes() -> None:
    assert preflight(order(), observation(), now=NOW) is None
    # five figures with a decimal, and a whole number of six figures
    assert preflight(order(limit_price="6000.5", quantity="0.002"), observation(), now=NOW) is None
    assert preflight(order(limit_price="123456", quantity="0.001"), observation(), now=NOW) is None
    # a market order within its bound, worth the minimum at its lowest price
    assert preflight(order(**MARKET_SELL, quantity="0.0002"), observation(), now=NOW) is None


@pytest.mark.parametrize(
    ("changes", "code", "field"),
    [
        ({"limit_price": "60000.5"}, "price_too_precise", "payload.limit_price"),
        (
            {"protective": {"stop_loss": "57000.5"}},
            "protective_too_precise",
            "payload.protective",
        ),
        # 0.00016 x 60000 = 9.6, below $10: never rounded up to the minimum
        ({"quantity": "0.00016"}, "below_minimum_notional", "payload.quantity"),
        # a sell at the market is weighed at the lowest price its bound allows: worth 10.2 at
        # the mark, but 0.00017 x 57000 = 9.69 at 500 bps below it
        (
            {**MARKET_SELL, "max_slippage_bps": "500", "quantity": "0.00017"},
            "below_minimum_notional",
            "payload.quantity",
        ),
    ],
    ids=["price", "protective", "notional", "notional-market-sell"],
)
def test_the_venues_own_rules_refuse_with_their_code_field_and_fix(
    changes: dict[str, Any], code: str, field: str
) -> None:
    for rejection in (
        preflight(order(**changes), observation(), now=NOW),
        filing_refusal(order(**changes), observation()),  # the same at filing, pure
    ):
        assert rejection is not None and rejection.code == code
        assert "never" in rejection.reason and rejection.hint
        assert REFUSAL_FIELDS[code] == field
        problem = refusal_problem(rejection)
        assert problem.field == field and problem.reason.startswith(code)


def test_the_minimum_notional_is_the_venues_not_a_rounding() -> None:
    at_minimum = order(quantity="0.00017", limit_price="60000")  # 10.2
    assert preflight(at_minimum, observation(), now=NOW) is None
    cheaper = order(quantity="0.00017", limit_price="58000")  # 9.86: refused, not repriced
    rejection = preflight(cheaper, observation(), now=NOW)
    assert rejection is not None and rejection.code == "below_minimum_notional"
    assert "0.00017" in rejection.reason and "58000" in rejection.reason


def test_an_account_set_to_another_leverage_is_refused_never_changed() -> None:
    confirmed_2x = order(leverage="2")
    rejection = preflight(confirmed_2x, observation({"BTC-PERP": D(5)}), now=NOW)
    assert rejection is not None and rejection.code == "leverage_mismatch"
    assert "5x" in rejection.reason and "never changes leverage" in rejection.reason
    assert "2x on the venue" in rejection.hint and "at 5x" in rejection.hint
    assert REFUSAL_FIELDS["leverage_mismatch"] == "payload.leverage"
    # the same leverage, written otherwise, is the same
    assert preflight(confirmed_2x, observation({"BTC-PERP": D("2.0")}), now=NOW) is None
    # absent: the venue reported none for it (another instrument's does not count)
    assert preflight(confirmed_2x, observation({"ETH-PERP": D(5)}), now=NOW) is None
    # leverage is the account's state: the filing pre-check leaves it to the claim
    assert filing_refusal(confirmed_2x, observation({"BTC-PERP": D(5)})) is None


def test_a_market_order_with_no_price_inside_its_bound_is_refused_where_the_venue_needs_one() -> (
    None
):
    penny = Instrument(
        "BTC-PERP", tick=D("0.1"), lot=D(1), min_qty=D(1), mark=D("0.05"), sig_figs=5
    )
    obs = Observation(
        venue="hyperliquid",
        account="sim-main",
        observed_at=NOW,
        account_mode="one_way",
        instruments={"BTC-PERP": penny},
        positions={},
        open_orders=(),
        complete=True,
        world=World.EMULATOR,
    )
    market_buy = order(
        order_type="market",
        limit_price=None,
        max_slippage_bps="10",
        time_in_force="IOC",
        quantity="1",
        max_fee="100",
    )
    rejection = preflight(market_buy, obs, now=NOW, bounded_market=True)
    assert rejection is not None and rejection.code == "market_unpriceable"
    assert REFUSAL_FIELDS["market_unpriceable"] == "payload.max_slippage_bps"
    # a venue that takes market orders itself needs no such price
    assert preflight(market_buy, obs, now=NOW) is None


def test_a_bounded_market_order_is_weighed_at_the_limit_it_is_sent_at() -> None:
    """At 0 bps a buy goes out at the mark rounded *down* into the venue's precision: an
    order worth the minimum at the mark may be worth less at the price actually sent."""
    mark = D("111115.5")  # 5 figures down: 111110
    obs = Observation(
        venue="hyperliquid",
        account="sim-main",
        observed_at=NOW,
        account_mode="one_way",
        instruments={"BTC-PERP": dataclasses.replace(BTC, mark=mark)},
        positions={},
        open_orders=(),
        complete=True,
        world=World.EMULATOR,
    )
    market_buy = order(
        order_type="market",
        limit_price=None,
        max_slippage_bps="0",
        time_in_force="IOC",
        quantity="0.00009",  # 10.0004 at the mark, 9.9999 at 111110
    )
    assert preflight(market_buy, obs, now=NOW) is None  # a venue that takes market orders
    rejection = preflight(market_buy, obs, now=NOW, bounded_market=True)
    assert rejection is not None and rejection.code == "below_minimum_notional"
    assert "at 111110" in rejection.reason
