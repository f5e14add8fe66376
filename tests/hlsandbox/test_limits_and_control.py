"""Rate limits (per IP weight, per address budget) and the control API's refusals."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from hyperliquid.utils.error import ClientError  # type: ignore[import-untyped]

from hlsandbox.testing import ControlError, RunningSandbox
from tests.support.hl_sandbox import HlWallets, exchange_for, info_for, sdk, signed_payload

GTC = {"limit": {"tif": "Gtc"}}
UNDESERIALIZABLE = "Failed to deserialize the JSON body into the target type"


async def test_the_ip_weight_is_spent_per_minute(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    info = await info_for(hl_sandbox)  # spotMeta + meta: 40 of the default 1200
    await hl_sandbox.set_limits(ip_weight_per_min=45)
    await sdk(info.all_mids)  # weight 2: 42
    await sdk(info.all_mids)  # 44
    with pytest.raises(ClientError) as raised:
        await sdk(info.all_mids)
    assert raised.value.status_code == 429 and raised.value.error_message == "null"
    with pytest.raises(ClientError):
        await sdk(info.user_fills, hl_wallets.address)  # weight 20
    await hl_sandbox.advance(60_000)  # the minute has passed
    assert "BTC" in await sdk(info.all_mids)


async def test_the_address_budget_counts_orders(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange, info = await exchange_for(hl_sandbox, hl_wallets), await info_for(hl_sandbox)
    await hl_sandbox.set_limits(address_actions=2)
    for px in (59000, 58000):
        assert (await sdk(exchange.order, "BTC", True, 0.001, px, GTC))["status"] == "ok"
    with pytest.raises(ClientError) as raised:
        await sdk(exchange.order, "BTC", True, 0.001, 57000, GTC)
    assert raised.value.status_code == 429
    assert len(await sdk(info.open_orders, hl_wallets.address)) == 2
    # cancels have their own, larger budget
    oid = (await sdk(info.open_orders, hl_wallets.address))[0]["oid"]
    cancelled = await sdk(exchange.cancel, "BTC", oid)
    assert cancelled["response"]["data"]["statuses"] == ["success"]
    rate = await sdk(info.user_rate_limit, hl_wallets.address)
    assert (rate["nRequestsUsed"], rate["nRequestsCap"]) == (2, 2)


async def test_malformed_bodies_are_422(hl_sandbox: RunningSandbox) -> None:
    cases = [
        ("/info", b"{not json"),
        ("/info", b'{"type": "noSuchQuery"}'),
        ("/exchange", b'{"action": {"type": "noop"}}'),  # no nonce, no signature
    ]
    async with aiohttp.ClientSession() as http:
        for path, data in cases:
            async with http.post(hl_sandbox.base_url + path, data=data) as response:
                assert (response.status, await response.text()) == (422, UNDESERIALIZABLE)


async def test_control_refusals_name_the_field(hl_sandbox: RunningSandbox) -> None:
    cases = [
        ("POST", "/accounts", {"address": "0x12", "usdc": "1"}, "address"),
        ("POST", "/accounts", {"address": "0x" + "1" * 40, "usdc": 5.5}, "usdc"),
        ("POST", "/agents", {"account": "0x" + "2" * 40, "agent": "0x" + "3" * 40}, "account"),
        ("POST", "/marks", {"coin": "DOGE", "px": "1"}, "coin"),
        ("POST", "/marks", {"coin": "BTC", "px": "0"}, "px"),
        ("POST", "/faults", {"kind": "explode"}, "kind"),
        ("POST", "/faults", {"kind": "drop_answer", "count": 0}, "count"),
        ("POST", "/limits", {"nonce_window": 0}, "nonce_window"),
        ("POST", "/clock", {"advance_ms": "soon"}, "advance_ms"),
    ]
    before = await hl_sandbox.state()
    for method, path, body, field in cases:
        with pytest.raises(ControlError) as refused:
            await hl_sandbox.call(method, path, body)
        assert refused.value.status in (404, 422)
        assert refused.value.body["error"].startswith(field), (path, body)
    after = await hl_sandbox.state()
    before.pop("now_ms"), after.pop("now_ms")
    assert after == before


ODD_ACTIONS: list[dict[str, Any]] = [
    {"type": "order", "orders": 5, "grouping": "na"},
    {"type": "order", "orders": [{"a": 0}], "grouping": "na"},
    {"type": "order", "orders": [], "grouping": "na"},
    {"type": "order", "orders": [{"a": 99, "b": True, "p": "1", "s": "1", "r": False,
                                  "t": {"limit": {"tif": "Gtc"}}}], "grouping": "na"},
    {"type": "order", "orders": [{"a": 0, "b": True, "p": "x", "s": "1", "r": False,
                                  "t": {"limit": {"tif": "Gtc"}}}], "grouping": "na"},
    {"type": "order", "orders": [{"a": 0, "b": True, "p": "59000", "s": "1", "r": False,
                                  "t": {"limit": {"tif": "Fok"}}}], "grouping": "na"},
    {"type": "order", "orders": [{"a": 0, "b": True, "p": "59000", "s": "0.001", "r": False,
                                  "t": {"limit": {"tif": "Gtc"}}}], "grouping": "weird"},
    {"type": "cancel", "cancels": 7},
    {"type": "cancel", "cancels": [{"a": "BTC", "o": 1}]},
    {"type": "updateLeverage", "asset": "BTC", "isCross": True, "leverage": 5},
    {"type": "withdraw3"},
]  # fmt: skip


async def test_odd_signed_actions_are_refused_and_change_nothing(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    for offset, action in enumerate(ODD_ACTIONS):
        payload = signed_payload(hl_wallets.agent, action, hl_sandbox.venue.now_ms() + offset)
        try:
            answer = await sdk(exchange.post, "/exchange", payload)
        except ClientError as error:
            assert error.status_code == 422, action
            continue
        assert answer["status"] == "err", (action, answer)
    assert hl_sandbox.venue.orders == {}
    assert hl_sandbox.venue.accounts[hl_wallets.address.lower()].leverage == {}
