"""One account's observation, for the filing pre-check and preflight, built from shared reads.

Each read is shared with identical ones within its stated age (economy.py): precision
(`meta`) and fees no older than `precision_age` (preflight: half the observation's max age;
the capability check takes a minute), the account's positions, open orders and leverage and
the marks within `ACCOUNT_WINDOW_S`. So a burst of preflights for one account costs a few
reads, not one set per order. The observation's `observed_at` is when the OLDEST read it is
built from was sent: it never claims to be fresher than it is.

The reads are sent together (one round trip, not six in a row). `meta` and `allMids` are
required (no snapshot without them); any other read that fails leaves `complete=False`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from store import World
from workers.domains.finance.hyperliquid import reads
from workers.domains.finance.hyperliquid.economy import ACCOUNT_WINDOW_S, info_weight
from workers.domains.finance.hyperliquid.profile import ACCOUNT_MODE
from workers.domains.finance.hyperliquid.sharing import Read
from workers.domains.finance.hyperliquid.transport import Transport
from workers.domains.finance.hyperliquid.wire import coin_of, instrument_of
from workers.domains.finance.venues.contract import VenueUnavailable
from workers.domains.finance.venues.model import Observation, OpenOrder

UNREADABLE = (VenueUnavailable, KeyError, TypeError, ValueError, ArithmeticError)


async def _account_read(transport: Transport, body: dict[str, Any]) -> Read | None:
    try:
        return await transport.read(body, max_age=ACCOUNT_WINDOW_S)
    except VenueUnavailable:
        return None


def _fees(read: Read | None) -> tuple[Decimal, Decimal] | None:
    if read is None:
        return None
    try:
        fees = read.answer
        return Decimal(str(fees["userAddRate"])), Decimal(str(fees["userCrossRate"]))
    except UNREADABLE:
        return None


def _open_orders(read: Read | None, client_ids: Mapping[str, str]) -> tuple[OpenOrder, ...] | None:
    if read is None:
        return None
    try:
        return tuple(
            reads.open_order(o, client_ids) for o in read.answer if instrument_of(o["coin"])
        )
    except UNREADABLE:
        return None


def _leverage(read: Read | None) -> Decimal | None:
    try:
        return None if read is None else Decimal(str(read.answer["leverage"]["value"]))
    except UNREADABLE:
        return None


def _leverage_wanted(
    market: reads.Market,
    state: Mapping[str, Any] | None,
    orders: Collection[OpenOrder],
    wanted: Collection[str] | None,
) -> set[str]:
    """The instruments whose leverage is read: `wanted`; None: every one in a small universe,
    else those the account holds or has orders in."""
    if wanted is not None:
        return set(wanted) & set(market.assets)
    if len(market.assets) <= reads.LEVERAGE_READS:
        return set(market.assets)
    held = reads.position_leverage(state) if state is not None else {}
    return (set(held) | {o.instrument for o in orders}) & set(market.assets)


async def observation(
    transport: Transport,
    venue: str,
    world: World,
    account: str,
    user: str,
    client_ids: Mapping[str, str],
    clock: Callable[[], datetime],
    wanted: Collection[str] | None,
    precision_age: float,
) -> Observation:
    """A snapshot of one account, no part older than its stated age (see the module)."""

    def leverage_read(name: str) -> Any:
        coin = coin_of(name)
        body = {"type": "activeAssetData", "user": user, "coin": coin}
        return _account_read(transport, body)

    named = sorted({n for n in wanted if coin_of(n) is not None}) if wanted is not None else []
    await _room_for(transport, user, named, precision_age)
    listed, fees_read, state_read, orders_read = await asyncio.gather(
        reads.market(transport, meta_age=precision_age, marks_age=ACCOUNT_WINDOW_S),
        _fee_read(transport, user, precision_age),
        _account_read(transport, {"type": "clearinghouseState", "user": user}),
        _account_read(transport, {"type": "frontendOpenOrders", "user": user}),
    )
    rates = _fees(fees_read)
    maker, taker = rates or (reads.BASE_MAKER, reads.BASE_TAKER)
    state = state_read.answer if state_read is not None else None
    state = state if isinstance(state, Mapping) else None
    working = _open_orders(orders_read, client_ids)
    # a coin the account holds carries its leverage in clearinghouseState (weight 2, read
    # anyway): activeAssetData (20 per coin) only for the others
    held = reads.position_leverage(state) if state is not None else {}
    need = _leverage_wanted(listed, state, working or (), wanted)
    levels = {n: held[n] for n in need if n in held}
    missing = sorted(need - set(levels))
    by_name = dict(zip(missing, await asyncio.gather(*map(leverage_read, missing)), strict=True))
    for name, read in by_name.items():
        value = _leverage(read)
        if value is not None:
            levels[name] = value
    levels_complete = all(n in levels for n in need)
    if wanted is None:
        levels = {**held, **levels}
    used = [r for r in (fees_read, state_read, orders_read, *by_name.values()) if r is not None]
    oldest = min([listed.sent, *(r.sent for r in used)])
    age = max(0.0, transport.reads.clock() - oldest)
    return Observation(
        venue=venue,
        account=account,
        observed_at=clock() - timedelta(seconds=age),
        account_mode=ACCOUNT_MODE,
        instruments={
            n: reads.instrument(a, n, listed.marks[n], maker, taker)
            for n, a in listed.assets.items()
        },
        positions=reads.positions(state) if state is not None else {},
        open_orders=working or (),
        complete=rates is not None
        and state is not None
        and working is not None
        and levels_complete,
        world=world,
        leverage=levels,
    )


async def _room_for(
    transport: Transport, user: str, named: Collection[str], precision_age: float
) -> None:
    """Wait until the reads this observation will send fit the weight budget together."""
    planned: list[tuple[dict[str, Any], float]] = [
        ({"type": "meta"}, precision_age),
        ({"type": "userFees", "user": user}, precision_age),
        ({"type": "allMids"}, ACCOUNT_WINDOW_S),
        ({"type": "clearinghouseState", "user": user}, ACCOUNT_WINDOW_S),
        ({"type": "frontendOpenOrders", "user": user}, ACCOUNT_WINDOW_S),
    ]
    planned += [
        ({"type": "activeAssetData", "user": user, "coin": coin_of(n)}, ACCOUNT_WINDOW_S)
        for n in named
    ]
    weight = sum(info_weight(b) for b, age in planned if transport.reads.would_send(b, age))
    if weight:
        await transport.budget.room("observation", weight)


async def _fee_read(transport: Transport, user: str, max_age: float) -> Read | None:
    try:
        return await transport.read({"type": "userFees", "user": user}, max_age=max_age)
    except VenueUnavailable:
        return None
