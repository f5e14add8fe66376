"""The price a market order is sent at on a venue that has no market order of its own
(Hyperliquid: an IOC limit at the slippage bound): always inside the bound the operator
confirmed (a buy at or below mark x (1 + bps), a sell at or above mark x (1 - bps)), always a
price the venue takes (its tick and, where it has them, its significant figures), and the
nearest such price to the bound."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.domains.finance.venues.model import Instrument
from workers.domains.finance.venues.pricing import (
    BPS,
    bounded_market_price,
    price_fits,
    round_into,
    significant_figures,
    too_precise,
)

D = Decimal


def hyperliquid_like(sz_decimals: int, mark: Decimal) -> Instrument:
    """A perp with Hyperliquid's rule: 6 - szDecimals price decimals, 5 significant figures
    (whole numbers always), a lot of 10^-szDecimals and a $10 minimum."""
    lot = D(1).scaleb(-sz_decimals)
    return Instrument(
        f"C{sz_decimals}-PERP",
        tick=D(1).scaleb(-(6 - sz_decimals)),
        lot=lot,
        min_qty=lot,
        mark=mark,
        sig_figs=5,
        min_notional=D(10),
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, Decimal, Decimal, Instrument]:
    sz_decimals = draw(st.integers(0, 5))
    tick = D(1).scaleb(-(6 - sz_decimals))
    # marks from one tick to about a million, on the tick (Hyperliquid's marks are prices)
    mark = draw(st.integers(1, 10**6 * 10 ** (6 - sz_decimals))) * tick
    # a mark with more figures than an order may carry is allowed: marks are the venue's
    bps = D(draw(st.integers(0, 10_000))) / draw(st.sampled_from([1, 10, 100]))
    side = draw(st.sampled_from(["buy", "sell"]))
    return side, mark, bps, hyperliquid_like(sz_decimals, mark)


@settings(max_examples=600, deadline=None)
@given(cases())
def test_the_price_sent_is_inside_the_bound_and_the_venue_takes_it(
    case: tuple[str, Decimal, Decimal, Instrument],
) -> None:
    side, mark, bps, instrument = case
    price = bounded_market_price("buy" if side == "buy" else "sell", mark, bps, instrument)
    with localcontext() as exact:
        exact.prec = 120
        bound = mark * (BPS + bps) / BPS if side == "buy" else mark * (BPS - bps) / BPS
    if price is None:
        # only a buy whose bound is below one tick has no price inside it
        assert side == "buy" and bound < instrument.tick
        return
    assert price_fits(price, instrument)
    assert price > 0
    if side == "buy":
        assert price <= bound
        # the nearest: one tick more no longer fits inside the bound (or breaks precision)
        assert round_into(price + instrument.tick, instrument, ROUND_FLOOR) == price or (
            price + instrument.tick > bound
        )
    else:
        assert price >= bound
        assert price >= instrument.tick


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 10**9).map(lambda n: D(n).scaleb(-4)),
    st.integers(0, 5),
    st.sampled_from([ROUND_FLOOR, ROUND_CEILING]),
)
def test_rounding_into_a_price_moves_only_one_way_and_fits(
    price: Decimal, sz_decimals: int, rounding: str
) -> None:
    instrument = hyperliquid_like(sz_decimals, D(1))
    fitted = round_into(price, instrument, rounding)
    assert fitted <= price if rounding == ROUND_FLOOR else fitted >= price
    assert fitted == 0 or price_fits(fitted, instrument)
    if price_fits(price, instrument):
        assert fitted == price  # a price the venue takes is never moved


@pytest.mark.parametrize(
    ("price", "figures", "precise"),
    [
        ("60000", 1, False),  # a whole number is always taken
        ("123456", 6, False),  # more than 5 figures, but whole
        ("60000.5", 6, True),
        ("1234.5", 5, False),
        ("0.0012345", 5, False),
        ("0.00123456", 6, True),
        ("12.340", 4, False),  # trailing zeros are no figures
    ],
)
def test_significant_figures_and_the_whole_number_exception(
    price: str, figures: int, precise: bool
) -> None:
    instrument = hyperliquid_like(0, D(1))  # tick 0.000001: only the figures decide here
    assert significant_figures(D(price)) == figures
    assert too_precise(D(price), instrument) is precise


def test_examples_a_trader_can_check_by_hand() -> None:
    btc = hyperliquid_like(5, D("60000"))  # tick 0.1
    # 50 bps above 60000 is 60300: whole, taken as it is
    assert bounded_market_price("buy", D("60000"), D(50), btc) == D("60300")
    # 10 bps above 60123.4 is 60183.5234: five figures down is 60183
    assert bounded_market_price("buy", D("60123.4"), D(10), btc) == D("60183")
    # 10 bps below 60123.4 is 60063.2766: five figures up is 60064
    assert bounded_market_price("sell", D("60123.4"), D(10), btc) == D("60064")
    # a sell with the whole 100 % bound goes out at the smallest price the venue takes
    assert bounded_market_price("sell", D("60000"), D(10_000), btc) == D("0.1")
    # a mark below one tick has no price inside a small buy bound
    assert bounded_market_price("buy", D("0.01"), D(0), btc) is None
    with pytest.raises(ValueError, match="mark must be above 0"):
        bounded_market_price("buy", D(0), D(10), btc)


def test_a_tick_that_is_not_a_power_of_ten_is_honoured() -> None:
    sim_like = Instrument("BTC-PERP", D("0.5"), D("0.001"), D("0.001"), D("60000"))
    assert bounded_market_price("buy", D("60000"), D("1"), sim_like) == D("60006")
    assert bounded_market_price("sell", D("60000.5"), D("1"), sim_like) == D("59994.5")
