"""A seed file's universe, marks, accounts and agents, as the SDK sees them."""

from __future__ import annotations

import pytest

from hlsandbox import Venue
from hlsandbox.testing import start
from hlsandbox.universe import seed_from
from tests.support.hl_sandbox import HlWallets, exchange_for, info_for, sdk, throwaway_key
from tests.support.processes import free_port


async def test_a_seeded_universe_and_account() -> None:
    wallets = HlWallets(throwaway_key("seeded account"), throwaway_key("seeded agent"))
    seed = seed_from(
        {
            "universe": [
                {"name": "DOGE", "szDecimals": 0, "maxLeverage": 10, "mark": "0.2"},
                {"name": "BTC", "szDecimals": 5, "maxLeverage": 40, "mark": "70000"},
            ],
            "accounts": [
                {"address": wallets.address, "usdc": "500", "agents": [wallets.agent.address]}
            ],
        }
    )
    running = await start(free_port(), venue=Venue(seed))
    try:
        info = await info_for(running)
        assert await sdk(info.all_mids) == {"DOGE": "0.2", "BTC": "70000.0"}
        assert info.name_to_asset("BTC") == 1
        exchange = await exchange_for(running, wallets)
        placed = await sdk(exchange.order, "DOGE", True, 100, 0.2, {"limit": {"tif": "Gtc"}})
        assert placed["response"]["data"]["statuses"][0]["filled"]["totalSz"] == "100.0"
    finally:
        await running.stop()


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({}, "universe"),
        ({"universe": [{"name": "X:Y", "szDecimals": 1, "maxLeverage": 3, "mark": "1"}]}, "name"),
        ({"universe": [{"name": "X", "szDecimals": 1, "maxLeverage": 0, "mark": "1"}]},
         "maxLeverage"),
        ({"universe": [{"name": "X", "szDecimals": 1, "maxLeverage": 3, "mark": 1.5}]}, "mark"),
        ({"universe": [{"name": "X", "szDecimals": 1, "maxLeverage": 3, "mark": "1"}],
          "accounts": [{"address": "0x1"}]}, "address"),
    ],
)  # fmt: skip
def test_a_bad_seed_names_the_field(document: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        seed_from(document)
