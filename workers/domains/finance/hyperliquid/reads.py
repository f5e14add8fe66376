"""Read-only views of Hyperliquid for the capability check, the observation (`observing`)
and `venue qualify`: instruments from `meta` and `allMids`, an account's positions, open
orders, fees, leverage, balances, its agent wallet's approval and its rate-limit budget.

Reads only, never an effect. Queries always name the account's (master) address: the venue
answers an agent address with empty results. A read that fails leaves the snapshot
`complete=False` (instruments and marks are required: without them there is no snapshot).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from store import World
from workers.domains.finance.hyperliquid import precision
from workers.domains.finance.hyperliquid.profile import ACCOUNT_MODE, MARGIN_MODE
from workers.domains.finance.hyperliquid.transport import Transport
from workers.domains.finance.hyperliquid.wire import (
    Asset,
    WireRefusal,
    instrument_of,
    side_of,
    universe,
)
from workers.domains.finance.venues.contract import AccountState, Balance, VenueUnavailable
from workers.domains.finance.venues.model import (
    Instrument,
    OpenOrder,
    Position,
    VenueOrder,
)
from workers.domains.finance.venues.pricing import bounded_market_price

# activeAssetData weighs 20 per coin: read every coin's leverage only in a small universe,
# else only the coins the account holds or has orders in
LEVERAGE_READS: Final = 16
BASE_MAKER: Final = Decimal("0.00015")  # Hyperliquid's base tier, used only if userFees fails
BASE_TAKER: Final = Decimal("0.00045")


@dataclass(frozen=True)
class Market:
    """The listed perps and their marks."""

    assets: dict[str, Asset]  # by instrument name
    marks: dict[str, Decimal]
    sent: float = 0.0  # when the older of its two reads was sent (the transport's clock)


async def market(transport: Transport, *, meta_age: float = 0.0, marks_age: float = 0.0) -> Market:
    """meta (precision) no older than `meta_age` s and allMids no older than `marks_age`,
    each shared with identical reads (economy.py states the ages each use takes)."""
    meta_read, mids_read = await asyncio.gather(
        transport.read({"type": "meta"}, max_age=meta_age),
        transport.read({"type": "allMids"}, max_age=marks_age),
    )
    meta, mids = meta_read.answer, mids_read.answer
    if not isinstance(meta, Mapping) or not isinstance(mids, Mapping):
        raise VenueUnavailable("meta or allMids did not answer as documented")
    assets = universe(meta)
    marks = {name: Decimal(str(mids[a.coin])) for name, a in assets.items() if a.coin in mids}
    sent = min(meta_read.sent, mids_read.sent)
    return Market({n: a for n, a in assets.items() if n in marks}, marks, sent)


def instrument(
    asset: Asset, name: str, mark: Decimal, maker: Decimal, taker: Decimal
) -> Instrument:
    lot = precision.lot(asset.sz_decimals)
    return Instrument(
        name=name,
        tick=precision.tick(asset.sz_decimals),
        lot=lot,
        min_qty=lot,
        mark=mark,
        maker_fee_rate=maker,
        taker_fee_rate=taker,
        max_leverage=asset.max_leverage,
        fee_currency="USDC",
        liquidity=None,
        sig_figs=precision.SIG_FIGS,
        min_notional=precision.MIN_NOTIONAL,
    )


def market_price(order: VenueOrder, asset: Asset, market: Market) -> Decimal:
    """A market order's IOC limit: its confirmed slippage bound around the mark read now,
    rounded into the bound (WireRefusal when no valid price lies inside it)."""
    if order.max_slippage_bps is None:
        raise WireRefusal("a market order needs max_slippage_bps (its price bound)")
    mark = market.marks[order.instrument]
    listed = instrument(asset, order.instrument, mark, BASE_MAKER, BASE_TAKER)
    price = bounded_market_price(order.side, mark, order.max_slippage_bps, listed)
    if price is None:
        raise WireRefusal(f"no valid price lies within {order.max_slippage_bps} bps of {mark}")
    return price


async def fee_rates(transport: Transport, user: str) -> tuple[Decimal, Decimal] | None:
    """(maker, taker) for this account; None when it could not be read."""
    try:
        fees = await transport.info({"type": "userFees", "user": user})
        return Decimal(str(fees["userAddRate"])), Decimal(str(fees["userCrossRate"]))
    except (VenueUnavailable, KeyError, TypeError, ArithmeticError):
        return None


async def clearinghouse(transport: Transport, user: str) -> Mapping[str, Any] | None:
    try:
        state = await transport.info({"type": "clearinghouseState", "user": user})
    except VenueUnavailable:
        return None
    return state if isinstance(state, Mapping) else None


def positions(state: Mapping[str, Any]) -> dict[str, Position]:
    held: dict[str, Position] = {}
    for entry in state.get("assetPositions") or ():
        p = entry.get("position") or {}
        name = instrument_of(str(p.get("coin", "")))
        qty = Decimal(str(p.get("szi", "0")))
        if name is not None and qty != 0:
            held[name] = Position(name, qty, Decimal(str(p.get("entryPx") or "0")))
    return held


def position_leverage(state: Mapping[str, Any]) -> dict[str, Decimal]:
    leverage: dict[str, Decimal] = {}
    for entry in state.get("assetPositions") or ():
        p = entry.get("position") or {}
        name = instrument_of(str(p.get("coin", "")))
        value = (p.get("leverage") or {}).get("value")
        if name is not None and value is not None:
            leverage[name] = Decimal(str(value))
    return leverage


async def open_orders(
    transport: Transport, user: str, client_ids: Mapping[str, str]
) -> tuple[OpenOrder, ...] | None:
    """The account's working orders (`client_ids`: cloid -> our client id, for ours)."""
    try:
        raw = await transport.info({"type": "frontendOpenOrders", "user": user})
        return tuple(open_order(o, client_ids) for o in raw if instrument_of(o["coin"]))
    except (VenueUnavailable, KeyError, TypeError, ArithmeticError):
        return None


def open_order(o: Mapping[str, Any], client_ids: Mapping[str, str]) -> OpenOrder:
    """One entry of frontendOpenOrders (`client_ids`: cloid -> our client id)."""
    cloid = o.get("cloid")
    is_trigger = bool(o.get("isTrigger"))
    kind = str(o.get("orderType", ""))
    remaining, original = Decimal(str(o["sz"])), Decimal(str(o.get("origSz", o["sz"])))
    return OpenOrder(
        client_id=client_ids.get(str(cloid), str(cloid)) if cloid else f"oid:{o['oid']}",
        instrument=str(instrument_of(o["coin"])),
        side=side_of(str(o["side"])),
        remaining_qty=remaining,
        price=Decimal(str(o["triggerPx"] if is_trigger else o["limitPx"])),
        reduce_only=bool(o.get("reduceOnly")),
        role=("stop_loss" if "Stop" in kind else "take_profit") if is_trigger else "order",
        status="accepted"
        if is_trigger
        else ("partially_filled" if remaining < original else "resting"),
    )


async def leverage(
    transport: Transport,
    user: str,
    market: Market,
    state: Mapping[str, Any] | None,
    orders: Iterable[OpenOrder],
    wanted: Collection[str] | None = None,
) -> tuple[dict[str, Decimal], bool]:
    """The account's leverage per instrument (`activeAssetData`, exactly for `wanted`), and
    whether every read succeeded. `wanted` None: every instrument in a small universe, else
    the ones the account holds or has orders in (the rest read from positions)."""
    known: dict[str, Decimal] = {}
    if wanted is None:
        known = position_leverage(state) if state is not None else {}
        small = len(market.assets) <= LEVERAGE_READS
        wanted = set(market.assets) if small else set(known) | {o.instrument for o in orders}
    complete = True
    for name in sorted(set(wanted) & set(market.assets)):
        try:
            data = await transport.info(
                {"type": "activeAssetData", "user": user, "coin": market.assets[name].coin}
            )
            known[name] = Decimal(str(data["leverage"]["value"]))
        except (VenueUnavailable, KeyError, TypeError, ArithmeticError):
            complete = False
    return known, complete


def balances(state: Mapping[str, Any]) -> tuple[Balance, ...]:
    summary = state.get("marginSummary") or state.get("crossMarginSummary") or {}
    total = Decimal(str(summary.get("accountValue", "0")))
    return (Balance("USDC", total, Decimal(str(state.get("withdrawable", "0")))),)


async def signs_for(transport: Transport, agent: str) -> str | None:
    """The account whose orders `agent`'s signatures place (`userRole`, weight 60): its
    master for an approved agent, itself for an account's own key; None: neither.
    VenueUnavailable when it cannot be read."""
    role = await transport.info({"type": "userRole", "user": agent})
    kind = role.get("role") if isinstance(role, Mapping) else None
    if kind == "agent":
        return str((role.get("data") or {}).get("user", "")) or None
    return agent if kind == "user" else None


def signs_for_refusal(agent: str, master: str | None, user: str) -> str | None:
    """Why orders signed by `agent` would not land on `user` (None: they do). No vault or
    subaccount routing: an agent's order lands on its master, so reads naming any other
    address would check one account and trade another."""
    if master is not None and master.lower() == user.lower():
        return None
    if master is None:
        return f"agent wallet {agent} is not approved for {user} (nor for any account)"
    return (
        f"agent wallet {agent} signs for {master}, not for the configured address {user}: "
        "orders would land on another account than the one read (no subaccount routing); "
        "set address to the agent's master account"
    )


async def agent_fact(transport: Transport, agent: str, user: str) -> tuple[str, str, bool]:
    """Whether the signing agent wallet is approved for the account (`userRole`)."""
    try:
        master = await signs_for(transport, agent)
    except VenueUnavailable as error:
        return ("agent wallet", f"{agent}: approval could not be read ({error})", False)
    refusal = signs_for_refusal(agent, master, user)
    if refusal is not None:
        return ("agent wallet", refusal, False)
    if agent.lower() == user.lower():
        return ("agent wallet", f"{agent} is the account's own key (not an agent wallet)", True)
    return ("agent wallet", f"{agent} is approved for {user}", True)


async def rate_fact(transport: Transport, user: str) -> tuple[str, str, bool]:
    try:
        data = await transport.info({"type": "userRateLimit", "user": user})
        used, cap = int(data["nRequestsUsed"]), int(data["nRequestsCap"])
    except (VenueUnavailable, KeyError, TypeError, ValueError) as error:
        return ("rate-limit budget", f"could not be read ({error})", False)
    left = cap - used
    return ("rate-limit budget", f"{left} of {cap} requests left", left > 0)


async def account_state(
    transport: Transport,
    venue: str,
    world: World,
    account: str,
    user: str,
    agent: str,
    client_ids: Mapping[str, str],
) -> AccountState:
    """The account as the venue reports it, for `venue qualify` (reads only)."""
    listed = await market(transport)
    state = await clearinghouse(transport, user)
    working = await open_orders(transport, user, client_ids)
    levels, _ = await leverage(transport, user, listed, state, working or ())
    facts = [await agent_fact(transport, agent, user), await rate_fact(transport, user)]
    if state is None:
        facts.append(("balances", "clearinghouseState could not be read", False))
    if working is None:
        facts.append(("open orders", "frontendOpenOrders could not be read", False))
    return AccountState(
        venue=venue,
        account=account,
        world=world,
        balances=balances(state) if state is not None else (),
        account_mode=ACCOUNT_MODE,
        margin_mode=MARGIN_MODE,
        leverage={n: levels.get(n) for n in sorted(listed.assets)},
        open_orders=len(working or ()),
        facts=tuple(facts),
    )
