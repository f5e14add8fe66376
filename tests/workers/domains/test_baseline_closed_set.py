"""Near-miss baseline data never lets a draft through silently (issue 30, item 6): contract
statuses are a closed set, compared without case or surrounding whitespace, and so are the
counterparty keys. A status outside the set makes the file invalid: `config check` names the
file, the key and the allowed statuses, and a draft filed against it is stamped unchecked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.config import check_data
from workers.domains.message.baseline import (
    CONTRACT_STATUSES,
    UNAVAILABLE_STAMP,
    FileBaseline,
    gate,
    read_baseline,
)

ALLOWED = ", ".join(CONTRACT_STATUSES)


def baseline_file(tmp_path: Path, counterparties: dict[str, Any]) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"counterparties": counterparties}))
    return path


def contract(status: str) -> dict[str, Any]:
    return {"contract": {"status": status, "evidence": "MSA v3"}}


@pytest.mark.parametrize(
    ("key", "status"),
    [
        ("acme-supplier", "signed "),
        ("acme-supplier", " SIGNED"),
        ("acme-supplier", "Delivered\t"),
        ("Acme-Supplier", "signed"),
        (" acme-supplier ", "signed"),
        ("ACME-SUPPLIER", "Signed "),
    ],
)
def test_a_near_miss_of_a_settled_contract_still_refuses(
    tmp_path: Path, key: str, status: str
) -> None:
    path = baseline_file(tmp_path, {key: contract(status)})
    said = gate(read_baseline(FileBaseline(path), "acme-supplier"), forced=False)
    [problem] = said.problems
    assert problem.field == "payload.counterparty"
    assert f"contract {status.strip().lower()}" in problem.reason


@pytest.mark.parametrize("status", ["Signed (v3)", "sign", "signed-v3", "", "  "])
def test_a_status_outside_the_set_is_never_read_as_unsettled(tmp_path: Path, status: str) -> None:
    path = baseline_file(tmp_path, {"Acme-Supplier": contract(status)})
    reading = read_baseline(FileBaseline(path), "acme-supplier")
    assert reading.baseline is None and reading.unavailable is not None
    assert "counterparties.Acme-Supplier.contract.status" in reading.unavailable
    assert ALLOWED in reading.unavailable
    said = gate(reading, forced=False)
    assert said.problems == []  # filed, but the card says the guard was off: never silent
    assert said.stamp is not None and said.stamp.startswith(UNAVAILABLE_STAMP)


def test_two_keys_for_one_counterparty_make_the_file_invalid(tmp_path: Path) -> None:
    path = baseline_file(
        tmp_path, {"acme-supplier": contract("negotiating"), "Acme-Supplier ": contract("signed")}
    )
    reading = read_baseline(FileBaseline(path), "acme-supplier")
    assert reading.unavailable is not None
    assert "'acme-supplier' and 'Acme-Supplier ' name one counterparty" in reading.unavailable


def config_with(path: Path) -> dict[str, Any]:
    destination = {
        "name": "acme",
        "chat_id": "oc_acme",
        "counterparty": "acme-supplier",
        "baseline_file": str(path),
    }
    return {
        "audiences": [{"name": "ops", "chat_id": "oc_ops", "operators": ["ou_alice"]}],
        "proposers": [{"name": "agent", "token_env": "AGENT_TOKEN"}],
        "domains": {"message": {"destinations": [destination]}},
    }


def test_config_check_names_the_file_the_key_and_the_allowed_statuses(tmp_path: Path) -> None:
    path = baseline_file(tmp_path, {"Acme-Supplier": contract("Signed (v3)")})
    _settings, problems = check_data(config_with(path), {"AGENT_TOKEN": "y" * 16})
    [problem] = problems
    assert problem.field == "domains.message.destinations[0].baseline_file"
    assert str(path) in problem.reason
    assert "counterparties.Acme-Supplier.contract.status" in problem.reason
    assert "'Signed (v3)' is not a contract status" in problem.reason
    assert ALLOWED in problem.reason and ALLOWED in problem.fix


def test_config_check_passes_a_status_that_differs_only_in_case_and_whitespace(
    tmp_path: Path,
) -> None:
    path = baseline_file(tmp_path, {"Acme-Supplier ": contract(" Signed ")})
    _settings, problems = check_data(config_with(path), {"AGENT_TOKEN": "y" * 16})
    assert problems == []
