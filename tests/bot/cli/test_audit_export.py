"""`countersign audit export` and `audit verify FILE`, the real processes on the test backend:
an export in either format verifies; an edited, removed or moved line is named; an
audience's export keeps every link but shows only its own entries; a window starts and ends
where the clock says; bad input names the flag or the record and changes nothing."""

from __future__ import annotations

import csv
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.app.policy_record import record_policy
from bot.config import parse
from store import (
    Audience,
    Click,
    DelegationLedger,
    Store,
    delegation_subject,
    link_hash,
    policy_subject,
    record_material,
)
from tests.support.api import settings_data
from tests.support.audit import link_all
from tests.support.backends import Backend
from tests.support.factories import offered
from tests.support.processes import ENV, backend_config, cli, free_port

DESK = Audience("desk", "oc_desk", ("ou_alice", "ou_bob"))


async def decided_history(store: Store) -> list[str]:
    """Operations in two audiences, each offered then confirmed; their ids, oldest first."""
    ids = []
    for audience in ({}, {"audience": DESK}, {}, {"audience": DESK}):
        op = await offered(store, **audience)
        await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
        ids.append(op.id)
    return ids


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture
async def exported_store(backend: Backend, store: Store, tmp_path: Path) -> tuple[str, int]:
    await decided_history(store)
    linked = await link_all(store)
    return str(backend_config(backend, tmp_path, free_port())), linked


async def test_an_export_verifies_and_an_edited_removed_or_moved_line_is_named(
    exported_store: tuple[str, int], tmp_path: Path
) -> None:
    config, linked = exported_store
    path = tmp_path / "audit.jsonl"
    made = await cli("audit", "export", "--out", str(path), "--config", config, env=ENV)
    assert made.code == 0, made.err
    assert f"exported {linked} entries to {path}" in made.err
    records = lines_of(path)
    assert [r["seq"] for r in records] == list(range(1, linked + 1))
    assert {r["event"] for r in records} >= {"proposed", "card_sent", "confirmed"}

    holds = await cli("audit", "verify", str(path), env=ENV)
    assert holds.code == 0, holds.out + holds.err
    assert holds.out.startswith(f"export holds: {linked} entries (entries 1 to {linked})")
    assert records[-1]["entry_hash"] in holds.out  # the hash a witnessed head is checked against

    async def verdict(changed: list[dict[str, Any]]) -> str:
        broken = tmp_path / "changed.jsonl"
        write_lines(broken, changed)
        said = await cli("audit", "verify", str(broken), env=ENV)
        assert said.code == 1, said.out + said.err
        return said.out

    edited = [dict(r) for r in records]
    edited[2]["actor"] = "ou_mallory"
    assert (await verdict(edited)).startswith("export broken: entry 3 was edited")
    removed = records[:3] + records[4:]
    assert (await verdict(removed)).startswith("export broken: entry 4 is missing here")
    moved = [*records[:2], records[3], records[2], *records[4:]]
    assert (await verdict(moved)).startswith("export broken: entry 3 is missing here")
    # moved and renumbered: the place fits, the link to the entry before does not
    renumbered = [*records[:2], {**records[3], "seq": 3}, {**records[2], "seq": 4}, *records[4:]]
    assert (await verdict(renumbered)).startswith("export broken: entry 3 does not follow entry 2")
    # a line edited and given the hash that fits it no longer fits its successor's link
    forged = [dict(r) for r in records]
    forged[2]["actor"] = "ou_mallory"
    forged[2]["entry_hash"] = link_hash(str(forged[2]["prev_hash"]), record_material(forged[2]))
    assert (await verdict(forged)).startswith("export broken: entry 4 does not follow entry 3")


async def test_a_csv_export_verifies_and_an_edited_cell_is_named(
    exported_store: tuple[str, int], tmp_path: Path
) -> None:
    config, linked = exported_store
    path = tmp_path / "audit.csv"
    made = await cli(
        "audit", "export", "--format", "csv", "--out", str(path), "--config", config, env=ENV
    )
    assert made.code == 0, made.err
    with path.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == linked and rows[0]["from_state"] == ""  # a creation comes from nothing
    holds = await cli("audit", "verify", str(path), env=ENV)
    assert holds.code == 0 and f"export holds: {linked} entries" in holds.out, holds.out

    rows[1]["event"] = "rejected"
    with path.open("w", encoding="utf-8", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    broken = await cli("audit", "verify", str(path), env=ENV)
    assert broken.code == 1 and broken.out.startswith("export broken: entry 2 was edited")


async def test_an_audiences_export_shows_its_own_entries_and_keeps_every_link(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    ids = await decided_history(store)
    # a policy version is the whole house's: every audience's export shows it
    version = await record_policy(store, parse(settings_data()), "config:a")
    assert version is not None
    # a delegation is its audience's
    ends = store.clock() + timedelta(days=1)
    ledger = DelegationLedger(store)
    desk_grant = await ledger.grant("desk", "ou_alice", "ou_dave", ends_at=ends, by="admin:cli")
    ops_grant = await ledger.grant("ops", "ou_alice", "ou_dave", ends_at=ends, by="admin:cli")
    linked = await link_all(store)
    config = str(backend_config(backend, tmp_path, free_port()))
    made = await cli("audit", "export", "--audience", "desk", "--config", config, env=ENV)
    assert made.code == 0, made.err
    records = [json.loads(line) for line in made.out.splitlines()]
    assert [r["seq"] for r in records] == list(range(1, linked + 1))  # the run is whole
    shown = [r for r in records if not r["redacted"]]
    assert {r["operation_id"] for r in shown} == {
        ids[1],
        ids[3],
        policy_subject(1),
        delegation_subject(desk_grant.id),
    }
    assert delegation_subject(ops_grant.id) not in made.out
    [policy] = [r for r in shown if r["operation_id"] == policy_subject(1)]
    assert policy["evidence"] == version.digest and policy["audience"] is None
    shown = [r for r in shown if r is not policy]
    assert {r["audience"] for r in shown} == {"desk"}
    hidden = [r for r in records if r["redacted"]]
    assert hidden and all(r["operation_id"] is None and r["actor"] is None for r in hidden)
    assert ids[0] not in made.out and ids[2] not in made.out

    path = tmp_path / "desk.jsonl"
    path.write_text(made.out, encoding="utf-8")
    holds = await cli("audit", "verify", str(path), env=ENV)
    assert holds.code == 0, holds.out
    assert f"{len(hidden)} of them redacted" in holds.out


async def test_a_window_runs_from_the_first_entry_at_since_to_the_last_before_until(
    exported_store: tuple[str, int], tmp_path: Path
) -> None:
    config, _ = exported_store
    everything = await cli("audit", "export", "--config", config, env=ENV)
    records = [json.loads(line) for line in everything.out.splitlines()]
    since, until = records[2]["at"], records[-2]["at"]
    window = await cli(
        "audit", "export", "--since", since, "--until", until, "--config", config, env=ENV
    )
    assert window.code == 0, window.err
    inside = [json.loads(line) for line in window.out.splitlines()]
    first = next(r["seq"] for r in records if r["at"] >= since)
    past = next(r["seq"] for r in records if r["at"] >= until)
    assert [r["seq"] for r in inside] == list(range(first, past))
    path = tmp_path / "window.jsonl"
    path.write_text(window.out, encoding="utf-8")
    holds = await cli("audit", "verify", str(path), env=ENV)
    assert holds.code == 0 and f"(entries {first} to {past - 1})" in holds.out, holds.out


async def test_bad_input_names_the_flag_or_the_record_and_changes_nothing(
    exported_store: tuple[str, int], tmp_path: Path
) -> None:
    config, _ = exported_store
    late = await cli("audit", "export", "--since", "yesterday", "--config", config, env=ENV)
    assert late.code == 2 and "--since 'yesterday' is not an ISO-8601 date" in late.err
    now = "2026-12-06T10:00:00+00:00"
    earlier = "2026-12-06T09:00:00+00:00"
    backwards = await cli(
        "audit", "export", "--since", now, "--until", earlier, "--config", config, env=ENV
    )
    assert backwards.code == 2 and "--since must be before --until" in backwards.err
    both = await cli("audit", "verify", "x.jsonl", "--store", "--config", config, env=ENV)
    assert both.code == 2 and "a FILE or --store, not both" in both.err
    neither = await cli("audit", "verify", env=ENV)
    assert neither.code == 2 and "an export FILE, or --store" in neither.err

    stranger = tmp_path / "notes.jsonl"
    stranger.write_text('{"seq": 1, "note": "hello"}\n', encoding="utf-8")
    said = await cli("audit", "verify", str(stranger), env=ENV)
    assert said.code == 2, said.out
    assert f"{stranger} record 1 is not an export entry (no operation_id" in said.err
    assert "verify a file written by `countersign audit export`" in said.err
    missing = await cli("audit", "verify", str(tmp_path / "absent.jsonl"), env=ENV)
    assert missing.code == 2 and "cannot read" in missing.err
    # the store's own chain is untouched by any of it
    holds = await cli("audit", "verify", "--store", "--config", config, env=ENV)
    assert holds.code == 0 and holds.out.startswith("audit chain holds"), holds.out
