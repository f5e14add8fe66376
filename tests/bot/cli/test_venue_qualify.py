"""`countersign venue qualify` and `venue profile` as real processes: against the simulated
venue's own file, and against the local Hyperliquid (hlsandbox) through the real adapter.

Qualify only reads: every test that runs it checks the venue afterwards (the sim's orders
unchanged; the emulator saw no signed action at all: no nonce used, no order)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account

from bot.config import read_file
from hlsandbox.testing import RunningSandbox, start
from tests.support.hl_sandbox import HlWallets, exchange_for, sdk
from tests.support.processes import ENV, cli, free_port, start_command
from workers.domains.finance.settings import FinanceSettings
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.contract import Evidence
from workers.domains.finance.venues.model import VenueOrder
from workers.domains.finance.venues.opening import open_venues

PROPOSER = '[[proposers]]\nname = "agent"\ntoken_env = "COUNTERSIGN_TOKEN"\n'


def sim_config(tmp_path: Path, budget: str = "100000") -> Path:
    path = tmp_path / "countersign.toml"
    path.write_text(
        PROPOSER
        + f'[domains.finance]\nvenue_path = "{tmp_path / "sim-venue.db"}"\n'
        + f'[[domains.finance.accounts]]\nname = "sim-main"\nbudget = "{budget}"\n',
        encoding="utf-8",
    )
    return path


def finance_of(config: Path) -> FinanceSettings:
    finance = read_file(config).domains.for_kind("finance.order")
    assert isinstance(finance, FinanceSettings)
    return finance


async def create_sim_venue(config: Path, *, resting_btc: str | None = None) -> None:
    """The venue file the bot would create on its first run; with a resting BTC buy."""

    async def record(client_id: str, evidence: Evidence) -> None:
        assert client_id == "cs-resting" and evidence

    venues = await open_venues(finance_of(config), {}, lambda: datetime.now(UTC))
    try:
        if resting_btc is not None:
            order = VenueOrder(
                client_id="cs-resting",
                account="sim-main",
                instrument="BTC-PERP",
                side="buy",
                quantity=Decimal(resting_btc),
                order_type="limit",
                time_in_force="GTC",
                leverage=Decimal("1"),
                limit_price=Decimal("50000"),
            )
            submitted = await venues["sim"].submit(order, record)
            assert submitted.order.status == "resting"
    finally:
        for venue in venues.values():
            await venue.close()


async def sim_orders(config: Path) -> list[dict[str, object]]:
    venues = await open_venues(finance_of(config), {}, lambda: datetime.now(UTC), create=False)
    venue = venues["sim"]
    try:
        assert isinstance(venue, SimVenue)
        listed = await venue.orders()  # the sim's own read of every order it holds
        return [state.to_json() for state in listed]
    finally:
        await venue.close()


def lines_of(out: str) -> dict[str, str]:
    """Each check line by its subject: `ok  BTC-PERP: ...` -> {"BTC-PERP": "ok  BTC-PERP: ..."}."""
    found = {}
    for line in out.splitlines():
        if line[:3] in ("ok ", "NO "):
            found[line[3:].split(":", 1)[0]] = line
    return found


# -- the simulated venue -------------------------------------------------------------------------


async def test_a_sim_account_within_its_budget_qualifies_and_nothing_changes(
    tmp_path: Path,
) -> None:
    config = sim_config(tmp_path)
    await create_sim_venue(config, resting_btc="0.100")
    before = await sim_orders(config)

    result = await cli("venue", "qualify", "--account", "sim-main", "--config", str(config))

    assert result.code == 0, result.out + result.err
    head, *_ = result.out.splitlines()
    assert head.startswith("sim-main on sim · SIMULATED") and "read only" in head
    checks = lines_of(result.out)
    assert all(line.startswith("ok ") for line in checks.values()), result.out
    assert {"account", "observation", "account mode", "balance", "exposure", "budget"} <= set(
        checks
    )
    assert {"BTC-PERP", "ETH-PERP", "open orders"} <= set(checks)
    # the resting buy's notional (0.1 x 50000) is in use, and the open order counted
    assert "5000 USDC in use" in checks["exposure"]
    assert "1 on the venue" in checks["open orders"]
    assert result.out.splitlines()[-1] == f"all {len(checks)} checks ok"
    assert await sim_orders(config) == before


async def test_json_says_the_same_as_the_lines(tmp_path: Path) -> None:
    config = sim_config(tmp_path)
    await create_sim_venue(config)
    result = await cli(
        "venue", "qualify", "--account", "sim-main", "--config", str(config), "--json"
    )
    assert result.code == 0, result.err
    answer = json.loads(result.out)
    assert (answer["account"], answer["venue"], answer["world"], answer["ok"]) == (
        "sim-main",
        "sim",
        "simulated",
        True,
    )
    subjects = [check["subject"] for check in answer["checks"]]
    assert subjects[:3] == ["account", "observation", "account mode"]
    assert all(check["ok"] for check in answer["checks"])


async def test_a_budget_below_the_smallest_order_says_no_with_the_fix(tmp_path: Path) -> None:
    # BTC-PERP's smallest order is one lot, 0.001 at the 60000 mark: 60 USDC; ETH's 30
    config = sim_config(tmp_path, budget="50")
    await create_sim_venue(config)

    result = await cli("venue", "qualify", "--account", "sim-main", "--config", str(config))

    assert result.code == 1, result.out + result.err
    checks = lines_of(result.out)
    btc = checks["BTC-PERP"]
    assert btc.startswith("NO ") and "smallest order 0.001 (60 USDC" in btc
    assert "fix: raise the account's budget in config" in btc
    assert checks["ETH-PERP"].startswith("ok ")
    assert result.out.splitlines()[-1].startswith("1 of ")


async def test_an_account_not_configured_is_a_usage_error(tmp_path: Path) -> None:
    config = sim_config(tmp_path)
    result = await cli("venue", "qualify", "--account", "nope", "--config", str(config))
    assert result.code == 2
    assert result.err.strip() == (
        "error: no finance account 'nope': use one of sim-main "
        "([[domains.finance.accounts]] in the config)"
    )


async def test_a_sim_venue_never_run_is_said_and_not_created(tmp_path: Path) -> None:
    config = sim_config(tmp_path)
    result = await cli("venue", "qualify", "--account", "sim-main", "--config", str(config))
    assert result.code == 1
    assert "has no state at" in result.err and "countersign run" in result.err
    assert not (tmp_path / "sim-venue.db").exists()


async def test_profile_prints_what_each_configured_venue_declares(tmp_path: Path) -> None:
    config = sim_config(tmp_path)
    text = await cli("venue", "profile", "--config", str(config))
    assert text.code == 0, text.err
    assert text.out.startswith("sim · SIMULATED (its own file ")
    assert "executor sim-venue r1" in text.out.splitlines()[0]
    assert "  time in force: FOK, GTC, IOC, POST_ONLY" in text.out

    data = await cli("venue", "profile", "sim", "--config", str(config), "--json")
    assert data.code == 0, data.err
    (profile,) = json.loads(data.out)
    assert (profile["name"], profile["world"], profile["executor_revision"]) == (
        "sim",
        "simulated",
        "1",
    )
    assert profile["products"] == ["perp"]

    unknown = await cli("venue", "profile", "nasdaq", "--config", str(config))
    assert unknown.code == 2 and "no venue named 'nasdaq'" in unknown.err


# -- Hyperliquid, on the local emulator ---------------------------------------------------------

AGENT_KEY_ENV = "COUNTERSIGN_TEST_HL_AGENT_KEY"


@pytest.fixture
async def sandbox() -> AsyncIterator[RunningSandbox]:
    running = await start(free_port())
    yield running
    await running.stop()


def hl_config(tmp_path: Path, base_url: str, address: str, budget: str) -> Path:
    path = tmp_path / "countersign.toml"
    path.write_text(
        PROPOSER
        + f'[domains.finance.hyperliquid]\nnetwork = "emulator"\nurl = "{base_url}"\n'
        + '[[domains.finance.accounts]]\nname = "hl-main"\nvenue = "hyperliquid"\n'
        + f'budget = "{budget}"\naddress = "{address}"\nagent_key_env = "{AGENT_KEY_ENV}"\n',
        encoding="utf-8",
    )
    return path


async def qualify_hl(config: Path, agent_key: str) -> tuple[int, dict[str, Any], str]:
    result = await cli(
        "venue",
        "qualify",
        "--account",
        "hl-main",
        "--config",
        str(config),
        "--json",
        env={**ENV, AGENT_KEY_ENV: agent_key},
    )
    assert result.out, result.err
    assert agent_key not in result.out + result.err  # the key is never shown
    return result.code, json.loads(result.out), result.err


def by_subject(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(check["subject"]): check for check in answer["checks"]}


async def test_an_emulator_account_with_an_approved_agent_qualifies(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    account, agent = Account.create(), Account.create()
    await sandbox.add_account(account.address, "10000")
    await sandbox.approve_agent(account.address, agent.address)
    config = hl_config(tmp_path, sandbox.base_url, account.address, budget="5000")

    code, answer, err = await qualify_hl(config, agent.key.hex())

    assert code == 0, json.dumps(answer, indent=2) + err
    assert (answer["venue"], answer["world"]) == ("hyperliquid", "emulator")
    checks = by_subject(answer)
    assert {"BTC-PERP", "ETH-PERP", "SOL-PERP", "budget", "margin mode"} <= set(checks)
    assert checks["margin mode"]["reason"] == "cross"
    # read only: no signed action reached the emulator (no nonce used, no order placed)
    venue = sandbox.venue
    assert venue.nonces == {} and venue.orders == {}


async def test_an_agent_not_approved_and_an_unfunded_budget_say_no(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    account, agent = Account.create(), Account.create()
    await sandbox.add_account(account.address, "100")
    config = hl_config(tmp_path, sandbox.base_url, account.address, budget="1000000")

    code, answer, _ = await qualify_hl(config, agent.key.hex())

    assert code == 1
    checks = by_subject(answer)
    failed = {subject for subject, check in checks.items() if not check["ok"]}
    assert failed == {"budget", "agent wallet"}, failed
    assert (
        f"{agent.address} is not approved for {account.address}"
        in (checks["agent wallet"]["reason"])
    )
    assert checks["agent wallet"]["fix"].startswith("approve this agent wallet")
    # 100 USDC at the 20x the emulator sets by default carries 2000 of exposure
    assert checks["budget"]["fix"].startswith(
        "lower the account's budget in config to at most 2000"
    )
    venue = sandbox.venue
    assert venue.nonces == {} and venue.orders == {}


async def test_a_missing_agent_key_is_one_line_naming_its_variable(tmp_path: Path) -> None:
    account = Account.create()
    config = hl_config(tmp_path, f"http://127.0.0.1:{free_port()}", account.address, "10")
    environ = {key: value for key, value in ENV.items() if key != AGENT_KEY_ENV}
    result = await cli(
        "venue", "qualify", "--account", "hl-main", "--config", str(config), env=environ
    )
    assert result.code == 1 and result.out == ""
    (line,) = result.err.splitlines()
    assert line.startswith("error: cannot open venue 'hyperliquid': ")
    assert f"environment variable {AGENT_KEY_ENV}" in line


async def test_a_venue_that_does_not_answer_says_no_once(tmp_path: Path) -> None:
    account, agent = Account.create(), Account.create()
    nobody = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    config = hl_config(tmp_path, nobody, account.address, "10")
    code, answer, _ = await qualify_hl(config, agent.key.hex())
    assert code == 1
    (check,) = answer["checks"]
    assert (check["subject"], check["ok"]) == ("read", False)
    assert "VenueUnavailable" in check["reason"] and "fix" in check


async def test_exposure_on_the_emulator_counts_positions_and_open_orders(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    wallets = HlWallets(Account.create(), Account.create())
    await sandbox.add_account(wallets.address, "10000")
    await sandbox.approve_agent(wallets.address, wallets.agent.address)
    exchange = await exchange_for(sandbox, wallets)
    gtc = {"limit": {"tif": "Gtc"}}
    rested = await sdk(exchange.order, "BTC", True, 0.01, 59000, gtc)  # below the mark: rests
    filled = await sdk(exchange.order, "ETH", True, 0.1, 3000, gtc)  # at the mark: fills
    assert "resting" in rested["response"]["data"]["statuses"][0], rested
    assert "filled" in filled["response"]["data"]["statuses"][0], filled
    nonces, orders = json.dumps(sandbox.venue.nonces), sorted(sandbox.venue.orders)
    config = hl_config(tmp_path, sandbox.base_url, wallets.address, budget="5000")

    code, answer, err = await qualify_hl(config, wallets.agent.key.hex())

    assert code == 0, json.dumps(answer, indent=2) + err
    checks = by_subject(answer)
    # the resting buy at its limit (0.01 x 59000) and the ETH position at the mark (0.1 x 3000)
    assert checks["exposure"]["reason"].startswith("890 USDC in use")
    assert checks["open orders"]["reason"].startswith("1 on the venue")
    # what the orders did is all the emulator saw: qualify signed nothing
    assert json.dumps(sandbox.venue.nonces) == nonces and sorted(sandbox.venue.orders) == orders


async def test_the_docs_walkthrough_hl_sandbox_demo_then_qualify(tmp_path: Path) -> None:
    """docs/venues.md step 1, as a person runs it: `countersign hl-sandbox --demo` prints an
    account and an agent key; a config naming them qualifies."""
    port = free_port()
    process, lines = await start_command(
        "hl-sandbox", "--port", str(port), "--demo", ready=lambda line: "SDK:" in line
    )
    try:
        said = dict(
            (name.strip(), value.split()[0])
            for name, _, value in (line.partition(":") for line in lines)
            if name.strip() in ("demo account", "agent key")
        )
        config = hl_config(
            tmp_path, f"http://127.0.0.1:{port}", said["demo account"], budget="5000"
        )
        code, answer, err = await qualify_hl(config, said["agent key"])
        assert code == 0, json.dumps(answer, indent=2) + err
        assert answer["world"] == "emulator"
        assert by_subject(answer)["agent wallet"]["ok"] is True
    finally:
        process.terminate()
        await process.wait()
