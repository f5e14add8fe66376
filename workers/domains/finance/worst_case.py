"""The highest price an order can fill at within the bounds its operator confirmed.

One function, `worst_case_price`, decides it for every side and order type; everything that
weighs an order by its price asks it: the approval amount (`FinanceDomain.notional`, hence
the approval rules and the web re-sign-in threshold), the fee the cap is checked against,
and the exposure the reservation holds (`order_exposure`). Pure.

Per side and order type (`mark`: the venue's fresh mark price):

* limit buy: its limit. A buy fills at or below its limit (at the mark when the limit
  reaches it, at the limit when it rests), never above.
* limit sell: the higher of its limit and the mark. A sell fills at or *above* its limit:
  marketable (limit at or below the mark) it takes at the mark, resting it fills at its
  limit. Its limit is its best case, never its worst. We use the fresh mark rather than a
  price band: the simulated venue fills a marketable order exactly at the mark and declares
  no band, and the mark is re-read at every point that weighs the order (filing: the
  approval amount; the claim: the reservation; just before dispatch: the fee cap), each
  from an observation at most seconds old. A venue adapter whose marketable fills can land
  away from its mark must add its declared band here before it is connected. Open for
  Hyperliquid: a marketable sell takes the book's bids, which may sit a little above the
  mark; it declares no band yet, so such a sell may weigh slightly less than it fills for.
* market buy: the mark moved up by the confirmed slippage bound.
* market sell: also the mark moved *up* by the slippage bound. A market sell fills at or
  below the mark on the simulated venue, but the bound the operator confirmed is a distance
  from the mark, and a book with bids above the mark would fill a sell there; counting the
  bound both ways keeps the worst case above any fill a venue honouring the bound can make,
  so a sell never weighs less than the buy of the same size.

A price that needs the mark and has none (a venue that reported no mark) is unknown: None.
"""

from __future__ import annotations

from decimal import (
    ROUND_CEILING,
    Context,
    Decimal,
    DivisionByZero,
    InvalidOperation,
    Overflow,
    localcontext,
)
from typing import overload

from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.venues.model import Instrument

BPS = Decimal(10_000)
# Wide enough that products of intake-bounded terms and a venue's prices are exact (nothing
# is rounded toward a smaller worst case); anything invalid still raises.
WIDE = Context(prec=120, traps=[InvalidOperation, DivisionByZero, Overflow])
# The reservation is stored as text of at most 64 characters: its amount is rounded *up*
# to this step (holding a little more, never less, than the worst case).
RESERVATION_STEP = Decimal("1e-12")


@overload
def worst_case_price(order: FinanceOrderV1, mark: Decimal) -> Decimal: ...
@overload
def worst_case_price(order: FinanceOrderV1, mark: Decimal | None) -> Decimal | None: ...
def worst_case_price(order: FinanceOrderV1, mark: Decimal | None) -> Decimal | None:
    """The highest price per unit `order` can fill at, the venue's mark being `mark`."""
    with localcontext(WIDE):
        return _price(order, mark)


def _price(order: FinanceOrderV1, mark: Decimal | None) -> Decimal | None:
    if order.order_type == "limit":
        assert order.limit_price is not None  # the schema: a limit order has a limit price
        limit = Decimal(order.limit_price)
        if order.side == "buy":
            return limit
        return None if mark is None else max(limit, mark)
    if mark is None:
        return None
    bound = Decimal(order.max_slippage_bps or 0)
    return mark * (BPS + bound) / BPS


@overload
def worst_case_notional(order: FinanceOrderV1, mark: Decimal) -> Decimal: ...
@overload
def worst_case_notional(order: FinanceOrderV1, mark: Decimal | None) -> Decimal | None: ...
def worst_case_notional(order: FinanceOrderV1, mark: Decimal | None) -> Decimal | None:
    """Quantity times the worst-case price: the most the order can trade for."""
    price = worst_case_price(order, mark)
    if price is None:
        return None
    with localcontext(WIDE):
        return Decimal(order.quantity) * price


def worst_case_fee(order: FinanceOrderV1, instrument: Instrument) -> Decimal:
    """The most the order can pay in fees at the instrument's mark (the higher fee rate)."""
    rate = max(instrument.taker_fee_rate, instrument.maker_fee_rate)
    with localcontext(WIDE):
        return worst_case_notional(order, instrument.mark) * rate


def order_exposure(order: FinanceOrderV1, instrument: Instrument) -> Decimal:
    """Worst-case notional plus the fee cap: what the reservation must hold (rounded up to
    RESERVATION_STEP)."""
    with localcontext(WIDE):
        exact = worst_case_notional(order, instrument.mark) + Decimal(order.max_fee)
        rounded = exact.quantize(RESERVATION_STEP, rounding=ROUND_CEILING)
        return exact if rounded == exact else rounded
