"""The worst case of an order is really its worst (issue 30): over side x order type x price
vs mark, no fill the simulated venue's own matching makes is above `worst_case_price`, no
fee it charges is above `worst_case_fee`, and fee and exposure grow with the price.

The venue is the real one: its pure matching (`sim/matching.py`) with its faults
(slippage, partial fills, thin liquidity), the mark moved between matching rounds; and
its real file for the observation the preflight reads."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal, localcontext
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.factories import ORDER_PAYLOAD
from workers.domains.finance.preflight import preflight
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.sim import matching
from workers.domains.finance.sim.book import Book, FillMade
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import Instrument, VenueOrder
from workers.domains.finance.worst_case import (
    WIDE,
    order_exposure,
    worst_case_fee,
    worst_case_notional,
    worst_case_price,
)

D = Decimal
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
TICK = D("0.5")
BTC = Instrument("BTC-PERP", TICK, D("0.001"), D("0.001"), D("60000"))


def order(**changes: Any) -> FinanceOrderV1:
    payload = {**ORDER_PAYLOAD, "protective": None, **changes}
    return FinanceOrderV1.model_validate({k: v for k, v in payload.items() if v is not None})


def at_mark(mark: Decimal, liquidity: Decimal | None = None) -> Instrument:
    return replace(BTC, mark=mark, liquidity=liquidity)


def ticks(low: int, high: int) -> st.SearchStrategy[Decimal]:
    return st.integers(low, high).map(lambda n: n * TICK)


@st.composite
def orders(draw: st.DrawFn) -> tuple[FinanceOrderV1, Decimal]:
    """An order and the mark it meets: every side and type, limits below, at and above."""
    mark = draw(ticks(2, 400_000))
    side = draw(st.sampled_from(["buy", "sell"]))
    quantity = str(draw(st.integers(1, 5_000)) * D("0.001"))
    if draw(st.sampled_from(["limit", "market"])) == "limit":
        offset = draw(st.integers(-200, 200)) * draw(st.sampled_from([TICK, D(100), D(5000)]))
        limit = max(mark + offset, TICK)
        tif = draw(st.sampled_from(["GTC", "IOC", "FOK", "POST_ONLY"]))
        terms: dict[str, Any] = {"limit_price": str(limit), "time_in_force": tif}
    else:
        bps = draw(st.integers(0, 500))
        tif = draw(st.sampled_from(["GTC", "IOC", "FOK"]))
        terms = {
            "order_type": "market",
            "limit_price": None,
            "max_slippage_bps": str(bps),
            "time_in_force": tif,
        }
    return order(side=side, quantity=quantity, max_fee="1000000", **terms), mark


def fills(outcome: matching.Outcome) -> list[FillMade]:
    return [event for event in outcome.events if isinstance(event, FillMade)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=orders(),
    slippage=st.one_of(st.none(), st.integers(0, 800).map(D)),
    partial=st.one_of(st.none(), st.sampled_from([D("0.3"), D("0.5"), D(1)])),
    thin=st.one_of(st.none(), st.integers(1, 3000).map(lambda n: n * D("0.001"))),
    later=st.lists(ticks(1, 500_000), max_size=4),
)
def test_no_fill_the_venue_makes_is_above_the_worst_case(
    case: tuple[FinanceOrderV1, Decimal],
    slippage: Decimal | None,
    partial: Decimal | None,
    thin: Decimal | None,
    later: list[Decimal],
) -> None:
    payload, mark = case
    faults = Faults(slippage_bps=slippage, partial_fill=partial)
    inst = at_mark(mark, thin)
    worst = worst_case_price(payload, mark)
    book = Book(instruments={"BTC-PERP": inst}, accounts=("sim-main",))
    outcome = matching.submit(book, VenueOrder.from_payload("c1", payload), faults, NOW)
    made = [(fill, mark) for fill in fills(outcome)]
    # the mark moves (anywhere) and resting orders fill over later rounds
    for moved in later:
        book = replace(outcome.book, instruments={"BTC-PERP": at_mark(moved, thin)})
        outcome = matching.tick(book, faults, NOW)
        made += [(fill, moved) for fill in fills(outcome)]
    for fill, mark_then in made:
        assert fill.price <= worst, (payload, mark, fill)
        assert fill.price <= worst_case_price(payload, mark_then), (payload, mark_then, fill)
    charged = sum((fill.fee or D(0) for fill, _ in made), D(0))
    filled = sum((fill.qty for fill, _ in made), D(0))
    assert filled <= D(payload.quantity)
    if not later:  # every fill at the filing mark: its fees are within the fee at that mark
        assert charged <= worst_case_fee(payload, inst)


@settings(max_examples=300, deadline=None)
@given(case=orders(), other=ticks(2, 400_000))
def test_fee_and_exposure_grow_with_the_worst_case_price(
    case: tuple[FinanceOrderV1, Decimal], other: Decimal
) -> None:
    payload, mark = case
    low, high = sorted((mark, other))
    assert worst_case_price(payload, low) <= worst_case_price(payload, high)
    cheap, dear = at_mark(low), at_mark(high)
    assert worst_case_fee(payload, cheap) <= worst_case_fee(payload, dear)
    assert order_exposure(payload, cheap) <= order_exposure(payload, dear)
    # the fee is the price's: the rate times the notional; the exposure adds the cap
    rate = max(BTC.taker_fee_rate, BTC.maker_fee_rate)
    assert worst_case_fee(payload, dear) == worst_case_notional(payload, high) * rate
    assert order_exposure(payload, dear) == worst_case_notional(payload, high) + D(payload.max_fee)


@settings(max_examples=200, deadline=None)
@given(case=orders())
def test_a_sell_never_weighs_less_than_the_same_buy(case: tuple[FinanceOrderV1, Decimal]) -> None:
    payload, mark = case
    buy = payload.model_copy(update={"side": "buy"})
    sell = payload.model_copy(update={"side": "sell"})
    assert worst_case_price(sell, mark) >= worst_case_price(buy, mark)
    assert worst_case_price(sell, mark) >= mark  # a sell fills at or above its limit


def test_the_attack_order_weighs_what_it_would_fill_for() -> None:
    """`SELL 3.000 BTC-PERP @ 0.5` at a 60,000 mark was 1.50 USDC of notional and 0.00075
    of fee; it fills at 60,000: 180,000 and 90."""
    attack = order(side="sell", quantity="3.000", limit_price="0.5", max_fee="0.01")
    assert worst_case_price(attack, BTC.mark) == D(60000)
    assert worst_case_notional(attack, BTC.mark) == D(180000)
    assert worst_case_fee(attack, BTC) == D(90)
    assert order_exposure(attack, BTC) == D("180000.01")
    # a market sell counts its slippage bound upward, like a buy
    market_sell = order(side="sell", order_type="market", limit_price=None, max_slippage_bps="50")
    assert worst_case_price(market_sell, BTC.mark) == D(60300)
    # a buy limit needs no mark; a sell limit or a market order without one is unknown
    assert worst_case_price(order(), None) == D(60000)
    assert worst_case_price(attack, None) is None and worst_case_price(market_sell, None) is None


# -- the pre-dispatch check at the current mark, on the real venue ---------------------------


async def test_a_sell_whose_fee_at_the_current_mark_exceeds_the_cap_is_refused_before_sending(
    venue: SimVenue,
) -> None:
    """Filed at a 59,000 mark with the cap its fee needed there (88.5); the mark is 60,000
    when it is about to be sent: a fill would charge 90, so the preflight refuses it."""
    sell = order(side="sell", quantity="3.000", limit_price="59000", max_fee="88.5")
    await venue.set_mark("BTC-PERP", D(59000))
    then = await venue.observe("sim-main")
    assert preflight(sell, then, now=then.observed_at) is None
    await venue.set_mark("BTC-PERP", D(60000))
    now = await venue.observe("sim-main")
    refused = preflight(sell, now, now=now.observed_at)
    assert refused is not None and refused.code == "fee_cap_too_low", refused
    assert "90" in refused.reason and "88.5" in refused.reason
    assert order_exposure(sell, now.instruments["BTC-PERP"]) == D("180088.5")
    assert await venue.orders("sim-main") == []  # nothing was sent


def test_the_reservation_amount_fits_its_column_and_is_rounded_up_never_down() -> None:
    """A mark with many decimals times a 12-decimal quantity and a slippage bound has more
    digits than the reservation's 64-character column: it is rounded up to 1e-12."""
    fine = replace(BTC, tick=D("1e-24"), mark=D("1.000000000000000000000001"))
    buy = order(
        order_type="market",
        limit_price=None,
        max_slippage_bps="0.000000000001",
        quantity="123456789012345.123456789012",
        max_fee="0.000000000001",
    )
    with localcontext(WIDE):
        exact = worst_case_notional(buy, fine.mark) + D(buy.max_fee)
    held = order_exposure(buy, fine)
    assert len(format(exact, "f")) > 64 and len(format(held, "f")) <= 64
    assert exact <= held <= exact + D("1e-12")
