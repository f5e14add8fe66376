"""The JSON the venue shows for orders and accounts (shapes of the recorded cassettes)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hlsandbox.numbers import usdc, wire
from hlsandbox.state import Account, Order, Venue

ZERO = Decimal(0)


def order_type(order: Order) -> str:
    if order.trigger is None:
        return "Limit"
    kind = "Take Profit" if order.trigger.tpsl == "tp" else "Stop"
    return f"{kind} {'Market' if order.trigger.is_market else 'Limit'}"


def trigger_condition(order: Order) -> str:
    if order.trigger is None:
        return "N/A"
    above = (order.trigger.tpsl == "tp") != order.is_buy
    return f"Price {'above' if above else 'below'} {wire(order.trigger.px)}"


def basic_order(order: Order) -> dict[str, Any]:
    """An `openOrders` row."""
    return {
        "coin": order.asset.name,
        "limitPx": wire(order.limit_px),
        "oid": order.oid,
        "side": "B" if order.is_buy else "A",
        "sz": wire(order.remaining),
        "timestamp": order.timestamp,
        "origSz": wire(order.orig_sz),
        "cloid": order.cloid,
    }


def frontend_order(venue: Venue, order: Order) -> dict[str, Any]:
    """A `frontendOpenOrders` row, and the `order` of `orderStatus` / `historicalOrders`."""
    return {
        "coin": order.asset.name,
        "side": "B" if order.is_buy else "A",
        "limitPx": wire(order.limit_px),
        "sz": wire(order.remaining),
        "oid": order.oid,
        "timestamp": order.timestamp,
        "triggerCondition": trigger_condition(order),
        "isTrigger": order.trigger is not None,
        "triggerPx": wire(order.trigger.px if order.trigger is not None else ZERO),
        "children": [frontend_order(venue, venue.orders[oid]) for oid in order.children],
        "isPositionTpsl": order.position_tpsl,
        "reduceOnly": order.reduce_only,
        "orderType": order_type(order),
        "origSz": wire(order.orig_sz),
        "tif": order.tif,
        "cloid": order.cloid,
    }


def order_status(venue: Venue, order: Order) -> dict[str, Any]:
    return {
        "order": frontend_order(venue, order),
        "status": order.status,
        "statusTimestamp": order.status_timestamp,
    }


def clearinghouse(venue: Venue, account: Account | None) -> dict[str, Any]:
    positions: list[dict[str, Any]] = []
    margin_used = ntl = ZERO
    cash = ZERO if account is None else account.usdc
    unrealized = ZERO
    for coin, position in sorted((account.positions if account else {}).items()):
        asset, mark = venue.assets[coin], venue.marks[coin]
        assert account is not None
        leverage, cross = venue.leverage(account, asset)
        value = abs(position.szi) * mark
        pnl = position.szi * (mark - position.entry_px)
        used = value / leverage
        margin_used, ntl, unrealized = margin_used + used, ntl + value, unrealized + pnl
        lev: dict[str, Any] = {"type": "cross" if cross else "isolated", "value": leverage}
        free = venue.free_margin(account) * leverage / mark
        positions.append(
            {
                "position": {
                    "coin": coin,
                    "entryPx": wire(usdc(position.entry_px)),  # an average: shown to 6 decimals
                    "leverage": lev,
                    "liquidationPx": None,
                    "marginUsed": wire(usdc(used)),
                    "maxTradeSzs": [wire(round_sz(free, asset.sz_decimals))] * 2,
                    "positionValue": wire(usdc(value)),
                    "returnOnEquity": wire(
                        (pnl / (abs(position.szi) * position.entry_px / leverage)).quantize(
                            Decimal("0.00000001")
                        )
                    ),
                    "szi": wire(position.szi),
                    "unrealizedPnl": wire(usdc(pnl)),
                    "maxLeverage": asset.max_leverage,
                    "cumFunding": {"allTime": "0.0", "sinceChange": "0.0", "sinceOpen": "0.0"},
                },
                "type": "oneWay",
            }
        )
    value = cash + unrealized
    signed_ntl = sum(
        (p.szi * venue.marks[c] for c, p in (account.positions if account else {}).items()), ZERO
    )
    summary = {
        "accountValue": wire(usdc(value)),
        "totalMarginUsed": wire(usdc(margin_used)),
        "totalNtlPos": wire(usdc(ntl)),
        "totalRawUsd": wire(usdc(value - signed_ntl)),
    }
    held = ZERO if account is None else venue.order_margin(account)
    return {
        "assetPositions": positions,
        "crossMaintenanceMarginUsed": wire(usdc(margin_used / 2)),
        "crossMarginSummary": summary,
        "marginSummary": dict(summary),
        "time": venue.now_ms(),
        "withdrawable": wire(usdc(max(ZERO, value - margin_used - held))),
    }


def round_sz(size: Decimal, sz_decimals: int) -> Decimal:
    return max(ZERO, size).quantize(Decimal(1).scaleb(-sz_decimals), rounding="ROUND_DOWN")
