"""The perps the sandbox lists, the demo universe, and seed files."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from hlsandbox.numbers import parse_decimal


@dataclass(frozen=True)
class Asset:
    """A perp: its asset id is its index in `meta.universe`."""

    index: int
    name: str
    sz_decimals: int
    max_leverage: int


@dataclass(frozen=True)
class SeedAccount:
    address: str
    usdc: Decimal
    agents: tuple[str, ...] = ()


@dataclass(frozen=True)
class Seed:
    assets: tuple[Asset, ...]
    marks: dict[str, Decimal]
    accounts: tuple[SeedAccount, ...] = field(default=())


DEMO_UNIVERSE: tuple[tuple[str, int, int, str], ...] = (
    ("BTC", 5, 40, "60000"),
    ("ETH", 4, 25, "3000"),
    ("SOL", 2, 20, "150"),
)


def demo_seed() -> Seed:
    assets = tuple(
        Asset(index, name, sz_decimals, max_leverage)
        for index, (name, sz_decimals, max_leverage, _mark) in enumerate(DEMO_UNIVERSE)
    )
    marks = {name: Decimal(mark) for name, _sz, _lev, mark in DEMO_UNIVERSE}
    return Seed(assets, marks)


def seed_from(document: dict[str, Any]) -> Seed:
    """A seed file's JSON: {"universe": [{name, szDecimals, maxLeverage, mark}], "accounts": [...]}."""
    rows = document.get("universe")
    if not isinstance(rows, list) or not rows:
        raise ValueError('seed: "universe" must be a non-empty list of {name, szDecimals, ...}')
    assets: list[Asset] = []
    marks: dict[str, Decimal] = {}
    for index, row in enumerate(rows):
        name = row.get("name") if isinstance(row, dict) else None
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"seed: universe[{index}].name must be a perp coin like BTC")
        sz_decimals, max_leverage = row.get("szDecimals"), row.get("maxLeverage")
        if not isinstance(sz_decimals, int) or not 0 <= sz_decimals <= 6:
            raise ValueError(f"seed: universe[{index}].szDecimals must be an integer 0..6")
        if not isinstance(max_leverage, int) or max_leverage < 1:
            raise ValueError(f"seed: universe[{index}].maxLeverage must be a positive integer")
        assets.append(Asset(index, name, sz_decimals, max_leverage))
        marks[name] = parse_decimal(row.get("mark"), f"seed: universe[{index}].mark")
        if marks[name] <= 0:
            raise ValueError(f"seed: universe[{index}].mark must be a positive price")
    accounts = []
    for index, row in enumerate(document.get("accounts") or []):
        address = str(row.get("address", "")).lower()
        if len(address) != 42 or not address.startswith("0x"):
            raise ValueError(f"seed: accounts[{index}].address must be 0x and 40 hex digits")
        agents = tuple(str(agent).lower() for agent in row.get("agents") or [])
        usdc = parse_decimal(row.get("usdc", "0"), f"seed: accounts[{index}].usdc")
        accounts.append(SeedAccount(address, usdc, agents))
    return Seed(tuple(assets), marks, tuple(accounts))


def load_seed(path: Path) -> Seed:
    return seed_from(json.loads(path.read_text(encoding="utf-8")))
