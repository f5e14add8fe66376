"""Matching for the simulated venue as pure functions: a book in, a new book and its writes out.

This module owns what happens to orders: a new order placed, rejected or filled at once
(`submit`), a repeated client id counted (`resubmit`), a working order cancelled (`cancel`)
and one matching round over time (`tick`). Nothing here does I/O or changes what it was
given: `transactions` loads the `Book` a call needs from the store, calls one function and
writes the returned `events` in order (the order of the writes they stand for, so fill ids
and submission order come out as they always did). Arithmetic runs under `decimals.EXACT`,
entered here, so a caller outside a store transaction gets the same exact answers.

Matching rules (one-way account mode, liquidity at the mark):

* A limit buy at or above the mark fills at once **at the mark** (taker fee); below
  the mark it rests at its limit (maker). Sells are symmetric.
* A market order fills at once at the mark, or with the `slippage_bps` fault at the
  mark moved that many basis points against the order and put on the tick (adversely).
  If that price is beyond `max_slippage_bps` from the mark, the order is rejected
  with the reason. Market orders never rest: an unfilled rest is cancelled.
* `Instrument.liquidity` caps what one taker order fills at once (None: unlimited).
  GTC: the rest of a limit rests; IOC: the rest is cancelled (status `cancelled`
  with `filled_qty > 0`); FOK: all now or nothing (`cancelled`, nothing filled);
  POST_ONLY: rejected if it would take, otherwise rests like GTC.
* `reduce_only` is rejected if it would open, increase or flip the position; a
  resting reduce-only order fills at most what is left to reduce, the rest is
  cancelled.
* Nothing is rounded: a price off the tick, a quantity off the lot or below the
  minimum is rejected with the reason (the executor's preflight reads tick, lot and
  minimum from `observe`).
* Over time, `tick()` (or `advance(seconds)`, one tick per simulated second) fills
  resting orders whose limit the mark has reached (buy: mark <= limit, sell: mark
  >= limit) at their limit as maker, the whole rest at once or, with the
  `partial_fill` fault, a fraction of the order's quantity per tick (at least one
  lot), so an order goes resting -> partially_filled -> filled.
* Protective stop-loss / take-profit become child orders `<client_id>:sl` /
  `<client_id>:tp` only once the parent has a fill: reduce-only stop-market orders
  on the other side, sized to the parent's filled quantity (and grown with later
  parent fills while untriggered), status `accepted` until the mark reaches their
  trigger on a tick; then they fill at the mark (taker) and cancel their sibling
  (one-cancels-other). A child that would trigger at once when placed is rejected
  with its own reason; the parent stands.
* Fees accrue per fill (rate x quantity x price, exact). With `fees_unknown` the
  venue reports no fee (`None`, never zero).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from decimal import Decimal, localcontext

from workers.domains.finance.sim.book import (
    Book,
    Event,
    FillMade,
    OrderChanged,
    OrderPlaced,
    Outcome,
    PositionChanged,
)
from workers.domains.finance.sim.decimals import AVERAGE, EXACT, plain, text
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.rows import OrderRow, PositionRow
from workers.domains.finance.sim.rules import (
    child_refusal,
    closable,
    marketable,
    refusal,
    triggered,
)
from workers.domains.finance.venues.model import (
    CHILD_SUFFIX,
    ORDER_CANCELLED,
    ORDER_REJECTED,
    WORKING,
    Instrument,
    Liquidity,
    VenueOrder,
)

PROTECTIVE_ROLES = ("stop_loss", "take_profit")


class _Work:
    """A private, changing copy of a book that records every write as an event."""

    def __init__(self, book: Book, now: datetime) -> None:
        self.book = book
        self.orders = dict(book.orders)
        self.positions = dict(book.positions)
        self.events: list[Event] = []
        self.stamp = now.isoformat()

    def place(self, row: OrderRow) -> None:
        self.orders[row.client_id] = row
        self.events.append(OrderPlaced(row))

    def save(self, row: OrderRow) -> None:
        self.orders[row.client_id] = row
        self.events.append(OrderChanged(row))

    def position(self, account: str, instrument: str) -> PositionRow:
        found = self.positions.get((account, instrument))
        return found or PositionRow(account, instrument, Decimal(0), None)

    def children(self, client_id: str) -> list[OrderRow]:
        return [o for o in self.orders.values() if o.parent_client_id == client_id]

    def outcome(self, changed: tuple[str, ...]) -> Outcome:
        book = replace(self.book, orders=self.orders, positions=self.positions)
        return Outcome(book, tuple(self.events), changed)


# -- calls -------------------------------------------------------------------------------------
def submit(book: Book, order: VenueOrder, faults: Faults, now: datetime) -> Outcome:
    """A client id the venue has not seen: the order rejected with the reason, or placed and
    matched at once (filled, resting, or cancelled by its time in force)."""
    with localcontext(EXACT):
        work = _Work(book, now)
        protective = order.protective
        row = OrderRow(
            client_id=order.client_id,
            parent_client_id=None,
            role="order",
            account=order.account,
            instrument=order.instrument,
            side=order.side,
            quantity=order.quantity,
            order_type=order.order_type,
            limit_price=order.limit_price,
            max_slippage_bps=order.max_slippage_bps,
            time_in_force=order.time_in_force,
            reduce_only=order.reduce_only,
            leverage=order.leverage,
            trigger_price=None,
            stop_loss=protective.stop_loss if protective else None,
            take_profit=protective.take_profit if protective else None,
            status="accepted",
            filled_qty=Decimal(0),
            reason=None,
            submit_count=1,
            created_at=work.stamp,
            updated_at=work.stamp,
        )
        inst = book.instruments.get(order.instrument)
        reason = faults.rejection() or refusal(
            order,
            inst,
            accounts=book.accounts,
            instruments=book.instruments,
            position=book.position(order.account, order.instrument).qty,
            faults=faults,
        )
        if reason is not None or inst is None:
            work.place(replace(row, status=ORDER_REJECTED, reason=reason or "unknown instrument"))
        else:
            work.place(row)
            _match_new(work, row, inst, faults)
        return work.outcome((order.client_id,))


def resubmit(row: OrderRow, now: datetime) -> OrderRow:
    """A client id submitted again: nothing new is placed; the stored order counts it."""
    return replace(row, submit_count=row.submit_count + 1, updated_at=now.isoformat())


def cancel(row: OrderRow, now: datetime) -> OrderRow:
    """A working order cancelled on request; a terminal one is returned unchanged (the same
    object). Cancelling a parent leaves its protective children working."""
    if row.status not in WORKING:
        return row
    return _finish(row, ORDER_CANCELLED, "cancelled on request", now.isoformat())


def tick(book: Book, faults: Faults, now: datetime) -> Outcome:
    """One matching round at `now`: triggered protective children first, then resting
    orders whose limit the mark has reached."""
    with localcontext(EXACT):
        work = _Work(book, now)
        instruments = book.instruments
        changed: dict[str, None] = {}
        # 1. protective children whose trigger the mark has reached
        listed = [
            o.client_id
            for o in work.orders.values()
            if o.status == "accepted" and o.role in PROTECTIVE_ROLES
        ]
        for client_id in listed:
            child = work.orders[client_id]
            if child.status != "accepted" or child.trigger_price is None:
                continue
            inst = instruments[child.instrument]
            if not triggered(child.role, child.side, child.trigger_price, inst.mark):
                continue
            left_to_reduce = closable(
                work.position(child.account, child.instrument).qty, child.side
            )
            qty = min(child.remaining, left_to_reduce)
            if qty > 0:
                child = _fill(work, child, inst, qty, inst.mark, "taker", faults)
            if child.remaining > 0:
                left = "nothing" if qty == 0 else f"only {text(qty)}"
                child = _finish(
                    child,
                    ORDER_CANCELLED,
                    f"triggered at {text(inst.mark)}; reduce-only: {left} was left to reduce",
                    work.stamp,
                )
                work.save(child)
            changed[child.client_id] = None
            for sibling in work.children(child.parent_client_id or ""):
                if sibling.client_id != child.client_id and sibling.status == "accepted":
                    reason = f"one-cancels-other: {child.client_id} triggered at {text(inst.mark)}"
                    work.save(_finish(sibling, ORDER_CANCELLED, reason, work.stamp))
                    changed[sibling.client_id] = None
        # 2. resting orders whose limit the mark has reached
        listed = [
            o.client_id
            for o in work.orders.values()
            if o.status in ("resting", "partially_filled") and o.role == "order"
        ]
        for client_id in listed:
            row = work.orders[client_id]
            if row.status not in ("resting", "partially_filled"):
                continue
            assert row.limit_price is not None
            inst = instruments[row.instrument]
            if not marketable(row.side, row.limit_price, inst.mark):
                continue
            chunk = faults.tick_chunk(row.quantity, row.remaining, inst.lot)
            capped = False
            if row.reduce_only:
                most = closable(work.position(row.account, row.instrument).qty, row.side)
                if chunk > most:
                    chunk, capped = most, True
            if chunk > 0:
                row = _fill(work, row, inst, chunk, row.limit_price, "maker", faults)
            if capped and row.remaining > 0:
                reason = (
                    f"reduce-only: remaining {text(row.remaining)} cancelled, "
                    "the position has nothing more to reduce"
                )
                work.save(_finish(row, ORDER_CANCELLED, reason, work.stamp))
            changed[row.client_id] = None
        # Children placed or grown by these fills changed too.
        for client_id in list(changed):
            for kid in work.children(client_id):
                changed.setdefault(kid.client_id, None)
        return work.outcome(tuple(changed))


# -- steps -------------------------------------------------------------------------------------
def _match_new(work: _Work, row: OrderRow, inst: Instrument, faults: Faults) -> None:
    if row.order_type == "market":
        price, crosses = faults.market_price(row.side, inst), True
    else:
        assert row.limit_price is not None
        price, crosses = inst.mark, marketable(row.side, row.limit_price, inst.mark)
    tif = row.time_in_force
    if not crosses:
        if tif in ("GTC", "POST_ONLY"):
            work.save(replace(row, status="resting"))
        else:
            assert row.limit_price is not None
            reason = (
                f"{tif}: limit {text(row.limit_price)} does not reach the mark "
                f"{text(inst.mark)}; nothing filled"
            )
            work.save(_finish(row, ORDER_CANCELLED, reason, work.stamp))
        return
    available = row.quantity if inst.liquidity is None else min(row.quantity, inst.liquidity)
    if tif == "FOK" and available < row.quantity:
        reason = f"FOK: only {text(available)} of {text(row.quantity)} fillable now; nothing filled"
        work.save(_finish(row, ORDER_CANCELLED, reason, work.stamp))
        return
    row = _fill(work, row, inst, available, price, "taker", faults)
    if row.remaining > 0 and (row.order_type == "market" or tif == "IOC"):
        reason = (
            f"{'market' if row.order_type == 'market' else 'IOC'}: remaining "
            f"{text(row.remaining)} cancelled (only {text(available)} available at the mark)"
        )
        work.save(_finish(row, ORDER_CANCELLED, reason, work.stamp))


def _finish(row: OrderRow, status: str, reason: str | None, stamp: str) -> OrderRow:
    return replace(row, status=status, reason=reason, updated_at=stamp)


def _fill(
    work: _Work,
    row: OrderRow,
    inst: Instrument,
    qty: Decimal,
    price: Decimal,
    liquidity: Liquidity,
    faults: Faults,
) -> OrderRow:
    """Fill `qty` of `row` at `price`: the fill, the order, the position, then (for a
    parent) its protective children. Returns the filled row."""
    rate = inst.maker_fee_rate if liquidity == "maker" else inst.taker_fee_rate
    fee = faults.fee(qty, price, rate)
    work.events.append(
        FillMade(row.client_id, qty, price, fee, inst.fee_currency, liquidity, work.stamp)
    )
    filled = row.filled_qty + qty
    status = "filled" if filled == row.quantity else "partially_filled"
    row = replace(row, filled_qty=filled, status=status, updated_at=work.stamp)
    work.save(row)
    pos = work.position(row.account, row.instrument)
    held, avg = apply_fill(pos, row.side, qty, price)
    pos = replace(pos, qty=held, avg_price=avg)
    work.positions[(pos.account, pos.instrument)] = pos
    work.events.append(PositionChanged(pos))
    if row.role == "order":
        _sync_children(work, row, inst)
    return row


def apply_fill(
    pos: PositionRow, side: str, qty: Decimal, price: Decimal
) -> tuple[Decimal, Decimal | None]:
    """One-way position after a fill: (signed qty, average entry price)."""
    signed = qty if side == "buy" else -qty
    new = pos.qty + signed
    if new == 0:
        return new, None
    if pos.qty == 0 or (pos.qty > 0) == (signed > 0):  # opening or increasing
        held = abs(pos.qty) * (pos.avg_price or Decimal(0))
        return new, plain(AVERAGE.divide(held + qty * price, abs(new)))
    if (pos.qty > 0) == (new > 0):  # reducing: the entry price stays
        return new, pos.avg_price
    return new, price  # flipped: the rest opened at this fill's price


def _sync_children(work: _Work, parent: OrderRow, inst: Instrument) -> None:
    """Place (after the first fill) or grow the protective children of `parent`."""
    if parent.filled_qty <= 0:
        return
    for role, trigger in (("stop_loss", parent.stop_loss), ("take_profit", parent.take_profit)):
        if trigger is None:
            continue
        client_id = parent.client_id + CHILD_SUFFIX[role]
        child = work.orders.get(client_id)
        if child is not None:
            if child.status == "accepted" and child.quantity != parent.filled_qty:
                work.save(replace(child, quantity=parent.filled_qty, updated_at=work.stamp))
            continue
        side = "sell" if parent.side == "buy" else "buy"
        reason = child_refusal(role, side, trigger, inst.mark)
        work.place(
            OrderRow(
                client_id=client_id,
                parent_client_id=parent.client_id,
                role=role,
                account=parent.account,
                instrument=parent.instrument,
                side=side,
                quantity=parent.filled_qty,
                order_type="market",
                limit_price=None,
                max_slippage_bps=None,
                time_in_force="GTC",
                reduce_only=True,
                leverage=parent.leverage,
                trigger_price=trigger,
                stop_loss=None,
                take_profit=None,
                status=ORDER_REJECTED if reason else "accepted",
                filled_qty=Decimal(0),
                reason=reason,
                submit_count=1,
                created_at=work.stamp,
                updated_at=work.stamp,
            )
        )
