"""Hyperliquid's answers read into countersign's `VenueOrderState` (pure: no SDK, no I/O).

Shapes (reference/venues.md §1.2, §1.5): an `order` action answers `{"status":"ok",
"response":{"type":"order","data":{"statuses":[...]}}}` with one status per order (resting,
filled, a per-order error, or a bare "waitingForFill"/"waitingForTrigger" for a TP/SL child),
or `{"status":"err","response":"<text>"}` for the whole payload; `orderStatus` answers the
order and its status, or `{"status":"unknownOid"}`; fills carry the `oid`, never the cloid,
and a fill without `fee` has an unknown fee (None), never zero. An answer that fits none of
these raises `Unreadable`: a caller that sent something treats it as ambiguous.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Literal

from store import World
from workers.domains.finance.sim.decimals import AVERAGE, plain
from workers.domains.finance.venues.model import (
    CHILD_SUFFIX,
    ORDER_CANCELLED,
    ORDER_REJECTED,
    Fill,
    OrderStatus,
    OrderType,
    ProtectiveSpec,
    Role,
    Side,
    TimeInForce,
    VenueOrder,
    VenueOrderState,
)

WAITING: Final = ("waitingForFill", "waitingForTrigger")
HL_REJECTED: Final = "rejected"  # Hyperliquid's own word for an order it refused (status_of)
IDENTITY_PREFIXES: Final = ("User or API Wallet", "L1 error: User or API Wallet")


class Unreadable(ValueError):
    """The venue answered something this adapter does not know how to read."""


@dataclass(frozen=True)
class Placed:
    """One order's status in an `order` answer."""

    # "refused": never placed, for a reason stated in full in `text` (refused before sending,
    # or an identity mismatch), not a per-order verdict of the venue
    kind: Literal["resting", "filled", "error", "waiting", "refused"]
    oid: int | None = None
    total_sz: Decimal | None = None
    avg_px: Decimal | None = None
    text: str | None = None


@dataclass(frozen=True)
class Record:
    """One order as `orderStatus` reports it."""

    oid: int
    status: str
    is_trigger: bool
    orig_sz: Decimal
    remaining: Decimal
    created_at: datetime
    updated_at: datetime
    coin: str = ""
    side: Side = "buy"
    limit_px: Decimal | None = None
    trigger_px: Decimal | None = None
    reduce_only: bool = False
    tif: str | None = None


@dataclass(frozen=True)
class Terms:
    """What countersign asked for, for one order (the parent or one protective child)."""

    client_id: str
    role: Role
    parent_client_id: str | None
    order: VenueOrder  # the parent's terms as confirmed
    side: Side
    order_type: OrderType
    time_in_force: TimeInForce
    reduce_only: bool
    limit_price: Decimal | None
    trigger_price: Decimal | None


def terms_of(order: VenueOrder) -> list[Terms]:
    """The parent's terms, then each protective child's (reduce-only, opposite side)."""
    parent = Terms(
        order.client_id,
        "order",
        None,
        order,
        order.side,
        order.order_type,
        order.time_in_force,
        order.reduce_only,
        order.limit_price,
        None,
    )
    children: list[Terms] = []
    opposite: Side = "sell" if order.side == "buy" else "buy"
    for role, trigger in (
        ("stop_loss", order.protective.stop_loss if order.protective else None),
        ("take_profit", order.protective.take_profit if order.protective else None),
    ):
        if trigger is not None:
            child_role: Role = "stop_loss" if role == "stop_loss" else "take_profit"
            children.append(
                Terms(
                    order.client_id + CHILD_SUFFIX[role],
                    child_role,
                    order.client_id,
                    order,
                    opposite,
                    "market",
                    "GTC",
                    True,
                    None,
                    trigger,
                )
            )
    return [parent, *children]


def order_json(order: VenueOrder) -> dict[str, Any]:
    """The confirmed terms as evidence JSON (decimal strings), read back by `order_from_json`."""

    def opt(value: Decimal | None) -> str | None:
        return None if value is None else str(value)

    protective = None
    if order.protective is not None:
        protective = {
            "stop_loss": opt(order.protective.stop_loss),
            "take_profit": opt(order.protective.take_profit),
        }
    return {
        "client_id": order.client_id,
        "account": order.account,
        "instrument": order.instrument,
        "side": order.side,
        "quantity": str(order.quantity),
        "order_type": order.order_type,
        "time_in_force": order.time_in_force,
        "leverage": str(order.leverage),
        "limit_price": opt(order.limit_price),
        "max_slippage_bps": opt(order.max_slippage_bps),
        "reduce_only": order.reduce_only,
        "protective": protective,
    }


def order_from_json(data: Mapping[str, Any]) -> VenueOrder:
    def opt(value: str | None) -> Decimal | None:
        return None if value is None else Decimal(value)

    raw = data.get("protective")
    protective = None
    if raw is not None:
        protective = ProtectiveSpec(opt(raw.get("stop_loss")), opt(raw.get("take_profit")))
    return VenueOrder(
        client_id=data["client_id"],
        account=data["account"],
        instrument=data["instrument"],
        side=data["side"],
        quantity=Decimal(data["quantity"]),
        order_type=data["order_type"],
        time_in_force=data["time_in_force"],
        leverage=Decimal(data["leverage"]),
        limit_price=opt(data.get("limit_price")),
        max_slippage_bps=opt(data.get("max_slippage_bps")),
        reduce_only=bool(data["reduce_only"]),
        protective=protective,
    )


# -- answers ---------------------------------------------------------------------------------
def whole_error(answer: Any) -> str | None:
    """The text of a whole-payload error (`{"status":"err","response":"..."}`), else None."""
    if isinstance(answer, Mapping) and answer.get("status") == "err":
        return str(answer.get("response"))
    return None


def placed(answer: Any, count: int) -> list[Placed]:
    """The per-order statuses of an ok `order` answer, one per order sent."""
    try:
        statuses = answer["response"]["data"]["statuses"]
        assert answer["status"] == "ok" and isinstance(statuses, list)
    except (KeyError, TypeError, AssertionError):
        raise Unreadable(f"not an order answer: {answer!r:.300}") from None
    if len(statuses) != count:
        raise Unreadable(f"{len(statuses)} statuses for {count} orders: {answer!r:.300}")
    return [_placed(s) for s in statuses]


def _placed(status: Any) -> Placed:
    if status in WAITING:
        return Placed("waiting")
    if isinstance(status, Mapping):
        if isinstance(status.get("resting"), Mapping):
            return Placed("resting", oid=int(status["resting"]["oid"]))
        if isinstance(status.get("filled"), Mapping):
            filled = status["filled"]
            return Placed(
                "filled",
                oid=int(filled["oid"]),
                total_sz=_dec(filled["totalSz"]),
                avg_px=_dec(filled["avgPx"]),
            )
        if "error" in status:
            return Placed("error", text=str(status["error"]))
    raise Unreadable(f"unknown order status {status!r:.200}")


def record(answer: Any) -> Record | None:
    """An `orderStatus` answer: the order, or None for `unknownOid`."""
    if isinstance(answer, Mapping) and answer.get("status") == "unknownOid":
        return None
    try:
        assert answer["status"] == "order"
        outer = answer["order"]
        order = outer["order"]
        return Record(
            oid=int(order["oid"]),
            status=str(outer["status"]),
            is_trigger=bool(order.get("isTrigger", False)),
            orig_sz=_dec(order.get("origSz", order["sz"])),
            remaining=_dec(order["sz"]),
            created_at=at_ms(int(order["timestamp"])),
            updated_at=at_ms(int(outer.get("statusTimestamp", order["timestamp"]))),
            coin=str(order["coin"]),
            side="buy" if order["side"] == "B" else "sell",
            limit_px=_dec(order["limitPx"]) if order.get("limitPx") is not None else None,
            trigger_px=_dec(order["triggerPx"]) if order.get("isTrigger") else None,
            reduce_only=bool(order.get("reduceOnly", False)),
            tif=order.get("tif"),
        )
    except (KeyError, TypeError, ValueError, AssertionError):
        raise Unreadable(f"not an orderStatus answer: {answer!r:.300}") from None


def fills_of(raw: Iterable[Mapping[str, Any]], oid: int) -> tuple[Fill, ...]:
    """The fills of one order (joined on `oid`), oldest first."""
    fills = []
    for f in raw:
        if int(f.get("oid", -1)) != oid:
            continue
        fee = f.get("fee")
        fills.append(
            Fill(
                fill_id=int(f["tid"]),
                quantity=_dec(f["sz"]),
                price=_dec(f["px"]),
                fee=None if fee is None else _dec(fee),  # no fee evidence: unknown, never zero
                fee_currency=str(f.get("feeToken") or "USDC"),
                liquidity="taker" if f.get("crossed") else "maker",
                at=at_ms(int(f["time"])),
            )
        )
    return tuple(sorted(fills, key=lambda f: (f.at, f.fill_id)))


def status_of(
    venue_status: str, is_trigger: bool, filled: Decimal, quantity: Decimal
) -> tuple[OrderStatus, str | None]:
    """Hyperliquid's order status as ours, with the reason a person reads."""
    if venue_status == "open":
        if is_trigger:
            return "accepted", None  # a TP/SL child waiting for its trigger
        return ("partially_filled" if filled > 0 else "resting"), None
    if venue_status == "filled":
        return "filled", None
    if venue_status == "triggered":  # it became a market order: its fills tell the rest
        if filled >= quantity:
            return "filled", None
        return ("partially_filled" if filled > 0 else "resting"), None
    if venue_status == "canceled":
        return ORDER_CANCELLED, "cancelled at the venue (canceled)"
    if venue_status.endswith("Canceled") or venue_status == "scheduledCancel":
        return ORDER_CANCELLED, f"cancelled by the venue ({venue_status})"
    if venue_status == HL_REJECTED or venue_status.endswith("Rejected"):
        return ORDER_REJECTED, f"rejected by the venue ({venue_status})"
    raise Unreadable(f"unknown order status {venue_status!r}")


def state(
    terms: Terms,
    world: World,
    *,
    status: OrderStatus,
    reason: str | None,
    filled: Decimal,
    remaining: Decimal,
    fills: Sequence[Fill],
    avg_px: Decimal | None,
    created_at: datetime,
    updated_at: datetime,
    children: Sequence[VenueOrderState] = (),
) -> VenueOrderState:
    """One order's state; fees are the sum of its fills' fees, None when any is unknown or
    when it filled but its fills could not be read."""
    fees: Decimal | None = Decimal(0)
    for f in fills:
        fees = None if fees is None or f.fee is None else fees + f.fee
    if filled > 0 and not fills:
        fees = None
    if fills:
        quantity = sum((f.quantity for f in fills), Decimal(0))
        notional = sum((f.quantity * f.price for f in fills), Decimal(0))
        avg_px = plain(AVERAGE.divide(notional, quantity))
    order = terms.order
    return VenueOrderState(
        client_id=terms.client_id,
        role=terms.role,
        parent_client_id=terms.parent_client_id,
        account=order.account,
        instrument=order.instrument,
        side=terms.side,
        order_type=terms.order_type,
        time_in_force=terms.time_in_force,
        reduce_only=terms.reduce_only,
        leverage=order.leverage,
        quantity=order.quantity,
        limit_price=terms.limit_price,
        max_slippage_bps=order.max_slippage_bps if terms.role == "order" else None,
        trigger_price=terms.trigger_price,
        status=status,
        filled_qty=filled,
        remaining_qty=remaining
        if status in ("accepted", "resting", "partially_filled")
        else Decimal(0),
        avg_price=avg_px,
        fees=fees,
        fee_currency=fills[0].fee_currency if fills else "USDC",
        fills=tuple(fills),
        reason=reason,
        submit_count=1,
        created_at=created_at,
        updated_at=updated_at,
        children=tuple(children),
        world=world,
    )


def identity_mismatch(text: str) -> bool:
    """The venue did not recognise the signer: a wrong key or an agent not approved for the
    account (a bad signature reads the same), never a verdict on the order itself."""
    return text.startswith(IDENTITY_PREFIXES)


def nonce_or_expiry(text: str) -> bool:
    """A whole-payload error that another delivery of the same request could have been
    answered differently (a duplicate delivery is refused as a used nonce): not decisive."""
    return text.startswith(("Invalid nonce", "Action expired")) or "expire" in text.lower()


def at_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms // 1000, UTC) + timedelta(milliseconds=ms % 1000)


def _dec(value: Any) -> Decimal:
    try:
        result = Decimal(str(value))
    except InvalidOperation:
        raise Unreadable(f"not a decimal: {value!r:.50}") from None
    if not result.is_finite():
        raise Unreadable(f"not a finite decimal: {value!r:.50}")
    return result
