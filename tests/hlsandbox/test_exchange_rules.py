"""The venue's rules as the SDK meets them: precision, minimums, margin, TIFs, reduce-only,
duplicate cloids, whole-payload errors, leverage and the scheduled cancel."""

from __future__ import annotations

from typing import Any

from hyperliquid.utils.types import Cloid  # type: ignore[import-untyped]

from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import HlWallets, exchange_for, info_for, sdk

GTC = {"limit": {"tif": "Gtc"}}
CLOID = Cloid.from_str("0x" + "ef" * 16)


def statuses(answer: dict[str, Any]) -> list[Any]:
    assert answer["status"] == "ok", answer
    result: list[Any] = answer["response"]["data"]["statuses"]
    return result


async def test_price_size_and_minimum_texts(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    tick = {"error": "Price must be divisible by tick size."}
    cases = [
        (("BTC", True, 0.001, 59000.5), tick),  # 6 significant figures
        (("ETH", True, 0.01, 2999.12), tick),  # 6 significant figures
        (("SOL", True, 1, 149.12345), tick),  # more than 6 - 2 decimals
        (("BTC", True, 0.000001, 59000), {"error": "Order has invalid size."}),
        (("BTC", True, 0.0001, 59000), {"error": "Order must have minimum value of $10."}),
        (("BTC", True, 40, 59000), {"error": "Insufficient margin to place order."}),
    ]
    for (coin, is_buy, sz, px), expected in cases:
        answer = await sdk(exchange.order, coin, is_buy, sz, px, GTC)
        assert statuses(answer) == [expected], (coin, sz, px)
    # integers are always fine, and 5 significant figures within the decimals
    for coin, px in (("BTC", 59001), ("ETH", 2999.1), ("SOL", 149.12)):
        assert "resting" in statuses(await sdk(exchange.order, coin, True, 1, px, GTC))[0]


async def test_a_rejected_order_keeps_its_status_under_its_cloid(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await sdk(exchange.order, "BTC", True, 0.0001, 59000, GTC, cloid=CLOID)
    status = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert status["order"]["status"] == "minTradeNtlRejected"


async def test_tif_and_reduce_only_texts(hl_sandbox: RunningSandbox, hl_wallets: HlWallets) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    alo = await sdk(exchange.order, "BTC", True, 0.001, 61000, {"limit": {"tif": "Alo"}})
    assert statuses(alo)[0]["error"].startswith("Post only order would have immediately matched")
    ioc = await sdk(exchange.order, "BTC", True, 0.001, 59000, {"limit": {"tif": "Ioc"}})
    assert statuses(ioc) == [
        {"error": "Order could not immediately match against any resting orders."}
    ]
    reduce = await sdk(exchange.order, "BTC", False, 0.001, 59000, GTC, reduce_only=True)
    assert statuses(reduce) == [{"error": "Reduce only order would increase position."}]
    # with a long open, a reduce-only sell is fine
    await sdk(exchange.order, "BTC", True, 0.001, 61000, GTC)
    closing = await sdk(exchange.order, "BTC", False, 0.001, 59000, GTC, reduce_only=True)
    assert statuses(closing)[0]["filled"]["totalSz"] == "0.001"


async def test_a_cloid_is_refused_the_second_time_for_the_same_user(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    first = await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)
    second = await sdk(exchange.order, "BTC", True, 0.001, 58000, GTC, cloid=CLOID)

    assert "resting" in statuses(first)[0]
    assert "error" in statuses(second)[0]  # the text is the sandbox's own: not asserted
    assert len(await sdk(info.open_orders, hl_wallets.address)) == 1


async def test_whole_payload_errors(hl_sandbox: RunningSandbox, hl_wallets: HlWallets) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    empty = await sdk(exchange.bulk_orders, [])
    assert empty["status"] == "err" and isinstance(empty["response"], str)
    parent = {"coin": "BTC", "is_buy": True, "sz": 0.001, "limit_px": 59000,
              "order_type": GTC, "reduce_only": False}  # fmt: skip
    child = {"coin": "BTC", "is_buy": False, "sz": 0.001, "limit_px": 58000,
             "order_type": {"trigger": {"triggerPx": 58000, "isMarket": True, "tpsl": "sl"}},
             "reduce_only": False}  # fmt: skip
    not_reduce_only = await sdk(exchange.bulk_orders, [parent, child], grouping="normalTpsl")
    assert not_reduce_only["status"] == "err"


async def test_leverage_and_scheduled_cancel(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    assert (await sdk(exchange.update_leverage, 10, "ETH"))["status"] == "ok"
    assert (await sdk(exchange.update_leverage, 26, "ETH"))["status"] == "err"
    data = await sdk(info.post, "/info", {"type": "activeAssetData", "user": hl_wallets.address,
                                          "coin": "ETH"})  # fmt: skip
    assert data["leverage"] == {"type": "cross", "value": 10}

    await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)
    now = hl_sandbox.venue.now_ms()
    assert (await sdk(exchange.schedule_cancel, now + 1000))["status"] == "err"
    assert (await sdk(exchange.schedule_cancel, now + 10_000))["status"] == "ok"
    await hl_sandbox.tick()
    assert (await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID))["order"][
        "status"
    ] == "open"
    await hl_sandbox.advance(11_000)
    status = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert status["order"]["status"] == "scheduledCancel"


async def test_fees_and_account_state(hl_sandbox: RunningSandbox, hl_wallets: HlWallets) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    fees = await sdk(info.user_fees, hl_wallets.address)
    assert (fees["userCrossRate"], fees["userAddRate"]) == ("0.00045", "0.00015")

    await sdk(exchange.order, "BTC", True, 0.01, 61000, GTC)
    await hl_sandbox.set_mark("BTC", "61000")
    await sdk(exchange.order, "BTC", False, 0.01, 60000, GTC)

    state = await sdk(info.user_state, hl_wallets.address)
    assert state["assetPositions"] == []
    close = (await sdk(info.user_fills, hl_wallets.address))[0]
    assert (close["dir"], close["closedPnl"], close["startPosition"]) == (
        "Close Long",
        "10.0",
        "0.01",
    )
    # 100000 + 10 pnl - taker fees on 600 and 610 of notional
    assert state["marginSummary"]["accountValue"] == "100009.4555"
