"""Opening the Hyperliquid venue: the key from the environment (never shown), the world from
the network, mainnet only when switched on; nonces and signing as the SDK decides."""

from __future__ import annotations

import asyncio
import pickle
import sys
from datetime import UTC, datetime

import pytest

from store import World
from tests.support.processes import ROOT
from workers.domains.finance.hyperliquid import (
    MISSING_SDK,
    PROFILE,
    HyperliquidUnavailable,
    open_venue,
)
from workers.domains.finance.hyperliquid.signer import AgentKey, NonceAllocator, is_mainnet
from workers.domains.finance.settings import FinanceAccount, HyperliquidSettings

KEY = "0x" + "11" * 32
ADDRESS = "0x" + "ab" * 20


def clock() -> datetime:
    return datetime(2026, 12, 6, tzinfo=UTC)


def account(**overrides: object) -> FinanceAccount:
    values: dict[str, object] = {
        "name": "hl-main",
        "venue": "hyperliquid",
        "budget": "1000",
        "address": ADDRESS,
        "agent_key_env": "HL_AGENT_KEY",
    }
    return FinanceAccount.model_validate(values | overrides)


@pytest.mark.parametrize(
    ("network", "world"),
    [("emulator", World.EMULATOR), ("testnet", World.TESTNET), ("mainnet", World.LIVE)],
)
async def test_world_follows_the_network(network: str, world: World) -> None:
    settings = HyperliquidSettings(network=network, allow_mainnet=network == "mainnet")
    venue = await open_venue(settings, [account()], {"HL_AGENT_KEY": KEY}, clock)
    try:
        assert venue.world == world
        assert venue.profile is PROFILE
        assert venue.profile.executor == ("hyperliquid", "1")
        assert venue.profile.market_as_bounded_limit
    finally:
        await venue.close()


async def test_a_missing_key_names_the_variable_in_one_line() -> None:
    with pytest.raises(HyperliquidUnavailable) as raised:
        await open_venue(HyperliquidSettings(), [account()], {}, clock)
    message = str(raised.value)
    assert "HL_AGENT_KEY" in message and "\n" not in message


async def test_a_bad_key_is_refused_without_echoing_it() -> None:
    secret = "0x" + "zz" * 32
    with pytest.raises(HyperliquidUnavailable) as raised:
        await open_venue(HyperliquidSettings(), [account()], {"HL_AGENT_KEY": secret}, clock)
    assert "HL_AGENT_KEY" in str(raised.value)
    assert secret not in str(raised.value) and "zz" not in str(raised.value)


async def test_mainnet_needs_the_switch_and_the_table_is_required() -> None:
    settings = HyperliquidSettings.model_construct(network="mainnet", allow_mainnet=False)
    with pytest.raises(HyperliquidUnavailable, match="allow_mainnet"):
        await open_venue(settings, [account()], {"HL_AGENT_KEY": KEY}, clock)
    with pytest.raises(HyperliquidUnavailable, match=r"\[domains.finance.hyperliquid\]"):
        await open_venue(None, [account()], {"HL_AGENT_KEY": KEY}, clock)


def test_the_agent_key_never_shows() -> None:
    key = AgentKey(KEY)
    for shown in (repr(key), str(key), f"{key}", f"{key!r}"):
        assert "11" * 8 not in shown and "redacted" in shown
    assert key.address.startswith("0x") and key.address in repr(key)
    with pytest.raises(TypeError):
        pickle.dumps(key)


def test_is_mainnet_exactly_as_the_sdk_decides() -> None:
    assert is_mainnet("https://api.hyperliquid.xyz")
    assert not is_mainnet("https://api.hyperliquid.xyz/")
    assert not is_mainnet("https://api.hyperliquid-testnet.xyz")
    assert not is_mainnet("http://127.0.0.1:3001")


def test_nonces_increase_per_signer_even_within_one_millisecond() -> None:
    now = [1_000]
    nonces = NonceAllocator(lambda: now[0])
    assert [nonces.next("0xA"), nonces.next("0xa"), nonces.next("0xA")] == [1000, 1001, 1002]
    assert nonces.next("0xB") == 1000  # another signer has its own
    now[0] = 5_000
    assert nonces.next("0xA") == 5000
    now[0] = 4_000  # the clock stepped back: still above the last
    assert nonces.next("0xA") == 5001


async def test_without_the_sdk_opening_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "hyperliquid", None)  # as if not installed
    with pytest.raises(HyperliquidUnavailable) as raised:
        await open_venue(HyperliquidSettings(), [account()], {"HL_AGENT_KEY": KEY}, clock)
    assert str(raised.value) == MISSING_SDK
    assert "countersign[hyperliquid]" in MISSING_SDK


async def test_the_package_and_its_profile_import_without_the_sdk() -> None:
    code = (
        "import sys; sys.modules['hyperliquid'] = None\n"
        "import workers.domains.finance.hyperliquid as hl\n"
        "assert not any(m.startswith('hyperliquid') and sys.modules[m] for m in sys.modules)\n"
        "print(hl.PROFILE.name)\n"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert out.decode().strip() == "hyperliquid"
