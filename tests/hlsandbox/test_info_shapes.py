"""/info answers have the shapes Hyperliquid recorded (the SDK's cassettes, in fixtures/):
every key the venue sent is there, with the same JSON type; and the rest of /info."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hyperliquid.utils.types import Cloid  # type: ignore[import-untyped]

from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import HlWallets, exchange_for, info_for, sdk

FIXTURES = Path(__file__).with_name("fixtures")
# keys the venue may send as null where the recording had a value (or the other way round)
NULLABLE = {"liquidationPx", "cloid", "tif"}


def golden(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text())["response"]


def shape_problems(ours: Any, theirs: Any, path: str = "") -> list[str]:
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return [f"{path}: {type(ours).__name__}, recorded an object"]
        problems = [f"{path}.{key}: missing" for key in theirs if key not in ours]
        for key in theirs.keys() & ours.keys():
            if key in NULLABLE and None in (ours[key], theirs[key]):
                continue
            problems += shape_problems(ours[key], theirs[key], f"{path}.{key}")
        return problems
    if isinstance(theirs, list):
        if not isinstance(ours, list):
            return [f"{path}: {type(ours).__name__}, recorded a list"]
        if ours and theirs:
            return shape_problems(ours[0], theirs[0], f"{path}[0]")
        return []
    if type(ours) is not type(theirs):
        return [f"{path}: {type(ours).__name__}, recorded {type(theirs).__name__}"]
    return []


@pytest.fixture
async def busy_account(hl_sandbox: RunningSandbox, hl_wallets: HlWallets) -> str:
    """An account with a position, fills, a resting bracket and finished orders."""
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    gtc = {"limit": {"tif": "Gtc"}}
    await sdk(exchange.order, "BTC", True, 0.01, 61000, gtc)
    await sdk(exchange.order, "ETH", False, 0.5, 2990, gtc)
    await sdk(exchange.order, "SOL", True, 1, 140, {"limit": {"tif": "Ioc"}})
    bracket = [
        {"coin": "SOL", "is_buy": True, "sz": 1, "limit_px": 140, "order_type": gtc,
         "reduce_only": False, "cloid": Cloid.from_int(9)},
        {"coin": "SOL", "is_buy": False, "sz": 1, "limit_px": 130, "reduce_only": True,
         "order_type": {"trigger": {"triggerPx": 130, "isMarket": True, "tpsl": "sl"}}},
    ]  # fmt: skip
    await sdk(exchange.bulk_orders, bracket, grouping="normalTpsl")
    return hl_wallets.address


@pytest.mark.parametrize(
    "kind",
    ["meta", "allMids", "clearinghouseState", "openOrders", "frontendOpenOrders", "userFills",
     "userFillsByTime", "historicalOrders", "userRateLimit", "extraAgents"],
)  # fmt: skip
async def test_answers_have_the_recorded_shapes(
    hl_sandbox: RunningSandbox, busy_account: str, kind: str
) -> None:
    info = await info_for(hl_sandbox)
    body: dict[str, Any] = {"type": kind, "user": busy_account}
    if kind == "userFillsByTime":
        body["startTime"] = 0
    ours = await sdk(info.post, "/info", body)
    assert ours, f"{kind}: answered empty, nothing to compare"
    assert shape_problems(ours, golden(kind)) == []
    if kind == "allMids":
        assert ours.keys() == golden(kind).keys()


async def test_frontend_children_have_the_recorded_shape(
    hl_sandbox: RunningSandbox, busy_account: str
) -> None:
    info = await info_for(hl_sandbox)
    ours = await sdk(info.frontend_open_orders, busy_account)
    parent = next(row for row in ours if row["children"])
    recorded = next(row for row in golden("frontendOpenOrders") if row["children"])
    assert shape_problems(parent, recorded) == []


async def test_the_sdk_constructs_and_reads_the_rest(
    hl_sandbox: RunningSandbox, busy_account: str, hl_wallets: HlWallets
) -> None:
    info = await info_for(hl_sandbox)
    assert info.name_to_asset("ETH") == 1 and info.asset_to_sz_decimals[0] == 5
    spot = await sdk(info.spot_meta)
    assert spot["universe"] == [] and spot["tokens"][0]["name"] == "USDC"
    assert await sdk(info.spot_user_state, busy_account) == {"balances": []}
    meta, contexts = await sdk(info.meta_and_asset_ctxs)
    assert len(meta["universe"]) == len(contexts) == 3
    assert (await sdk(info.user_role, hl_wallets.agent.address)) == {
        "role": "agent",
        "data": {"user": busy_account.lower()},
    }
    assert (await sdk(info.user_role, busy_account)) == {"role": "user"}
    assert (await sdk(info.extra_agents, busy_account))[0]["address"] == (
        hl_wallets.agent.address.lower()
    )
    rate = await sdk(info.user_rate_limit, busy_account)
    assert rate["nRequestsUsed"] == 5 and rate["nRequestsCap"] > 10000
