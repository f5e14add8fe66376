"""The baseline gate as a pure function, and its file read: each rule alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from workers.domains.message.baseline import (
    FACTS_SHOWN,
    OVERRIDE_STAMP,
    SHOWN_CHARS,
    UNAVAILABLE_STAMP,
    BaselineReading,
    BaselineUnavailable,
    Contract,
    CounterpartyBaseline,
    Fact,
    FileBaseline,
    gate,
    read_baseline,
)

SIGNED = Contract(status="signed", evidence="MSA v3", at=datetime(2026, 11, 2, tzinfo=UTC))


def reading(**baseline: object) -> BaselineReading:
    return BaselineReading("acme-supplier", CounterpartyBaseline.model_validate(baseline))


@pytest.mark.parametrize("status", ["signed", "delivered", "Signed"])
def test_a_settled_contract_refuses_with_its_evidence_and_the_way_out(status: str) -> None:
    said = gate(reading(contract={"status": status, "evidence": "MSA v3"}), forced=False)
    [problem] = said.problems
    assert problem.field == "payload.counterparty"
    assert f"contract {status.lower()}" in problem.reason and "MSA v3" in problem.reason
    assert "force_despite_signed_contract" in problem.fix
    assert said.stamp is None


def test_forcing_files_it_with_the_override_stamp() -> None:
    said = gate(BaselineReading("acme-supplier", CounterpartyBaseline(contract=SIGNED)), True)
    assert said.problems == []
    assert said.stamp == f"{OVERRIDE_STAMP} filed despite the contract signed on 2026-11-02: MSA v3"


@pytest.mark.parametrize("status", ["negotiating", "draft", "expired"])
def test_an_unsettled_contract_lets_it_through_unstamped(status: str) -> None:
    said = gate(reading(contract={"status": status}), forced=False)
    assert (said.problems, said.stamp) == ([], None)


def test_an_unreadable_source_files_it_stamped_as_unchecked() -> None:
    said = gate(BaselineReading("acme-supplier", unavailable="gone"), forced=False)
    assert said.problems == []
    assert said.stamp is not None and said.stamp.startswith(UNAVAILABLE_STAMP)
    assert "guard was off" in said.stamp


def test_the_freshest_facts_are_shown_each_cut_to_size() -> None:
    facts = [
        Fact(at=datetime(2026, 11, day, tzinfo=UTC), text=f"fact {day} " + "x" * 200)
        for day in (3, 9, 1, 7, 5)
    ]
    said = gate(BaselineReading("acme-supplier", CounterpartyBaseline(facts=facts)), False)
    assert said.stamp is not None and said.stamp.startswith("[BASELINE FACTS: ")
    shown = said.stamp.removeprefix("[BASELINE FACTS: ").removesuffix("]").split("; ")
    assert [each.split(" ")[0] for each in shown] == ["2026-11-09", "2026-11-07", "2026-11-05"]
    assert len(shown) == FACTS_SHOWN
    assert all(len(each) <= len("2026-11-09 ") + SHOWN_CHARS for each in shown)


def test_nothing_on_record_says_nothing() -> None:
    assert gate(BaselineReading("acme-supplier"), forced=False).stamp is None
    assert gate(None, forced=True).stamp is None


def test_the_file_is_read_for_the_counterparty_and_a_broken_one_is_unavailable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(
        json.dumps({"counterparties": {"acme-supplier": {"contract": {"status": "signed"}}}})
    )
    found = read_baseline(FileBaseline(path), "acme-supplier")
    assert found.baseline is not None and found.baseline.contract is not None
    assert read_baseline(FileBaseline(path), "globex").baseline is None

    toml = tmp_path / "baseline.toml"
    toml.write_text(
        '[counterparties.acme-supplier]\nfacts = [{at = 2026-11-20T10:00:00Z, text = "ok"}]\n'
    )
    from_toml = read_baseline(FileBaseline(toml), "acme-supplier").baseline
    assert from_toml is not None and [f.text for f in from_toml.facts] == ["ok"]

    for broken in ("{not json", json.dumps({"counterparty": {}}), json.dumps([1])):
        path.write_text(broken)
        said = read_baseline(FileBaseline(path), "acme-supplier")
        assert said.baseline is None and said.unavailable is not None
    path.unlink()
    with pytest.raises(BaselineUnavailable, match="cannot be read"):
        FileBaseline(path).read("acme-supplier")
