"""What the finance domain binds per venue (world, executor, the network on the card) and what
it refuses in the accounts' venue settings, before anything opens."""

from __future__ import annotations

from typing import Any

import pytest

from store import World
from tests.support.factories import ORDER_PAYLOAD
from workers.domains.finance.domain import FinanceDomain
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.settings import FinanceSettings
from workers.domains.finance.words import WORDS

FINANCE = FinanceDomain()
ADDRESS = "0x" + "ab" * 20


def settings(*accounts: dict[str, Any], network: str | None = "emulator") -> FinanceSettings:
    table: dict[str, Any] = {"accounts": list(accounts)}
    if network is not None:
        table["hyperliquid"] = {"network": network, "allow_mainnet": network == "mainnet"}
    return FinanceSettings.model_validate(table)


HL = {"name": "hl-main", "venue": "hyperliquid", "budget": "1000", "address": ADDRESS,
      "agent_key_env": "HL_AGENT_KEY"}  # fmt: skip
SIM = {"name": "sim-main", "venue": "sim", "budget": "1000"}
ON_HL = FinanceOrderV1.model_validate(
    {**ORDER_PAYLOAD, "venue": "hyperliquid", "account": "hl-main"}
)
ON_SIM = FinanceOrderV1.model_validate(ORDER_PAYLOAD)


@pytest.mark.parametrize(
    ("network", "world", "local"),
    [
        ("emulator", World.EMULATOR, True),
        ("testnet", World.TESTNET, False),
        ("mainnet", World.LIVE, False),
    ],
)
def test_a_hyperliquid_order_is_bound_to_its_network_and_says_it(
    network: str, world: World, local: bool
) -> None:
    config = settings(SIM, HL, network=network)
    assert FINANCE.world(ON_HL, config) is world
    assert FINANCE.executor(ON_HL, config) == ("hyperliquid", "1")
    additions = FINANCE.preconditions(ON_HL, config, None)
    assert additions == {"terms": [{"name": "network", "value": network}], "simulated": local}
    assert FINANCE.project(ON_HL)["simulated"] is False  # until its network says otherwise
    assert set(FINANCE.worlds(config)) == {World.SIMULATED, world}


def test_a_sim_order_stays_what_it_was() -> None:
    config = settings(SIM, network=None)
    assert FINANCE.world(ON_SIM, config) is World.SIMULATED
    assert FINANCE.executor(ON_SIM, config) == ("sim-venue", "1")
    assert FINANCE.preconditions(ON_SIM, config, None) == {}
    assert FINANCE.project(ON_SIM)["simulated"] is True
    assert "network" not in [t["name"] for t in FINANCE.project(ON_SIM)["terms"]]
    assert FINANCE.worlds(config) == [World.SIMULATED] == FINANCE.worlds(FinanceSettings())


def test_the_network_has_a_label_in_both_languages() -> None:
    label = WORDS.terms["network"]
    assert label.en == "Network" and label.zh


def test_a_well_configured_hyperliquid_account_has_no_problems() -> None:
    assert FINANCE.config_problems(settings(SIM, HL)) == []


@pytest.mark.parametrize(
    ("account", "network", "fields"),
    [
        ({**HL, "address": None}, "emulator", ["accounts[0].address"]),
        ({**HL, "agent_key_env": None}, "emulator", ["accounts[0].agent_key_env"]),
        (HL, None, ["hyperliquid"]),
        ({**SIM, "address": ADDRESS}, None, ["accounts[0].address"]),
        ({**SIM, "agent_key_env": "HL_AGENT_KEY"}, None, ["accounts[0].agent_key_env"]),
        ({**SIM, "venue": "nowhere"}, None, ["accounts[0].venue"]),
    ],
    ids=["no-address", "no-key-variable", "no-table", "sim-address", "sim-key", "unknown-venue"],
)
def test_each_venue_setting_problem_names_its_field_and_the_fix(
    account: dict[str, Any], network: str | None, fields: list[str]
) -> None:
    problems = FINANCE.config_problems(
        settings({k: v for k, v in account.items() if v is not None}, network=network)
    )
    assert [p.field for p in problems] == fields
    assert all(p.reason and p.fix for p in problems)
    # the key's variable is named, never read here: nothing about its value appears
    assert all("HL_AGENT_KEY=" not in p.reason for p in problems)


def test_each_hyperliquid_agent_key_is_a_secret_start_up_requires_by_its_variable() -> None:
    config = settings(SIM, HL, {**HL, "name": "hl-two", "agent_key_env": "HL_TWO_KEY"})
    secrets = FINANCE.secret_envs(config)
    assert [(s.field, s.name) for s in secrets] == [
        ("accounts[1].agent_key_env", "HL_AGENT_KEY"),
        ("accounts[2].agent_key_env", "HL_TWO_KEY"),
    ]
    assert all(s.fix.startswith(f"export {s.name}=<") and ADDRESS in s.fix for s in secrets)
    assert FINANCE.secret_envs(settings(SIM, network=None)) == []
