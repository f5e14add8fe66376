"""normalTpsl grouping through the SDK: children wait for the parent, then for the mark."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hyperliquid.utils.types import Cloid  # type: ignore[import-untyped]

from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import HlWallets, exchange_for, info_for, sdk

PARENT, STOP, TAKE = (Cloid.from_int(n) for n in (1, 2, 3))


def bracket(parent_px: float, stop_px: float, take_px: float) -> list[dict[str, Any]]:
    def child(px: float, tpsl: str, cloid: Cloid) -> dict[str, Any]:
        return {"coin": "BTC", "is_buy": False, "sz": 0.01, "limit_px": px, "reduce_only": True,
                "order_type": {"trigger": {"triggerPx": px, "isMarket": True, "tpsl": tpsl}},
                "cloid": cloid}  # fmt: skip

    parent = {"coin": "BTC", "is_buy": True, "sz": 0.01, "limit_px": parent_px,
              "order_type": {"limit": {"tif": "Gtc"}}, "reduce_only": False, "cloid": PARENT}  # fmt: skip
    return [parent, child(stop_px, "sl", STOP), child(take_px, "tp", TAKE)]


async def status_of(info: Any, user: str, cloid: Cloid) -> str:
    answer = await sdk(info.query_order_by_cloid, user, cloid)
    return str(answer["order"]["status"])


async def test_take_profit_fires_on_the_mark_and_cancels_the_stop(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    user = hl_wallets.address

    placed = await sdk(exchange.bulk_orders, bracket(59000, 58000, 62000), grouping="normalTpsl")

    resting, *children = placed["response"]["data"]["statuses"]
    assert "resting" in resting and children == ["waitingForFill", "waitingForFill"]
    frontend = await sdk(info.frontend_open_orders, user)
    parent_row = next(row for row in frontend if row["cloid"] == PARENT.to_raw())
    assert {c["orderType"] for c in parent_row["children"]} == {"Stop Market", "Take Profit Market"}
    # the stop's trigger is below 59000, so the parent filling there does not fire it
    await hl_sandbox.set_mark("BTC", "59000")
    assert await status_of(info, user, PARENT) == "filled"
    assert await status_of(info, user, STOP) == "open"

    await hl_sandbox.set_mark("BTC", "62000")

    assert await status_of(info, user, TAKE) == "filled"
    assert await status_of(info, user, STOP) == "siblingFilledCanceled"
    close, _open = await sdk(info.user_fills, user)
    assert (close["dir"], Decimal(close["closedPnl"]), close["crossed"]) == (
        "Close Long", Decimal(30), True,
    )  # fmt: skip
    assert (await sdk(info.user_state, user))["assetPositions"] == []


async def test_a_parent_filled_at_once_arms_its_children(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    user = hl_wallets.address

    placed = await sdk(exchange.bulk_orders, bracket(60500, 59000, 63000), grouping="normalTpsl")

    filled, *children = placed["response"]["data"]["statuses"]
    assert "filled" in filled and children == ["waitingForTrigger", "waitingForTrigger"]
    await hl_sandbox.set_mark("BTC", "58900")
    assert await status_of(info, user, STOP) == "filled"
    assert await status_of(info, user, TAKE) == "siblingFilledCanceled"


async def test_a_take_profit_below_a_long_entry_is_an_invalid_tpsl_price(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    placed = await sdk(exchange.bulk_orders, bracket(59000, 58000, 57000), grouping="normalTpsl")
    assert placed["response"]["data"]["statuses"][2] == {"error": "Invalid TP/SL price."}


async def test_a_stand_alone_stop_is_armed_at_once(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    user = hl_wallets.address
    await sdk(exchange.order, "BTC", True, 0.01, 60000, {"limit": {"tif": "Ioc"}})
    stop = {"trigger": {"triggerPx": 58000, "isMarket": True, "tpsl": "sl"}}

    placed = await sdk(exchange.order, "BTC", False, 0.01, 58000, stop, True, STOP)

    assert placed["response"]["data"]["statuses"] == ["waitingForTrigger"]
    found = await sdk(info.query_order_by_cloid, user, STOP)
    assert found["order"]["status"] == "open" and found["order"]["order"]["isTrigger"] is True
    assert found["order"]["order"]["triggerCondition"] == "Price below 58000.0"
    await hl_sandbox.set_mark("BTC", "58500")
    assert await status_of(info, user, STOP) == "open"
    await hl_sandbox.set_mark("BTC", "57000")
    assert await status_of(info, user, STOP) == "filled"
    close = (await sdk(info.user_fills, user))[0]
    assert (close["px"], close["dir"]) == ("57000.0", "Close Long")
