"""`POST /info`: the queries the SDK and the adapter make, answered from the venue's state.

Queries name the master account; an agent address has no orders, fills or positions of its
own, so it answers empty, as on Hyperliquid.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from hlsandbox import views
from hlsandbox.numbers import WireError, wire
from hlsandbox.state import Venue

ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
CLOID = re.compile(r"^0x[0-9a-fA-F]{32}$")
MAX_FILLS = 2000
# weights per the rate-limits page: 2 for these, 20 for the rest (+1 per 20 items listed)
LIGHT = {
    "l2Book",
    "allMids",
    "clearinghouseState",
    "orderStatus",
    "spotClearinghouseState",
    "exchangeStatus",
}
PER_ITEM = {"userFills", "userFillsByTime", "historicalOrders"}
USDC_TOKEN = {
    "name": "USDC",
    "szDecimals": 8,
    "weiDecimals": 8,
    "index": 0,
    "tokenId": "0x6d1e7cde53ba9467b783cb7c530ce054",
    "isCanonical": True,
    "evmContract": None,
    "fullName": None,
}


def weight(kind: str, answer: Any) -> int:
    base = 2 if kind in LIGHT else 60 if kind == "userRole" else 20
    if kind in PER_ITEM and isinstance(answer, list):
        base += len(answer) // 20
    return base


def user_of(body: dict[str, Any]) -> str:
    user = body.get("user")
    if not isinstance(user, str) or not ADDRESS.match(user):
        raise WireError("user: an address, 0x and 40 hex digits")
    return user.lower()


def meta(venue: Venue, _body: dict[str, Any]) -> Any:
    return {
        "universe": [
            {"name": a.name, "szDecimals": a.sz_decimals, "maxLeverage": a.max_leverage}
            for a in sorted(venue.assets.values(), key=lambda a: a.index)
        ]
    }


def spot_meta(_venue: Venue, _body: dict[str, Any]) -> Any:
    return {"universe": [], "tokens": [USDC_TOKEN]}


def all_mids(venue: Venue, _body: dict[str, Any]) -> Any:
    return {coin: wire(px) for coin, px in venue.marks.items()}


def meta_and_asset_ctxs(venue: Venue, body: dict[str, Any]) -> Any:
    contexts = []
    for asset in sorted(venue.assets.values(), key=lambda a: a.index):
        mark = wire(venue.marks[asset.name])
        contexts.append(
            {
                "funding": "0.0",
                "openInterest": "0.0",
                "prevDayPx": mark,
                "dayNtlVlm": "0.0",
                "premium": "0.0",
                "oraclePx": mark,
                "markPx": mark,
                "midPx": mark,
                "impactPxs": [mark, mark],
                "dayBaseVlm": "0.0",
            }
        )
    return [meta(venue, body), contexts]


def order_status(venue: Venue, body: dict[str, Any]) -> Any:
    user, oid = user_of(body), body.get("oid")
    if isinstance(oid, str) and CLOID.match(oid):
        order = venue.order_by_cloid(user, oid)
    elif isinstance(oid, int) and not isinstance(oid, bool):
        order = venue.orders.get(oid)
    else:
        raise WireError("oid: an order id (integer) or a cloid (0x and 32 hex digits)")
    if order is None or order.user != user:
        return {"status": "unknownOid"}
    return {"status": "order", "order": views.order_status(venue, order)}


def open_orders(venue: Venue, body: dict[str, Any]) -> Any:
    found = [o for o in venue.user_orders(user_of(body)) if o.is_open]
    return [views.basic_order(o) for o in sorted(found, key=lambda o: -o.oid)]


def frontend_open_orders(venue: Venue, body: dict[str, Any]) -> Any:
    found = [o for o in venue.user_orders(user_of(body)) if o.is_open]
    return [views.frontend_order(venue, o) for o in sorted(found, key=lambda o: -o.oid)]


def historical_orders(venue: Venue, body: dict[str, Any]) -> Any:
    found = sorted(venue.user_orders(user_of(body)), key=lambda o: -o.oid)[:MAX_FILLS]
    return [views.order_status(venue, o) for o in found]


def user_fills(venue: Venue, body: dict[str, Any]) -> Any:
    return list(reversed(venue.fills.get(user_of(body), [])))[:MAX_FILLS]


def user_fills_by_time(venue: Venue, body: dict[str, Any]) -> Any:
    start, end = body.get("startTime"), body.get("endTime")
    if not isinstance(start, int) or (end is not None and not isinstance(end, int)):
        raise WireError("startTime: milliseconds; endTime: milliseconds or null")
    fills = [
        f
        for f in venue.fills.get(user_of(body), [])
        if f["time"] >= start and (end is None or f["time"] <= end)
    ]
    return fills[:MAX_FILLS]


def clearinghouse_state(venue: Venue, body: dict[str, Any]) -> Any:
    return views.clearinghouse(venue, venue.accounts.get(user_of(body)))


def spot_clearinghouse_state(venue: Venue, body: dict[str, Any]) -> Any:
    user_of(body)
    return {"balances": []}


def user_rate_limit(venue: Venue, body: dict[str, Any]) -> Any:
    account = venue.accounts.get(user_of(body))
    volume = account.volume if account else Decimal(0)
    return {
        "cumVlm": wire(volume),
        "nRequestsUsed": account.actions_used if account else 0,
        "nRequestsCap": venue.limits.address_actions + int(volume),
        "nRequestsSurplus": 0,
    }


def user_fees(venue: Venue, body: dict[str, Any]) -> Any:
    user_of(body)
    taker, maker = wire(venue.taker_rate), wire(venue.maker_rate)
    return {
        "dailyUserVlm": [],
        "feeSchedule": {
            "cross": taker,
            "add": maker,
            "spotCross": "0.0007",
            "spotAdd": "0.0004",
            "referralDiscount": "0.04",
            "tiers": {"vip": [], "mm": []},
        },
        "userCrossRate": taker,
        "userAddRate": maker,
        "userSpotCrossRate": "0.0007",
        "userSpotAddRate": "0.0004",
        "activeReferralDiscount": "0.0",
        "trial": None,
        "feeTrialReward": "0.0",
        "nextTrialAvailableTimestamp": None,
    }


def active_asset_data(venue: Venue, body: dict[str, Any]) -> Any:
    user, coin = user_of(body), body.get("coin")
    if not isinstance(coin, str) or coin not in venue.assets:
        raise WireError("coin: a listed perp, e.g. BTC")
    asset, mark = venue.assets[coin], venue.marks[coin]
    account = venue.accounts.get(user)
    leverage, cross = (
        venue.leverage(account, asset) if account else (min(20, asset.max_leverage), True)
    )
    free = venue.free_margin(account) if account else 0
    size = wire(views.round_sz(free * leverage / mark, asset.sz_decimals))
    return {
        "user": user,
        "coin": coin,
        "leverage": {"type": "cross" if cross else "isolated", "value": leverage},
        "maxTradeSzs": [size, size],
        "availableToTrade": [size, size],
        "markPx": wire(mark),
    }


def user_role(venue: Venue, body: dict[str, Any]) -> Any:
    user = user_of(body)
    if user in venue.agents:
        return {"role": "agent", "data": {"user": venue.agents[user]}}
    return {"role": "user"} if user in venue.accounts else {"role": "missing"}


def extra_agents(venue: Venue, body: dict[str, Any]) -> Any:
    user = user_of(body)
    return [
        {"address": agent, "name": venue.agent_names.get(agent, ""), "validUntil": until}
        for agent, (owner, until) in sorted(venue.agent_terms().items())
        if owner == user
    ]


QUERIES: dict[str, Callable[[Venue, dict[str, Any]], Any]] = {
    "meta": meta,
    "spotMeta": spot_meta,
    "allMids": all_mids,
    "metaAndAssetCtxs": meta_and_asset_ctxs,
    "orderStatus": order_status,
    "openOrders": open_orders,
    "frontendOpenOrders": frontend_open_orders,
    "historicalOrders": historical_orders,
    "userFills": user_fills,
    "userFillsByTime": user_fills_by_time,
    "clearinghouseState": clearinghouse_state,
    "spotClearinghouseState": spot_clearinghouse_state,
    "userRateLimit": user_rate_limit,
    "userFees": user_fees,
    "activeAssetData": active_asset_data,
    "userRole": user_role,
    "extraAgents": extra_agents,
}


def answer(venue: Venue, body: Any) -> Any:
    """The answer to one /info body; WireError for a body Hyperliquid would not deserialize."""
    if not isinstance(body, dict) or body.get("type") not in QUERIES:
        raise WireError("type: an /info query type the sandbox answers")
    return QUERIES[body["type"]](venue, body)
