"""Reading what Hyperliquid knows of one of our orders: `orderStatus` by cloid (weight 2,
never `openOrders` for this), its protective children by their own cloids, and its fills
from `userFillsByTime` joined on the `oid` (fills carry no cloid).

`read_state` needs the order's terms as confirmed (from the evidence or from this process's
memory): the venue's record says where the order is, the terms say what it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from store import World
from workers.domains.finance.hyperliquid import answers
from workers.domains.finance.hyperliquid.answers import Placed, Record, Terms
from workers.domains.finance.hyperliquid.economy import FILLS_SPACING_S
from workers.domains.finance.hyperliquid.memory import Memory
from workers.domains.finance.hyperliquid.transport import Transport
from workers.domains.finance.hyperliquid.wire import cloid_of, instrument_of
from workers.domains.finance.venues.contract import VenueUnavailable
from workers.domains.finance.venues.model import (
    CHILD_SUFFIX,
    ORDER_CANCELLED,
    ORDER_REJECTED,
    Fill,
    OrderStatus,
    ProtectiveSpec,
    VenueOrder,
    VenueOrderState,
)

IOC_REST: Final = "the rest did not match at once (IOC) and was cancelled"
FILLS_PAGE: Final = 2000  # userFillsByTime answers at most this many per call
FILLS_PAGES: Final = 5
FILLS_BUCKET_MS: Final = 60_000  # the first page starts at the minute (one body per burst)


async def order_record(transport: Transport, user: str, client_id: str) -> Record | None:
    answer = await transport.info({"type": "orderStatus", "user": user, "oid": cloid_of(client_id)})
    try:
        return answers.record(answer)
    except answers.Unreadable as error:
        raise VenueUnavailable(str(error)) from None


async def user_fills(transport: Transport, user: str, since_ms: int) -> list[Mapping[str, Any]]:
    """The user's fills since `since_ms` (or a little before), page by page (each page at
    most 2000). Always a read sent after this call (a fill that just happened is in it);
    the first page starts at the minute, so the reads for a burst of orders are one body,
    and one account's reads go out at most every FILLS_SPACING_S, shared."""
    fills: list[Mapping[str, Any]] = []
    start = since_ms - since_ms % FILLS_BUCKET_MS
    for _ in range(FILLS_PAGES):
        body = {"type": "userFillsByTime", "user": user, "startTime": start}
        page = (
            await transport.read(
                body | {"aggregateByTime": False}, max_age=0.0, spacing=FILLS_SPACING_S
            )
        ).answer
        if not isinstance(page, list):
            raise VenueUnavailable(f"userFillsByTime answered {page!r:.200}")
        fills.extend(page)
        if len(page) < FILLS_PAGE:
            break
        start = max(int(f["time"]) for f in page) + 1
    return fills


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


Records = tuple[Record, list[tuple[Terms, Record | None]]]
# what a poll compares: each record's venue status and size left (children in order)
Key = tuple[tuple[str, Decimal] | None, ...]


async def _records(transport: Transport, user: str, order: VenueOrder) -> Records | None:
    parent, *children = answers.terms_of(order)
    record = await order_record(transport, user, parent.client_id)
    if record is None:
        return None
    return record, [(t, await order_record(transport, user, t.client_id)) for t in children]


def _key(records: Records) -> Key:
    record, children = records
    return tuple(
        None if r is None else (r.status, r.remaining) for r in (record, *(c for _, c in children))
    )


def _fills_complete(state: VenueOrderState) -> bool:
    return all(
        s.filled_qty == sum((f.quantity for f in s.fills), Decimal(0))
        for s in (state, *state.children)
    )


async def _assemble(
    transport: Transport, user: str, order: VenueOrder, world: World, records: Records
) -> VenueOrderState:
    record, child_records = records
    parent = answers.terms_of(order)[0]
    raw_fills = await user_fills(transport, user, _ms(record.created_at))
    try:
        kids = [
            from_record(t, r, answers.fills_of(raw_fills, r.oid), world)
            for t, r in child_records
            if r is not None
        ]
        return from_record(parent, record, answers.fills_of(raw_fills, record.oid), world, kids)
    except (answers.Unreadable, KeyError, TypeError, ValueError) as error:
        # a shape this adapter does not know: nothing is known, never a guess
        raise VenueUnavailable(
            f"the venue's answer for {order.client_id} could not be read: {error!r:.200}"
        ) from None


async def read_state(
    transport: Transport, user: str, order: VenueOrder, world: World
) -> VenueOrderState | None:
    """What the venue knows of `order` and its children; None while it does not know it."""
    records = await _records(transport, user, order)
    return None if records is None else await _assemble(transport, user, order, world, records)


async def poll_state(
    transport: Transport,
    user: str,
    order: VenueOrder,
    world: World,
    previous: tuple[Key, VenueOrderState] | None,
) -> tuple[Key, VenueOrderState] | None:
    """`read_state` for a watcher: when every record is as `previous` saw it and its fills
    account for all it filled, `previous` is kept without reading fills again (orderStatus
    weighs 2, fills 20 and more: polling stays inside the venue's rate limit)."""
    records = await _records(transport, user, order)
    if records is None:
        return None
    key = _key(records)
    if previous is not None and previous[0] == key and _fills_complete(previous[1]):
        return previous
    return key, await _assemble(transport, user, order, world, records)


def same_terms(record: Record, order: VenueOrder) -> bool:
    """Whether the venue's order is the one `order` describes (one client id, one order)."""
    return (
        record.side == order.side
        and record.orig_sz == order.quantity
        and record.reduce_only == order.reduce_only
        and (order.order_type == "market" or record.limit_px == order.limit_price)
    )


def from_record(
    terms: Terms,
    record: Record,
    fills: Sequence[Fill],
    world: World,
    children: Sequence[VenueOrderState] = (),
) -> VenueOrderState:
    filled = sum((f.quantity for f in fills), Decimal(0))
    if not fills:  # fills may trail the order's status: take the venue's sizes meanwhile
        filled = record.orig_sz if record.status == "filled" else record.orig_sz - record.remaining
        filled = filled if filled != 0 else Decimal(0)
    status, reason = answers.status_of(
        record.status, record.is_trigger, filled, terms.order.quantity
    )
    if record.status == "canceled" and record.tif == "Ioc":
        reason = IOC_REST  # the venue cancels what an IOC could not match at once
    return answers.state(
        terms,
        world,
        status=status,
        reason=reason,
        filled=filled,
        remaining=record.remaining,
        fills=fills,
        avg_px=None,
        created_at=record.created_at,
        updated_at=record.updated_at,
        children=children,
    )


def from_answer(
    order: VenueOrder, statuses: Sequence[Placed], world: World, at: datetime
) -> VenueOrderState:
    """The state an `order` answer alone tells (fills and fees not read yet: unknown)."""
    parent, *children = answers.terms_of(order)
    kids = [_answered(t, s, world, at) for t, s in zip(children, statuses[1:], strict=True)]
    return _answered(parent, statuses[0], world, at, kids)


def _answered(
    terms: Terms,
    placed: Placed,
    world: World,
    at: datetime,
    children: Sequence[VenueOrderState] = (),
) -> VenueOrderState:
    quantity = terms.order.quantity
    filled = Decimal(0)
    reason = None
    if placed.kind in ("error", "refused"):
        status: OrderStatus = ORDER_REJECTED
        reason = f"rejected by the venue: {placed.text}" if placed.kind == "error" else placed.text
    elif placed.kind == "waiting":
        status = "accepted"
    elif placed.kind == "resting":
        status = "resting"
    else:
        filled = placed.total_sz or Decimal(0)
        if filled >= quantity:
            status = "filled"
        elif terms.order_type == "market" or terms.time_in_force == "IOC":
            status, reason = ORDER_CANCELLED, IOC_REST
        else:
            status = "partially_filled"
    return answers.state(
        terms,
        world,
        status=status,
        reason=reason,
        filled=filled,
        remaining=quantity - filled,
        fills=(),
        avg_px=placed.avg_px,
        created_at=at,
        updated_at=at,
        children=children,
    )


TIF_OF: Final = {"Gtc": "GTC", "Ioc": "IOC", "Alo": "POST_ONLY"}


async def order_from_venue(
    transport: Transport, account: str, user: str, client_id: str
) -> VenueOrder | None:
    """An order this process has no terms for, as the venue holds it (its children by their
    cloids; the leverage is the account's for the coin, which is what the order runs at)."""
    record = await order_record(transport, user, client_id)
    if record is None:
        return None
    instrument = instrument_of(record.coin)
    if instrument is None:
        return None
    sl = await order_record(transport, user, client_id + CHILD_SUFFIX["stop_loss"])
    tp = await order_record(transport, user, client_id + CHILD_SUFFIX["take_profit"])
    protective = None
    if sl is not None or tp is not None:
        protective = ProtectiveSpec(sl.trigger_px if sl else None, tp.trigger_px if tp else None)
    data = await transport.info({"type": "activeAssetData", "user": user, "coin": record.coin})
    try:
        leverage = Decimal(str(data["leverage"]["value"]))
    except (KeyError, TypeError, ArithmeticError):
        raise VenueUnavailable(f"activeAssetData answered {data!r:.200}") from None
    tif = TIF_OF.get(str(record.tif), "GTC")
    return VenueOrder(
        client_id=client_id,
        account=account,
        instrument=instrument,
        side=record.side,
        quantity=record.orig_sz,
        order_type="limit",
        time_in_force="IOC" if tif == "IOC" else "POST_ONLY" if tif == "POST_ONLY" else "GTC",
        leverage=leverage,
        limit_price=record.limit_px,
        reduce_only=record.reduce_only,
        protective=protective,
    )


async def locate(
    transport: Transport, memory: Memory, accounts: Sequence[tuple[str, str]], client_id: str
) -> tuple[VenueOrder, str] | None:
    """The order `client_id` belongs to (itself, or the parent of a protective child) and its
    account's address: from this process's memory, else from the venue (`accounts`: each
    configured (name, address))."""
    parent_id = client_id
    for suffix in CHILD_SUFFIX.values():
        if client_id.endswith(suffix):
            parent_id = client_id.removesuffix(suffix)
    known = memory.known(parent_id)
    if known is not None:
        return known
    for name, address in accounts:
        found = await order_from_venue(transport, name, address, parent_id)
        if found is not None:
            memory.remember(found, address)
            return found, address
    return None
