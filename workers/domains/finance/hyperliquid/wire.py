"""Our `VenueOrder` as Hyperliquid order wires and one `order` action, built with the SDK's
own helpers (`order_request_to_order_wire`, `order_wires_to_order_action`).

The SDK's helpers take floats; a Decimal crosses to a float only here, and only when
`float_to_wire(float(d))` writes exactly `d` back: otherwise the order is refused, never
sent with a silently different price or size. Instruments: "BTC-PERP" is the perp coin
"BTC"; a coin whose name contains ":" (a builder-deployed HIP-3 market) drops cloids on the
venue, so it is never listed. A client id's cloid is the first 16 bytes of its SHA-256.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Literal

from hyperliquid.utils.signing import (  # type: ignore[import-untyped]
    float_to_wire,
    order_request_to_order_wire,
    order_wires_to_order_action,
)
from hyperliquid.utils.types import Cloid  # type: ignore[import-untyped]

from workers.domains.finance.hyperliquid import precision
from workers.domains.finance.venues.model import VenueOrder

PERP_SUFFIX: Final = "-PERP"
TIF: Final = {"GTC": "Gtc", "IOC": "Ioc", "POST_ONLY": "Alo"}  # FOK: Hyperliquid has none
SL_SUFFIX: Final = ":sl"
TP_SUFFIX: Final = ":tp"


class WireRefusal(ValueError):
    """The order cannot be written for Hyperliquid exactly as confirmed (the text says why
    and what to do); nothing was signed or sent."""


def cloid_of(client_id: str) -> str:
    """The venue's client order id for our client id: stable, so any replica derives it."""
    return "0x" + hashlib.sha256(client_id.encode()).hexdigest()[:32]


def coin_of(instrument: str) -> str | None:
    """ "BTC-PERP" -> "BTC"; None for a name this adapter does not trade."""
    if not instrument.endswith(PERP_SUFFIX):
        return None
    coin = instrument[: -len(PERP_SUFFIX)]
    return coin if coin and ":" not in coin else None


def instrument_of(coin: str) -> str | None:
    """ "BTC" -> "BTC-PERP"; None for a HIP-3 coin ("dex:COIN"), which is never listed."""
    return None if ":" in coin or not coin else f"{coin}{PERP_SUFFIX}"


@dataclass(frozen=True)
class Asset:
    """One perp from `meta.universe`: its asset id is its index there."""

    coin: str
    asset: int
    sz_decimals: int
    max_leverage: Decimal


def universe(meta: Mapping[str, Any]) -> dict[str, Asset]:
    """The listable perps of a `meta` answer, by our instrument name (delisted and HIP-3 out)."""
    assets: dict[str, Asset] = {}
    for index, entry in enumerate(meta.get("universe") or ()):
        name = instrument_of(str(entry.get("name", "")))
        if name is None or entry.get("isDelisted"):
            continue
        assets[name] = Asset(
            coin=str(entry["name"]),
            asset=index,
            sz_decimals=int(entry["szDecimals"]),
            max_leverage=Decimal(str(entry.get("maxLeverage", 1))),
        )
    return assets


def exact_float(name: str, value: Decimal) -> float:
    """`value` as the float the SDK's helpers take, only if they write `value` back exactly."""
    as_float = float(value)
    try:
        written = float_to_wire(as_float)
    except ValueError as error:
        raise WireRefusal(
            f"{name} {value} cannot be sent exactly (the SDK would round it: {error}); "
            "propose a new order with fewer decimals"
        ) from None
    if Decimal(written) != value:
        raise WireRefusal(
            f"{name} {value} would be sent as {written}; never a different value: "
            "propose a new order with fewer decimals"
        )
    return as_float


@dataclass(frozen=True)
class OrderAction:
    """The unsigned action and the cloid of every order in it, parent first."""

    action: dict[str, Any]
    cloids: dict[str, str]  # client id -> cloid
    limit_price: Decimal  # the parent's wire price (a market order's IOC limit)


def order_action(order: VenueOrder, asset: Asset, market_price: Decimal | None) -> OrderAction:
    """The `order` action for `order`: grouping "na", or "normalTpsl" with its reduce-only,
    opposite-side trigger-market children. `market_price` is a market order's IOC limit at
    the confirmed slippage bound (`precision.bounded_market_price`)."""
    if order.order_type == "market":
        if market_price is None:
            raise WireRefusal("a market order needs its price at the slippage bound")
        price, tif = market_price, "Ioc"  # Hyperliquid's market order is an aggressive IOC
    else:
        if order.limit_price is None:
            raise WireRefusal("limit_price is required for a limit order")
        if order.time_in_force not in TIF:
            raise WireRefusal(
                f"time_in_force {order.time_in_force} is not offered by Hyperliquid "
                f"(it has {', '.join(sorted(TIF))}); propose the order with one of those"
            )
        price, tif = order.limit_price, TIF[order.time_in_force]
    _check("limit_price", price, order.quantity, asset)
    is_buy = order.side == "buy"
    wires = [
        _wire(
            asset,
            is_buy,
            order.quantity,
            price,
            {"limit": {"tif": tif}},
            order.reduce_only,
            order.client_id,
        )
    ]
    cloids = {order.client_id: cloid_of(order.client_id)}
    protective = order.protective
    if protective is not None:
        for suffix, tpsl, trigger in (
            (SL_SUFFIX, "sl", protective.stop_loss),
            (TP_SUFFIX, "tp", protective.take_profit),
        ):
            if trigger is None:
                continue
            child_id = order.client_id + suffix
            field = "protective.stop_loss" if tpsl == "sl" else "protective.take_profit"
            refusal = precision.price_refusal(field, trigger, asset.sz_decimals)
            if refusal is not None:
                raise WireRefusal(refusal)
            order_type = {
                "trigger": {
                    "triggerPx": exact_float(field, trigger),
                    "isMarket": True,
                    "tpsl": tpsl,
                }
            }
            # as the SDK's own TP/SL example: the child's limit is its trigger price
            wires.append(
                _wire(asset, not is_buy, order.quantity, trigger, order_type, True, child_id)
            )
            cloids[child_id] = cloid_of(child_id)
    grouping = "normalTpsl" if len(wires) > 1 else "na"
    action: dict[str, Any] = order_wires_to_order_action(wires, None, grouping)
    return OrderAction(action=action, cloids=cloids, limit_price=price)


def _check(name: str, price: Decimal, size: Decimal, asset: Asset) -> None:
    for refusal in (
        precision.size_refusal("quantity", size, asset.sz_decimals),
        precision.price_refusal(name, price, asset.sz_decimals),
    ):
        if refusal is not None:
            raise WireRefusal(refusal)


def _wire(
    asset: Asset,
    is_buy: bool,
    size: Decimal,
    price: Decimal,
    order_type: Mapping[str, Any],
    reduce_only: bool,
    client_id: str,
) -> dict[str, Any]:
    request = {
        "coin": asset.coin,
        "is_buy": is_buy,
        "sz": exact_float("quantity", size),
        "limit_px": exact_float("limit_price", price),
        "order_type": dict(order_type),
        "reduce_only": reduce_only,
        "cloid": Cloid.from_str(cloid_of(client_id)),
    }
    wire: dict[str, Any] = order_request_to_order_wire(request, asset.asset)
    return wire


def noop_action() -> dict[str, Any]:
    return {"type": "noop"}


def cancel_by_cloid_action(asset: Asset, cloids: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "cancelByCloid",
        "cancels": [{"asset": asset.asset, "cloid": c} for c in cloids],
    }


Side = Literal["buy", "sell"]


def side_of(venue_side: str) -> Side:
    """Hyperliquid's "B" (bid) is a buy, "A" (ask) a sell."""
    return "buy" if venue_side == "B" else "sell"
