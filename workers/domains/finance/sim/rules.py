"""The simulated venue's rules as pure predicates: whether an order is accepted, and why not.

`refusal` is the venue's answer to a new order's terms (account, instrument, side, type,
time in force, lot, minimum, leverage, tick, reduce-only, post-only, the market slippage
bound): None, or the reason it is rejected. Nothing is ever rounded to make an order fit.
The smaller predicates (`marketable`, `closable`, `triggered`, `child_refusal`) are the
ones matching also decides with; `same_terms` says whether a repeated client id carries the
stored order's terms. Callers run them under `decimals.EXACT`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal

from workers.domains.finance.sim.decimals import BPS, text
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.rows import OrderRow
from workers.domains.finance.venues.model import (
    ORDER_TYPES,
    SIDES,
    TIME_IN_FORCE,
    Instrument,
    VenueOrder,
)
from workers.domains.finance.venues.pricing import too_precise


def refusal(
    o: VenueOrder,
    inst: Instrument | None,
    *,
    accounts: Sequence[str],
    instruments: Iterable[str],
    position: Decimal,
    faults: Faults,
) -> str | None:
    """Why the venue rejects `o`, or None. Nothing is ever rounded to make it fit.

    `accounts` and `instruments` are the venue's names (for the reason's "known" list),
    `position` the account's signed position in `o.instrument`."""
    if o.account not in accounts:
        return f"unknown account {o.account!r} (known: {', '.join(accounts) or 'none'})"
    if inst is None:
        known = ", ".join(instruments) or "none"
        return f"unknown instrument {o.instrument!r} (known: {known})"
    if o.side not in SIDES:
        return f"side {o.side!r} is not one of {', '.join(SIDES)}"
    if o.order_type not in ORDER_TYPES:
        return f"order_type {o.order_type!r} is not one of {', '.join(ORDER_TYPES)}"
    if o.time_in_force not in TIME_IN_FORCE:
        return f"time_in_force {o.time_in_force!r} is not one of {', '.join(TIME_IN_FORCE)}"
    if o.quantity <= 0:
        return f"quantity {text(o.quantity)} must be greater than zero"
    if o.quantity % inst.lot != 0:
        return (
            f"quantity {text(o.quantity)} is not a multiple of the lot {text(inst.lot)} "
            f"for {inst.name} (quantities are never rounded)"
        )
    if o.quantity < inst.min_qty:
        return (
            f"quantity {text(o.quantity)} is below the minimum {text(inst.min_qty)} "
            f"for {inst.name} (quantities are never rounded up)"
        )
    if o.leverage <= 0 or o.leverage > inst.max_leverage:
        return (
            f"leverage {text(o.leverage)} is outside 0 < leverage <= "
            f"{text(inst.max_leverage)} for {inst.name}"
        )
    if o.order_type == "limit":
        if o.limit_price is None:
            return "a limit order needs limit_price"
        if o.max_slippage_bps is not None:
            return "max_slippage_bps is for market orders"
        if (bad := off_tick("limit_price", o.limit_price, inst)) is not None:
            return bad
    else:
        if o.max_slippage_bps is None:
            return "a market order needs max_slippage_bps (its slippage bound)"
        if o.max_slippage_bps < 0:
            return f"max_slippage_bps {text(o.max_slippage_bps)} must not be negative"
        if o.limit_price is not None:
            return "limit_price is for limit orders"
        if o.time_in_force == "POST_ONLY":
            return "POST_ONLY needs a limit order"
    if o.protective is not None:
        for name in ("stop_loss", "take_profit"):
            price = getattr(o.protective, name)
            if price is not None and (bad := off_tick(f"protective.{name}", price, inst)):
                return bad
    if (small := below_notional(o, inst)) is not None:
        return small
    if o.reduce_only:
        most = closable(position, o.side)
        if o.quantity > most:
            return (
                f"reduce-only {o.side} {text(o.quantity)} would "
                f"{'open or increase' if most == 0 else 'flip'} the position "
                f"({text(position)} {inst.name}); at most {text(most)} can be reduced"
            )
    if o.order_type == "limit" and o.time_in_force == "POST_ONLY":
        assert o.limit_price is not None
        if marketable(o.side, o.limit_price, inst.mark):
            return (
                f"post-only {o.side} at {text(o.limit_price)} would take liquidity "
                f"at the mark {text(inst.mark)}"
            )
    if o.order_type == "market":
        assert o.max_slippage_bps is not None
        price = faults.market_price(o.side, inst)
        bound = inst.mark * (BPS + o.max_slippage_bps) / BPS
        if o.side == "sell":
            bound = inst.mark * (BPS - o.max_slippage_bps) / BPS
        if (o.side == "buy" and price > bound) or (o.side == "sell" and price < bound):
            return (
                f"market {o.side} would fill at {text(price)}, beyond max_slippage_bps "
                f"{text(o.max_slippage_bps)} from the mark {text(inst.mark)} "
                f"(bound {text(bound)})"
            )
    return None


def off_tick(name: str, price: Decimal, inst: Instrument) -> str | None:
    if price <= 0:
        return f"{name} {text(price)} must be greater than zero"
    if price % inst.tick != 0:
        return (
            f"{name} {text(price)} is not a multiple of the tick {text(inst.tick)} "
            f"for {inst.name} (prices are never rounded)"
        )
    if too_precise(price, inst):
        return (
            f"{name} {text(price)} has more than {inst.sig_figs} significant figures "
            f"for {inst.name} (prices are never rounded)"
        )
    return None


def below_notional(o: VenueOrder, inst: Instrument) -> str | None:
    """The venue's minimum value per order, at the order's limit (a market order: the
    mark). Quantities are never rounded up to meet it."""
    if inst.min_notional is None:
        return None
    price = o.limit_price if o.limit_price is not None else inst.mark
    if o.quantity * price < inst.min_notional:
        return (
            f"order value {text(o.quantity * price)} is below the minimum "
            f"{text(inst.min_notional)} for {inst.name} (quantities are never rounded up)"
        )
    return None


def marketable(side: str, limit: Decimal, mark: Decimal) -> bool:
    return limit >= mark if side == "buy" else limit <= mark


def closable(position: Decimal, side: str) -> Decimal:
    """How much a reduce-only order on `side` may fill without increasing the position."""
    if side == "buy":
        return -position if position < 0 else Decimal(0)
    return position if position > 0 else Decimal(0)


def child_refusal(role: str, side: str, trigger: Decimal, mark: Decimal) -> str | None:
    if triggered(role, side, trigger, mark):
        return (
            f"{role} {text(trigger)} would trigger at once: the mark is {text(mark)} "
            f"({'above' if (role == 'take_profit') == (side == 'sell') else 'below'} "
            "the mark is needed)"
        )
    return None


def triggered(role: str, side: str, trigger: Decimal, mark: Decimal) -> bool:
    """A sell child protects a long: stop below, take-profit above (buy: the reverse)."""
    falls_to = (role == "stop_loss") == (side == "sell")
    return mark <= trigger if falls_to else mark >= trigger


def same_terms(row: OrderRow, o: VenueOrder) -> bool:
    protective = o.protective
    return (
        row.account == o.account
        and row.instrument == o.instrument
        and row.side == o.side
        and row.quantity == o.quantity
        and row.order_type == o.order_type
        and row.limit_price == o.limit_price
        and row.max_slippage_bps == o.max_slippage_bps
        and row.time_in_force == o.time_in_force
        and row.reduce_only == o.reduce_only
        and row.leverage == o.leverage
        and row.stop_loss == (protective.stop_loss if protective else None)
        and row.take_profit == (protective.take_profit if protective else None)
    )
