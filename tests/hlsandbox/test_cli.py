"""`countersign hl-sandbox` as a real process: the demo account trades through the SDK."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import eth_account
from hyperliquid.exchange import Exchange  # type: ignore[import-untyped]
from hyperliquid.info import Info  # type: ignore[import-untyped]

from bot.cli.hl_sandbox_command import INSTALL_HINT
from tests.support.hl_sandbox import sdk
from tests.support.processes import ENV, ROOT, cli, free_port, start_command
from tests.support.waiting import scaled


def value_after(lines: list[str], label: str) -> str:
    line = next(line for line in lines if line.strip().startswith(label))
    return line.split(label, 1)[1].split()[0]


async def test_the_demo_sandbox_serves_the_sdk() -> None:
    port = free_port()
    process, lines = await start_command(
        "hl-sandbox", "--port", str(port), "--demo", ready=lambda line: "SDK:" in line
    )
    try:
        url = f"http://127.0.0.1:{port}"
        account = value_after(lines, "demo account:")
        agent = eth_account.Account.from_key(value_after(lines, "agent key:"))
        assert agent.address == value_after(lines, "demo agent:")
        assert any("throwaway test key" in line for line in lines)
        exchange = await sdk(Exchange, agent, url, account_address=account, timeout=30)
        placed = await sdk(exchange.order, "ETH", True, 0.01, 3001, {"limit": {"tif": "Gtc"}})
        assert "filled" in placed["response"]["data"]["statuses"][0]
        info = await sdk(Info, url, True, timeout=30)
        assert [p["position"]["coin"] for p in (await sdk(info.user_state, account))[
            "assetPositions"
        ]] == ["ETH"]  # fmt: skip
    finally:
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), scaled(20))
    assert code == 0


async def test_a_bad_seed_file_is_refused_naming_it(tmp_path: Path) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"universe": [{"name": "BTC", "szDecimals": 9}]}))
    result = await cli("hl-sandbox", "--port", str(free_port()), "--seed", str(seed))
    assert result.code == 2
    assert "--seed" in result.err and "szDecimals" in result.err


# `countersign hl-sandbox` in an interpreter where the SDK cannot be imported
WITHOUT_SDK = """
import sys

class NoSdk:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "hyperliquid":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoSdk())
from bot.cli import main
sys.exit(main(["hl-sandbox", "--port", "1"]))
"""


async def test_without_the_sdk_it_says_which_extra_to_install() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WITHOUT_SDK, cwd=ROOT, env=ENV,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _out, err = await asyncio.wait_for(process.communicate(), scaled(60))
    assert process.returncode == 2
    assert err.decode().splitlines() == [f"error: {INSTALL_HINT}"]
