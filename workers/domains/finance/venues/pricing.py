"""Prices a venue can take: the precision rule, and the price a bounded market order is sent at.

A venue whose profile says `market_as_bounded_limit` (Hyperliquid) has no market order of
its own: the order goes out as an IOC limit at the slippage bound the operator confirmed.
That price must stay inside the bound (a buy never above mark x (1 + bps), a sell never
below mark x (1 - bps)) and fit the venue's precision, so it is rounded *into* the bound:
down for a buy, up for a sell. Pure.

The precision rule (`price_fits`): a multiple of the tick, and, where the instrument says
so (`sig_figs`), at most that many significant figures unless the price is a whole number
(Hyperliquid: 5 significant figures, integers always allowed).
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, localcontext
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the model imports the schema; keep this module light to import
    from workers.domains.finance.venues.model import Instrument

BPS = Decimal(10_000)
# wide enough that a mark times (1 +- bps) and the roundings below are exact
_WIDE = Context(prec=120)


def significant_figures(price: Decimal) -> int:
    """How many significant figures `price` has (trailing zeros do not count)."""
    if price == 0:
        return 0
    return len(price.normalize(_WIDE).as_tuple().digits)


def too_precise(price: Decimal, instrument: Instrument) -> bool:
    """More significant figures than the instrument allows (a whole number never is)."""
    if instrument.sig_figs is None or price == price.to_integral_value():
        return False
    return significant_figures(price) > instrument.sig_figs


def on_tick(price: Decimal, instrument: Instrument) -> bool:
    with localcontext(_WIDE):
        return price % instrument.tick == 0


def price_fits(price: Decimal, instrument: Instrument) -> bool:
    """Whether the venue takes `price` as it is for `instrument` (positive, on the tick,
    within its significant figures)."""
    return price > 0 and on_tick(price, instrument) and not too_precise(price, instrument)


def _to_tick(price: Decimal, tick: Decimal, rounding: str) -> Decimal:
    with localcontext(_WIDE):
        return (price / tick).quantize(Decimal(1), rounding=rounding) * tick


def _to_figures(price: Decimal, figures: int, rounding: str) -> Decimal:
    if price <= 0 or price == price.to_integral_value():
        return price
    with localcontext(_WIDE):
        quantum = Decimal(1).scaleb(price.adjusted() - figures + 1)
        return price.quantize(quantum, rounding=rounding)


def round_into(price: Decimal, instrument: Instrument, rounding: str) -> Decimal:
    """The nearest price the instrument takes at or below (ROUND_FLOOR) or at or above
    (ROUND_CEILING) `price`. Each step only moves the price one way, so alternating them
    settles on a price that fits both rules."""
    current = price
    while True:
        stepped = _to_tick(current, instrument.tick, rounding)
        if instrument.sig_figs is not None:
            stepped = _to_figures(stepped, instrument.sig_figs, rounding)
        if stepped == current and (stepped <= 0 or price_fits(stepped, instrument)):
            return stepped
        current = stepped


def bounded_market_price(
    side: Literal["buy", "sell"], mark: Decimal, bps: Decimal, instrument: Instrument
) -> Decimal | None:
    """The limit price a market order is sent at: its slippage bound from `mark`, rounded
    into the bound to the instrument's precision. None when no positive price fits inside
    the bound (a mark below one tick): such an order cannot be sent as confirmed."""
    if mark <= 0 or bps < 0:
        raise ValueError(f"mark must be above 0 and bps at least 0 (mark {mark}, bps {bps})")
    with localcontext(_WIDE):
        if side == "buy":
            price = round_into(mark * (BPS + bps) / BPS, instrument, ROUND_FLOOR)
        else:
            price = round_into(mark * (BPS - bps) / BPS, instrument, ROUND_CEILING)
            if price <= 0:  # a bound of 100 % reaches 0: the smallest price is inside it
                price = round_into(instrument.tick, instrument, ROUND_CEILING)
    return price if price > 0 and price_fits(price, instrument) else None
