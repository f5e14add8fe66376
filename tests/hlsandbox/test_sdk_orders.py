"""The unmodified SDK places, queries, cancels and fills orders against the sandbox."""

from __future__ import annotations

from decimal import Decimal

from hyperliquid.utils.types import Cloid  # type: ignore[import-untyped]

from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import HlWallets, exchange_for, info_for, sdk

GTC = {"limit": {"tif": "Gtc"}}
CLOID = Cloid.from_str("0x" + "ab" * 16)


async def test_place_with_cloid_then_query_and_cancel_by_cloid(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)

    placed = await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)

    assert placed["status"] == "ok"
    [status] = placed["response"]["data"]["statuses"]
    oid = status["resting"]["oid"]
    assert status["resting"]["cloid"] == CLOID.to_raw()
    by_cloid = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert by_cloid["status"] == "order"
    assert by_cloid["order"]["status"] == "open"
    assert by_cloid["order"]["order"]["oid"] == oid
    assert by_cloid["order"]["order"]["cloid"] == CLOID.to_raw()
    by_oid = await sdk(info.query_order_by_oid, hl_wallets.address, oid)
    assert by_oid["order"]["order"]["cloid"] == CLOID.to_raw()
    open_orders = await sdk(info.open_orders, hl_wallets.address)
    assert [o["oid"] for o in open_orders] == [oid]
    # an agent has no orders of its own: queries name the account
    assert await sdk(info.open_orders, hl_wallets.agent.address) == []

    cancelled = await sdk(exchange.cancel_by_cloid, "BTC", CLOID)
    again = await sdk(exchange.cancel_by_cloid, "BTC", CLOID)

    assert cancelled["response"]["data"]["statuses"] == ["success"]
    assert again["response"]["data"]["statuses"] == [
        {"error": "Order was never placed, already canceled, or filled."}
    ]
    after = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert after["order"]["status"] == "canceled"
    assert await sdk(info.open_orders, hl_wallets.address) == []


async def test_unknown_cloid_is_unknown_oid(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    info = await info_for(hl_sandbox)
    answer = await sdk(info.query_order_by_cloid, hl_wallets.address, Cloid.from_int(7))
    assert answer == {"status": "unknownOid"}
    assert await sdk(info.query_order_by_oid, hl_wallets.address, 424242) == {
        "status": "unknownOid"
    }


async def test_a_crossing_buy_fills_at_the_mark_as_taker(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)

    placed = await sdk(exchange.order, "BTC", True, 0.01, 61000, GTC, cloid=CLOID)

    [status] = placed["response"]["data"]["statuses"]
    assert status["filled"]["totalSz"] == "0.01"
    assert Decimal(status["filled"]["avgPx"]) == 60000
    [fill] = await sdk(info.user_fills, hl_wallets.address)
    assert fill["oid"] == status["filled"]["oid"] and "cloid" not in fill
    assert (fill["side"], fill["dir"], fill["crossed"]) == ("B", "Open Long", True)
    assert Decimal(fill["px"]) == 60000 and Decimal(fill["sz"]) == Decimal("0.01")
    assert Decimal(fill["fee"]) == Decimal("600") * Decimal("0.00045")
    assert fill["feeToken"] == "USDC" and isinstance(fill["tid"], int)
    state = await sdk(info.user_state, hl_wallets.address)
    [position] = state["assetPositions"]
    assert Decimal(position["position"]["szi"]) == Decimal("0.01")


async def test_a_resting_order_fills_as_maker_when_the_mark_crosses_it(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    placed = await sdk(exchange.order, "ETH", False, 0.5, 3100, GTC, cloid=CLOID)
    assert "resting" in placed["response"]["data"]["statuses"][0]
    assert await sdk(info.user_fills, hl_wallets.address) == []

    assert await hl_sandbox.set_mark("ETH", "3050") == 0
    assert await hl_sandbox.set_mark("ETH", "3100") == 1

    [fill] = await sdk(info.user_fills, hl_wallets.address)
    assert (fill["side"], fill["dir"], fill["crossed"]) == ("A", "Open Short", False)
    assert Decimal(fill["px"]) == 3100
    assert Decimal(fill["fee"]) == Decimal("1550") * Decimal("0.00015")
    status = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert status["order"]["status"] == "filled"


async def test_liquidity_makes_partial_fills(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.set_liquidity("SOL", "1")

    placed = await sdk(exchange.order, "SOL", True, 2.5, 150, GTC, cloid=CLOID)

    assert "resting" in placed["response"]["data"]["statuses"][0]
    assert await hl_sandbox.tick() == 1
    assert await hl_sandbox.tick() == 1
    assert await hl_sandbox.tick() == 0
    sizes = [Decimal(f["sz"]) for f in await sdk(info.user_fills, hl_wallets.address)]
    assert sorted(sizes) == [Decimal("0.5"), Decimal(1), Decimal(1)]
    status = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert status["order"]["status"] == "filled"


async def test_an_ioc_fills_what_liquidity_allows_and_cancels_the_rest(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.set_liquidity("SOL", "1")

    placed = await sdk(exchange.order, "SOL", True, 2, 151, {"limit": {"tif": "Ioc"}}, cloid=CLOID)

    assert placed["response"]["data"]["statuses"][0]["filled"]["totalSz"] == "1.0"
    status = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert status["order"]["status"] == "canceled"
    assert await hl_sandbox.tick() == 0
