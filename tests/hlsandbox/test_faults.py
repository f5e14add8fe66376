"""Each fault, seen through the unmodified SDK, and the noop fence of an in-flight order."""

from __future__ import annotations

import asyncio

import pytest
import requests
from hyperliquid.utils.error import ClientError, ServerError  # type: ignore[import-untyped]
from hyperliquid.utils.types import Cloid  # type: ignore[import-untyped]

from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import (
    HlWallets,
    exchange_for,
    info_for,
    order_action,
    sdk,
    signed_payload,
)
from tests.support.waiting import eventually

GTC = {"limit": {"tif": "Gtc"}}
CLOID = Cloid.from_str("0x" + "cd" * 16)
BTC = 0


async def test_noop_on_the_same_nonce_fences_a_delayed_order(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.fault("delay_commit")  # held in flight until release
    nonce = hl_sandbox.venue.now_ms()
    payload = signed_payload(
        hl_wallets.agent,
        order_action(BTC, True, 0.001, 59000, CLOID.to_raw()),
        nonce,
        expires_after=nonce + 60_000,
    )
    in_flight = asyncio.create_task(sdk(exchange.post, "/exchange", payload))

    async def arrived() -> bool:
        return await hl_sandbox.requests_seen(CLOID.to_raw()) == 1

    await eventually(arrived, what="the order to arrive at the sandbox")
    assert await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID) == {
        "status": "unknownOid"
    }

    fence = await sdk(exchange.noop, nonce)
    assert fence == {"status": "ok", "response": {"type": "default"}}
    assert await hl_sandbox.release() == 1
    late = await in_flight

    assert late == {"status": "err", "response": f"Invalid nonce: duplicate nonce {nonce}"}
    assert await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID) == {
        "status": "unknownOid"
    }
    seen = await hl_sandbox.requests(CLOID.to_raw())
    assert (seen["received"], seen["committed"]) == (1, 0)
    # replaying the exact signed body is harmless too
    assert await sdk(exchange.post, "/exchange", payload) == late


async def test_a_delayed_order_lands_when_not_fenced(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.fault("delay_commit", delay_ms=0)

    placed = await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)

    assert "resting" in placed["response"]["data"]["statuses"][0]
    status = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert status["order"]["status"] == "open"
    # and a noop on its nonce, too late, is refused: the order landed
    [record] = (await hl_sandbox.requests(CLOID.to_raw()))["requests"]
    late_fence = await sdk(exchange.noop, record["nonce"])
    assert late_fence["response"] == f"Invalid nonce: duplicate nonce {record['nonce']}"


async def test_drop_answer_commits_and_holds_the_connection(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets, http_timeout_s=1.0)
    info = await info_for(hl_sandbox)
    await hl_sandbox.fault("drop_answer")

    with pytest.raises(requests.exceptions.ReadTimeout):
        await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)

    status = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert status["order"]["status"] == "open"
    assert await hl_sandbox.committed(CLOID.to_raw()) == 1


async def test_drop_answer_can_close_the_connection_without_a_response(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.fault("drop_answer", close=True)

    with pytest.raises(requests.exceptions.ConnectionError):
        await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)

    status = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert status["order"]["status"] == "open"


async def test_error_5xx_after_commit(hl_sandbox: RunningSandbox, hl_wallets: HlWallets) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.fault("error_5xx_after_commit")

    with pytest.raises(ServerError) as raised:
        await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)

    assert raised.value.status_code == 500
    status = await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID)
    assert status["order"]["status"] == "open"


async def test_deliver_twice_lands_once_and_answers_the_duplicate(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.fault("deliver_twice")

    answer = await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)

    assert answer["status"] == "err"
    assert answer["response"].startswith("Invalid nonce: duplicate nonce ")
    assert len(await sdk(info.open_orders, hl_wallets.address)) == 1
    seen = await hl_sandbox.requests(CLOID.to_raw())
    assert (seen["received"], seen["committed"]) == (2, 1)


async def test_rate_limited_fault_is_429_with_a_null_body(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.fault("rate_limited")

    with pytest.raises(ClientError) as raised:
        await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)

    assert raised.value.status_code == 429
    assert raised.value.error_message == "null"
    assert await sdk(info.query_order_by_cloid, hl_wallets.address, CLOID) == {
        "status": "unknownOid"
    }
    # only the next request: the one after passes
    placed = await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC, cloid=CLOID)
    assert "resting" in placed["response"]["data"]["statuses"][0]


async def test_drop_fee_fills_carry_no_fee(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.fault("drop_fee")

    await sdk(exchange.order, "BTC", True, 0.001, 61000, GTC, cloid=CLOID)
    await sdk(exchange.order, "BTC", True, 0.001, 61000, GTC)

    dropped, normal = reversed(await sdk(info.user_fills, hl_wallets.address))
    assert "fee" not in dropped and dropped["feeToken"] == "USDC"
    assert "fee" in normal


async def test_faults_pass_the_noop_and_apply_in_the_order_queued(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    await hl_sandbox.fault("rate_limited", count=2)
    await hl_sandbox.fault("error_5xx_after_commit")

    assert (await sdk(exchange.noop, hl_sandbox.venue.now_ms()))["status"] == "ok"
    for _ in range(2):
        with pytest.raises(ClientError):
            await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC)
    with pytest.raises(ServerError):
        await sdk(exchange.order, "BTC", True, 0.001, 59000, GTC)
    assert (await hl_sandbox.state())["faults"] == []
