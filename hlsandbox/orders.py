"""The `order` action: whole-payload checks, then one status per order, as Hyperliquid answers.

Errors that follow from the payload alone (an empty batch, an unknown asset, a TP/SL child
that is not reduce-only, a bad grouping) refuse the whole action; the rest are per-order
errors in the statuses vector, and an order rejected after validation is kept with its
`*Rejected` status so `orderStatus` by its cloid can say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hlsandbox import matching
from hlsandbox.numbers import WireError, parse_decimal, price_ok, size_ok
from hlsandbox.numbers import wire as wire_text
from hlsandbox.state import Account, Order, Trigger, Venue
from hlsandbox.universe import Asset

CLOID = re.compile(r"^0x[0-9a-f]{32}$")
GROUPINGS = ("na", "normalTpsl", "positionTpsl")
TIFS = ("Gtc", "Ioc", "Alo")
MIN_NOTIONAL = Decimal(10)


class PayloadError(Exception):
    """The whole action is refused: {"status": "err", "response": <text>}."""


@dataclass(frozen=True)
class OrderWire:
    asset: Asset
    is_buy: bool
    px: Decimal
    sz: Decimal
    reduce_only: bool
    tif: str | None
    trigger: Trigger | None
    cloid: str | None


def parse_wire(venue: Venue, raw: Any, index: int) -> OrderWire:
    if not isinstance(raw, dict):
        raise WireError(f"orders[{index}]: expected an object")
    try:
        a, b, p, s, r, t = raw["a"], raw["b"], raw["p"], raw["s"], raw["r"], raw["t"]
    except KeyError as missing:
        raise WireError(f"orders[{index}]: missing field {missing}") from None
    if not isinstance(a, int) or not isinstance(b, bool) or not isinstance(r, bool):
        raise WireError(f"orders[{index}]: a must be an integer, b and r booleans")
    asset = venue.by_index.get(a)
    if asset is None:
        raise PayloadError(f"Asset {a} does not exist.")
    cloid = raw.get("c")
    if cloid is not None and (not isinstance(cloid, str) or not CLOID.match(cloid)):
        raise WireError(f"orders[{index}].c: a cloid is 0x and 32 lower-case hex digits")
    tif: str | None = None
    trigger: Trigger | None = None
    if isinstance(t, dict) and isinstance(t.get("limit"), dict):
        tif = t["limit"].get("tif")
        if tif not in TIFS:
            raise WireError(f"orders[{index}].t.limit.tif: one of {', '.join(TIFS)}")
    elif isinstance(t, dict) and isinstance(t.get("trigger"), dict):
        spec = t["trigger"]
        if spec.get("tpsl") not in ("tp", "sl") or not isinstance(spec.get("isMarket"), bool):
            raise WireError(f"orders[{index}].t.trigger: tpsl tp|sl and isMarket a boolean")
        px = parse_decimal(spec.get("triggerPx"), f"orders[{index}].t.trigger.triggerPx")
        trigger = Trigger(px, spec["isMarket"], spec["tpsl"])
    else:
        raise WireError(f"orders[{index}].t: {{limit: {{tif}}}} or {{trigger: {{...}}}}")
    return OrderWire(
        asset,
        b,
        parse_decimal(p, f"orders[{index}].p"),
        parse_decimal(s, f"orders[{index}].s"),
        r,
        tif,
        trigger,
        cloid,
    )


def parse_action(venue: Venue, action: dict[str, Any]) -> tuple[list[OrderWire], str]:
    orders, grouping = action.get("orders"), action.get("grouping", "na")
    if not isinstance(orders, list):
        raise WireError("action.orders: expected a list")
    if grouping not in GROUPINGS:
        raise PayloadError(f"Invalid grouping {grouping!r}.")
    if not orders:
        raise PayloadError("Order batch is empty.")
    wires = [parse_wire(venue, raw, index) for index, raw in enumerate(orders)]
    if grouping == "normalTpsl":
        parent, children = wires[0], wires[1:]
        if parent.trigger is not None or any(child.trigger is None for child in children):
            raise PayloadError("normalTpsl: a limit parent, then trigger children.")
    if grouping != "na" and any(w.trigger is not None and not w.reduce_only for w in wires):
        raise PayloadError("TP/SL orders must be reduce-only.")
    return wires, grouping


def precision_problem(wire: OrderWire) -> tuple[str, str] | None:
    """(text, status) when the size or a price does not fit the asset's lot and tick."""
    sz_decimals = wire.asset.sz_decimals
    if not size_ok(wire.sz, sz_decimals):
        return "Order has invalid size.", "rejected"
    if not price_ok(wire.px, sz_decimals) or (
        wire.trigger is not None and not price_ok(wire.trigger.px, sz_decimals)
    ):
        return "Price must be divisible by tick size.", "tickRejected"
    return None


def rejection(venue: Venue, account: Account, wire: OrderWire) -> tuple[str, str] | None:
    """(text, status) when this order is refused before it reaches the book."""
    problem = precision_problem(wire)
    if problem is not None or wire.reduce_only:
        return problem
    reference = wire.trigger.px if wire.trigger is not None else wire.px
    if reference * wire.sz < MIN_NOTIONAL:
        return "Order must have minimum value of $10.", "minTradeNtlRejected"
    leverage, _cross = venue.leverage(account, wire.asset)
    if wire.px * wire.sz / leverage > venue.free_margin(account):
        return "Insufficient margin to place order.", "perpMarginRejected"
    return None


def bad_trigger(parent: OrderWire, child: OrderWire) -> bool:
    """A tp beyond the parent's price in its favour, an sl against it."""
    assert child.trigger is not None
    favourable = child.trigger.px > parent.px if parent.is_buy else child.trigger.px < parent.px
    return favourable != (child.trigger.tpsl == "tp") or child.is_buy == parent.is_buy


def new_order(venue: Venue, account: Account, wire: OrderWire) -> Order:
    now = venue.now_ms()
    return Order(
        oid=venue.new_oid(),
        user=account.address,
        asset=wire.asset,
        is_buy=wire.is_buy,
        limit_px=wire.px,
        orig_sz=wire.sz,
        reduce_only=wire.reduce_only,
        tif=wire.tif,
        trigger=wire.trigger,
        cloid=wire.cloid,
        timestamp=now,
        status_timestamp=now,
    )


def refuse(venue: Venue, order: Order, text: str, status: str) -> Any:
    """Keep a refused order with its `*Rejected` status (findable by cloid); the error."""
    venue.add_order(order)
    venue.finish(order, status)
    return {"error": text}


def place_one(
    venue: Venue, account: Account, wire: OrderWire, tx_hash: str, drop_fee: bool
) -> tuple[Any, Order | None]:
    """A limit or a stand-alone trigger order: its status and the order if it was kept open."""
    order = new_order(venue, account, wire)
    refused = rejection(venue, account, wire)
    if refused is not None:
        return refuse(venue, order, *refused), None
    mark = venue.marks[wire.asset.name]
    if wire.reduce_only and wire.trigger is None and matching.reducible(venue, order) == 0:
        return refuse(venue, order, *REDUCE_ONLY), None
    if wire.trigger is not None:  # armed at once; the venue answers the bare tag, no oid
        venue.add_order(order)
        return "waitingForTrigger", order
    would_cross = matching.crosses(order, mark)
    if wire.tif == "Alo" and would_cross:
        text = f"Post only order would have immediately matched, bbo was {mark}@{mark}."
        return refuse(venue, order, text, "badAloPxRejected"), None
    if wire.tif == "Ioc" and not would_cross:
        return refuse(venue, order, IOC_NO_MATCH, "iocCancelRejected"), None
    venue.add_order(order)
    budget: matching.Budget = {wire.asset.name: venue.liquidity.get(wire.asset.name)}
    filled = matching.take(venue, order, budget, tx_hash, drop_fee)
    if wire.tif == "Ioc" and filled == 0:  # crossing, but no liquidity left
        venue.finish(order, "iocCancelRejected")
        return {"error": IOC_NO_MATCH}, None
    if order.remaining > 0 and wire.tif == "Ioc":
        venue.finish(order, "canceled")
    if filled > 0 and (order.remaining == 0 or wire.tif == "Ioc"):
        # every taker fill of one placement is at the mark
        return {
            "filled": {"totalSz": wire_text(filled), "avgPx": wire_text(mark), **echo(order)}
        }, order
    return {"resting": echo(order)}, order


REDUCE_ONLY = ("Reduce only order would increase position.", "reduceOnlyRejected")
IOC_NO_MATCH = "Order could not immediately match against any resting orders."


def echo(order: Order) -> dict[str, Any]:
    body: dict[str, Any] = {"oid": order.oid}
    if order.cloid is not None:
        body["cloid"] = order.cloid
    return body


def place(
    venue: Venue, account: Account, action: dict[str, Any], tx_hash: str, drop_fee: bool
) -> list[Any]:
    """Commit an `order` action (already signed, nonce-checked): the statuses vector."""
    wires, grouping = parse_action(venue, action)
    statuses: list[Any] = []
    seen: set[str] = set()
    parent: Order | None = None
    for index, wire in enumerate(wires):
        if wire.cloid is not None and (
            wire.cloid in seen or venue.order_by_cloid(account.address, wire.cloid) is not None
        ):
            statuses.append({"error": f"Order with cloid {wire.cloid} already exists."})
            continue
        if wire.cloid is not None:
            seen.add(wire.cloid)
        if grouping != "normalTpsl" or index == 0:
            status, order = place_one(venue, account, wire, tx_hash, drop_fee)
            if grouping == "positionTpsl" and order is not None:
                order.position_tpsl = True
            statuses.append(status)
            parent = order
            continue
        statuses.append(place_child(venue, account, wires[0], wire, parent))
    return statuses


def place_child(
    venue: Venue, account: Account, parent_wire: OrderWire, wire: OrderWire, parent: Order | None
) -> Any:
    if parent is None:
        return {"error": "Parent order was rejected."}
    child = new_order(venue, account, wire)
    problem = precision_problem(wire)
    if problem is not None:
        return refuse(venue, child, *problem)
    if bad_trigger(parent_wire, wire):
        return refuse(venue, child, "Invalid TP/SL price.", "badTriggerPxRejected")
    child.parent = parent.oid
    parent.children.append(child.oid)
    venue.add_order(child)
    if parent.status == "filled":
        return "waitingForTrigger"
    if not parent.is_open:  # an Ioc parent that did not fill: nothing to protect
        venue.finish(child, "canceled")
        return {"error": "Parent order was canceled."}
    child.waiting_parent = True
    return "waitingForFill"
