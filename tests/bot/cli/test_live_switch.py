"""Live trading is off until a person switches it on: a configuration that points Hyperliquid
at mainnet without `allow_mainnet = true` is refused by `config check` and by `run`, in one
line naming the table and the switch, before anything opens (no traceback, no connection)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.processes import cli

LINE = (
    'domains.finance.hyperliquid: network "mainnet" trades real money and is off by default: '
    "set allow_mainnet = true to switch live trading on"
)


@pytest.mark.parametrize(
    "table",
    [
        'network = "mainnet"',
        'network = "mainnet"\nurl = "https://api.hyperliquid.xyz"',
    ],
)
@pytest.mark.parametrize("command", ["config check", "run"])
async def test_mainnet_without_the_switch_is_refused_in_one_line(
    command: str, table: str, tmp_path: Path
) -> None:
    config = tmp_path / "countersign.toml"
    config.write_text(f"[domains.finance.hyperliquid]\n{table}\n", encoding="utf-8")
    result = await cli(*command.split(), "--config", str(config), cwd=tmp_path)
    assert result.code != 0
    said = (result.out + result.err).splitlines()
    assert said.count(LINE) == 1, said
    assert not any("Traceback" in line for line in said)
    assert not (tmp_path / "var").exists()  # nothing was opened or created


async def test_the_switch_lets_the_same_table_pass_config_check(tmp_path: Path) -> None:
    config = tmp_path / "countersign.toml"
    config.write_text(
        '[domains.finance.hyperliquid]\nnetwork = "mainnet"\nallow_mainnet = true\n',
        encoding="utf-8",
    )
    result = await cli("config", "check", "--config", str(config), cwd=tmp_path)
    said = result.out + result.err
    assert "trades real money" not in said and "1 problem" in said  # only: no proposer
