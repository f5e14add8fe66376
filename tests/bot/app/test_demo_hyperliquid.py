"""`countersign demo --script --venue hyperliquid` as a real process: the demo's orders go to
the local Hyperliquid (hlsandbox, served in the demo's process) through the unmodified SDK's
wire format, every card says EMULATOR, and the agent's throwaway key is never printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.app.demo_story import story
from bot.config.profiles import DEV_TOKEN
from hlsandbox.serve import throwaway
from hlsandbox.testing import HlSandboxClient
from tests.support.processes import cli, free_port, start, stop

# an order on the dev profile's account on the emulator (leverage: the emulator's default)
HL_ORDER: dict[str, Any] = {
    "payload": {
        "venue": "hyperliquid",
        "account": "hl-main",
        "instrument": "BTC-PERP",
        "side": "buy",
        "quantity": "0.001",
        "order_type": "limit",
        "limit_price": "60000",
        "time_in_force": "GTC",
        "reduce_only": False,
        "leverage": "20",
        "max_fee": "1",
        "fee_currency": "USDC",
    }
}


async def test_the_scripted_demo_on_the_emulator_fills_and_says_emulator(tmp_path: Path) -> None:
    hl_port = free_port()
    result = await cli(
        "demo",
        "--script",
        "--venue",
        "hyperliquid",
        "--hl-port",
        str(hl_port),
        "--data-dir",
        str(tmp_path / "demo"),
        "--port",
        str(free_port()),
        "--sandbox-port",
        str(free_port()),
    )
    assert result.code == 0, result.out + result.err
    samples = story(tmp_path).samples  # the same samples, on another venue
    confirms = sum(d.action == "confirm" for s in samples for d in s.decisions)
    for line in (
        f"hl-sandbox (a local Hyperliquid, world EMULATOR) on http://127.0.0.1:{hl_port}",
        "throwaway test keys",
        "[fills] card -> Filled · EMULATOR",
        "[rests then fills in parts] card -> Resting on the book · EMULATOR",
        "[rests then fills in parts] card -> Partially filled · EMULATOR",
        "[rests then fills in parts] card -> Filled · EMULATOR",
        "[preflight refuses] card -> Refused by pre-check — nothing sent · EMULATOR",
        "[message draft] card -> Sent",
        "[two of three] card -> Filled · EMULATOR",
        '[metrics] countersign_executions_total{"outcome": "filled"} moved by 3 (expected 3)',
        '[metrics] countersign_decisions_total{"action": "confirm", "entry": "lark"} '
        f"moved by {confirms} (expected {confirms})",
    ):
        assert line in result.out, (line, result.out)
    assert "FAILED" not in result.out and result.out.splitlines()[-1].startswith("PASS: ")
    assert "SIMULATED" not in result.out  # no finance card fell back to the simulated venue
    agent_key = throwaway("agent").key
    for printed in (result.out, result.err):
        assert agent_key not in printed and agent_key.removeprefix("0x") not in printed


async def test_the_dev_profile_on_the_emulator_files_orders_for_the_local_hyperliquid(
    tmp_path: Path,
) -> None:
    """`run --dev --venue hyperliquid`: the emulator answers beside the bot, the account on it
    files orders as EMULATOR, and the profile's simulated account stays."""
    hl_port = free_port()
    running = await start(
        "--dev",
        "--venue",
        "hyperliquid",
        "--hl-port",
        str(hl_port),
        "--data-dir",
        str(tmp_path / "dev"),
        "--port",
        str(free_port()),
    )
    try:
        emulator = HlSandboxClient(f"http://127.0.0.1:{hl_port}")
        try:
            accounts = (await emulator.state())["accounts"]
        finally:
            await emulator.close()
        assert [a["address"].lower() for a in accounts] == [throwaway("account").address.lower()]
        filed = {}
        on_sim = {**HL_ORDER["payload"], "venue": "sim", "account": "sim-main", "leverage": "2"}
        for name, payload in (("hl", HL_ORDER), ("sim", {"payload": on_sim})):
            order = tmp_path / f"{name}.json"
            order.write_text(json.dumps({"kind": "finance.order", "audience": "ops", **payload}))
            result = await cli(
                "propose", str(order), "--url", running.url, "--token", DEV_TOKEN, "--json"
            )
            assert result.code == 0, result.out + result.err
            filed[name] = json.loads(result.out)
        assert (filed["hl"]["world"], filed["hl"]["executor"]["name"]) == (
            "emulator",
            "hyperliquid",
        )
        assert (filed["sim"]["world"], filed["sim"]["executor"]["name"]) == (
            "simulated",
            "sim-venue",
        )
    finally:
        assert await stop(running) == 0
    assert running.process.stdout is not None
    printed = (await running.process.stdout.read()).decode()
    agent_key = throwaway("agent").key
    assert agent_key.removeprefix("0x") not in printed
