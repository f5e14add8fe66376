"""Matching against a mark the tests move: there are no other traders, the house takes every side.

A limit that crosses the mark fills at the mark as taker; a resting order fills at its own
price as maker when the mark moves through it; liquidity per coin caps the size filled per
match event (a placement, a mark move, a tick); armed TP/SL triggers fire on the mark.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hlsandbox.numbers import usdc, wire
from hlsandbox.state import Account, Order, Venue

Budget = dict[str, Decimal | None]  # coin -> size left to fill in this match event (None: any)


def crosses(order: Order, mark: Decimal) -> bool:
    if order.triggered and order.trigger is not None and order.trigger.is_market:
        return True  # a market trigger takes the mark whatever its limit price
    return order.limit_px >= mark if order.is_buy else order.limit_px <= mark


def trigger_fires(order: Order, mark: Decimal) -> bool:
    assert order.trigger is not None
    # a sell closes a long: its tp is above, its sl below the mark (mirrored for a buy)
    above = order.trigger.tpsl == "tp"
    if order.is_buy:
        above = not above
    return mark >= order.trigger.px if above else mark <= order.trigger.px


def reducible(venue: Venue, order: Order) -> Decimal:
    """How much of a reduce-only order may still fill: up to the opposite position."""
    account = venue.accounts[order.user]
    szi = account.position(order.asset.name).szi
    if (order.is_buy and szi < 0) or (not order.is_buy and szi > 0):
        return min(order.remaining, abs(szi))
    return Decimal(0)


def fillable(venue: Venue, order: Order, budget: Budget) -> Decimal:
    size = reducible(venue, order) if order.reduce_only else order.remaining
    left = budget.get(order.asset.name)
    return size if left is None else min(size, left)


def execute(
    venue: Venue,
    order: Order,
    px: Decimal,
    sz: Decimal,
    *,
    crossed: bool,
    tx_hash: str,
    budget: Budget,
    drop_fee: bool = False,
) -> dict[str, Any]:
    """Fill `sz` of `order` at `px`: position, balance, fee, the fill record."""
    account = venue.accounts[order.user]
    coin = order.asset.name
    left = budget.get(coin)
    if left is not None:
        budget[coin] = left - sz
    position = account.position(coin)
    start = position.szi
    signed = sz if order.is_buy else -sz
    closed_pnl = Decimal(0)
    if start == 0 or (start > 0) == order.is_buy:
        total = abs(start) + sz
        position.entry_px = (abs(start) * position.entry_px + sz * px) / total
        direction = "Open Long" if order.is_buy else "Open Short"
    else:
        closing = min(sz, abs(start))
        closed_pnl = closing * (px - position.entry_px) * (1 if start > 0 else -1)
        if sz > abs(start):
            direction = "Short > Long" if order.is_buy else "Long > Short"
            position.entry_px = px
        else:
            direction = "Close Short" if order.is_buy else "Close Long"
    position.szi = start + signed
    if position.szi == 0:
        position.entry_px = Decimal(0)
        del account.positions[coin]
    rate = venue.taker_rate if crossed else venue.maker_rate
    fee = usdc(px * sz * rate)
    closed_pnl = usdc(closed_pnl)
    account.usdc += closed_pnl - fee
    account.volume += px * sz
    order.filled_sz += sz
    fill: dict[str, Any] = {
        "coin": coin,
        "px": wire(px),
        "sz": wire(sz),
        "side": "B" if order.is_buy else "A",
        "time": venue.now_ms(),
        "startPosition": wire(start),
        "dir": direction,
        "closedPnl": wire(closed_pnl),
        "hash": tx_hash,
        "oid": order.oid,
        "crossed": crossed,
        "fee": wire(fee),
        "tid": venue.new_tid(),
        "feeToken": "USDC",
    }
    if drop_fee:
        del fill["fee"]  # the fault: a fill that carries no fee evidence
    venue.fills.setdefault(order.user, []).append(fill)
    if order.remaining == 0:
        venue.finish(order, "filled")
        after_filled(venue, order)
    cancel_siblings(venue, order)
    return fill


def after_filled(venue: Venue, order: Order) -> None:
    """A filled parent arms its TP/SL children."""
    for child_oid in order.children:
        child = venue.orders[child_oid]
        if child.is_open:
            child.waiting_parent = False


def cancel_siblings(venue: Venue, order: Order) -> None:
    """One TP/SL child filling cancels the other."""
    if order.parent is None or order.trigger is None:
        return
    for sibling_oid in venue.orders[order.parent].children:
        sibling = venue.orders[sibling_oid]
        if sibling.oid != order.oid and sibling.is_open:
            venue.finish(sibling, "siblingFilledCanceled")


def take(
    venue: Venue, order: Order, budget: Budget, tx_hash: str, drop_fee: bool = False
) -> Decimal:
    """An order that crosses the mark fills at the mark as taker, as far as liquidity goes."""
    mark = venue.marks[order.asset.name]
    size = fillable(venue, order, budget)
    if size <= 0 or not crosses(order, mark):
        return Decimal(0)
    execute(
        venue, order, mark, size, crossed=True, tx_hash=tx_hash, budget=budget, drop_fee=drop_fee
    )
    return size


def match_coin(venue: Venue, coin: str, drop_fee: bool = False) -> int:
    """One match event for `coin` at its mark: fire triggers, then fill resting orders."""
    mark = venue.marks[coin]
    budget: Budget = {coin: venue.liquidity.get(coin)}
    tx_hash = venue.tx_hash("mark", coin, mark)
    fills = 0
    for order in sorted(venue.open_orders(coin), key=lambda o: o.oid):
        if not order.is_open or order.waiting_parent:
            continue
        if order.armed_trigger:
            if not trigger_fires(order, mark):
                continue
            order.triggered = True
            order.status_timestamp = venue.now_ms()
            if reducible(venue, order) == 0:
                venue.finish(order, "reduceOnlyCanceled")
                continue
            fills += take(venue, order, budget, tx_hash, drop_fee) > 0
            continue
        if order.trigger is not None and not order.triggered:
            continue
        if order.reduce_only and reducible(venue, order) == 0:
            venue.finish(order, "reduceOnlyCanceled")
            continue
        if not crosses(order, mark):
            continue
        size = fillable(venue, order, budget)
        if size <= 0:
            continue
        # a triggered order takes at the mark; a resting one was hit at its own price
        px, crossed = (mark, True) if order.triggered else (order.limit_px, False)
        execute(
            venue,
            order,
            px,
            size,
            crossed=crossed,
            tx_hash=tx_hash,
            budget=budget,
            drop_fee=drop_fee,
        )
        fills += 1
    return fills


def fire_scheduled_cancels(venue: Venue) -> int:
    now = venue.now_ms()
    cancelled = 0
    for account in venue.accounts.values():
        if account.scheduled_cancel is None or account.scheduled_cancel > now:
            continue
        account.scheduled_cancel = None
        account.scheduled_cancel_triggers += 1
        for order in venue.user_orders(account.address):
            if order.is_open:
                venue.finish(order, "scheduledCancel")
                cancelled += 1
    return cancelled


def tick(venue: Venue) -> int:
    """A match event on every coin, after the scheduled cancels that are due."""
    fire_scheduled_cancels(venue)
    return sum(match_coin(venue, coin) for coin in venue.assets)


def set_mark(venue: Venue, coin: str, px: Decimal) -> int:
    venue.marks[coin] = px
    fire_scheduled_cancels(venue)
    return match_coin(venue, coin)


def cancel(venue: Venue, account: Account, order: Order | None, asset_index: int) -> Any:
    """One cancel of an order by oid or cloid: "success", or the venue's error."""
    if (
        order is None
        or order.user != account.address
        or order.asset.index != asset_index
        or not order.is_open
    ):
        return {"error": "Order was never placed, already canceled, or filled."}
    venue.finish(order, "canceled")
    for child_oid in order.children:
        child = venue.orders[child_oid]
        if child.is_open and child.waiting_parent:
            venue.finish(child, "canceled")
    return "success"
