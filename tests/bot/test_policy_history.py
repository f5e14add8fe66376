"""The effective policy's history (bot/config/policy_document.py, bot/app/policy_record.py,
store/policy/ledger.py): a change reads as what changed ("operators: added Bob"), each
start records a version only when the policy differs, two replicas starting on one new
config record it once, and each version is an audit entry whose evidence is the digest of
the document the store keeps."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from sqlalchemy import select

from bot.app.policy_record import announcement, announcement_uuid, record_policy
from bot.config import Settings, parse
from bot.config.policy_document import (
    PolicyChange,
    document_digest,
    effective_policy,
    policy_changes,
    snapshot,
)
from store import POLICY_EVENT, AuditRow, PolicyLedger, Store, policy_subject
from tests.support.api import settings_data

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_dave": "Dave"}
LARGE = {
    "name": "large-orders",
    "kinds": ["finance.order"],
    "above": "50000",
    "currency": "USDC",
    "required_confirmations": 2,
}


def settings(**overrides: Any) -> Settings:
    return parse({**settings_data(), "approval_rules": [LARGE], "people": PEOPLE, **overrides})


def changed(data: dict[str, Any], edit: Any) -> Settings:
    edited = copy.deepcopy(data)
    edit(edited)
    return parse(edited)


def base_data() -> dict[str, Any]:
    return {**settings_data(), "approval_rules": [LARGE], "people": PEOPLE}


def lines(before: Settings, after: Settings) -> list[PolicyChange]:
    return policy_changes(effective_policy(before), effective_policy(after), PEOPLE)


def test_a_change_reads_as_who_was_added_and_which_threshold_moved() -> None:
    data = base_data()

    def edit(config: dict[str, Any]) -> None:
        config["audiences"][0]["operators"].append("ou_dave")
        config["audiences"][0]["operators"].remove("ou_bob")
        config["audiences"][0]["required_confirmations"] = 2
        config["approval_rules"][0]["above"] = "40000"

    assert lines(parse(data), changed(data, edit)) == [
        PolicyChange("ops", "audience ops: operators: added Dave (ou_dave); removed Bob (ou_bob)"),
        PolicyChange("ops", "audience ops: required_confirmations: 1 → 2"),
        PolicyChange(None, "rule large-orders: above: 50000 → 40000"),
    ]


def test_members_are_named_when_added_or_removed_and_lists_of_named_things_by_name() -> None:
    data = base_data()

    def edit(config: dict[str, Any]) -> None:
        del config["audiences"][1]  # treasury
        config["approval_rules"].append({"name": "tiny", "required_confirmations": 3})
        config["domains"]["finance"]["accounts"][0]["budget"] = "5000"
        config["domains"]["message"]["destinations"][0]["auto_send_max_s"] = 600

    said = [change.text for change in lines(parse(data), changed(data, edit))]
    assert "audience treasury: removed" in said
    assert any(line.startswith("rule tiny: added {order: 2,") for line in said), said
    assert "[domains.finance]: accounts.sim-main.budget: 100000 → 5000" in said
    assert "[domains.message]: destinations.acme.auto_send_max_s: none → 600" in said


def test_what_decides_nobodys_rights_is_not_a_change_of_policy() -> None:
    data = base_data()

    def edit(config: dict[str, Any]) -> None:
        config["http"] = {"port": 9999}
        config["execution"] = {"concurrency": 9}
        config["domains"]["finance"]["venue_path"] = "elsewhere.db"

    after = changed(data, edit)
    assert lines(parse(data), after) == []
    assert snapshot(parse(data)).digest == snapshot(after).digest


def test_the_first_policy_is_a_record_and_the_same_policy_is_no_change() -> None:
    assert policy_changes(None, effective_policy(settings())) == [
        PolicyChange(None, "first policy recorded")
    ]
    assert lines(settings(), settings()) == []


async def policy_entries(store: Store) -> list[Any]:
    async with store.read() as conn:
        found = await conn.execute(
            select(AuditRow).where(AuditRow.event == POLICY_EVENT).order_by(AuditRow.id)
        )
        return list(found)


async def test_each_start_records_a_version_only_when_the_policy_differs(store: Store) -> None:
    ledger = PolicyLedger(store)
    first = await record_policy(store, settings(), "config:host-a")
    assert first is not None and first.seq == 1
    assert await ledger.unannounced() == []  # a first record tells the chats nothing
    assert await record_policy(store, settings(), "config:host-a") is None  # a restart, same

    data = base_data()
    data["approval_rules"] = [{**LARGE, "above": "40000"}]
    second = await record_policy(store, parse(data), "config:host-b")
    assert second is not None and second.seq == 2
    assert [line.text for line in second.changes] == ["rule large-orders: above: 50000 → 40000"]
    assert [version.seq for version in await ledger.unannounced()] == [2]
    assert second.audiences["ops"] != first.audiences["ops"]  # the rule names every audience
    assert [version.seq for version in await ledger.history()] == [2, 1]

    # each version is one audit entry; its evidence is the digest of the document kept
    entries = await policy_entries(store)
    assert [(e.operation_id, e.actor, e.evidence) for e in entries] == [
        (policy_subject(1), "config:host-a", first.digest),
        (policy_subject(2), "config:host-b", second.digest),
    ]
    kept = await ledger.version(2)
    assert kept is not None and document_digest(kept.document) == entries[1].evidence

    # which version an operation was filed under, and what changed its audience since
    filed = await ledger.filed_under("ops", first.audiences["ops"], first.at)
    assert filed is not None and filed.seq == 1
    assert [v.seq for v in await ledger.changed_since("ops", 1)] == [2]
    assert await ledger.changed_since("ops", 2) == []


async def test_a_policy_changed_and_changed_back_is_two_versions(store: Store) -> None:
    ledger = PolicyLedger(store)
    data = base_data()
    data["approval_rules"] = [{**LARGE, "above": "40000"}]
    first = await record_policy(store, settings(), "config:a")
    await record_policy(store, parse(data), "config:a")
    back = await record_policy(store, settings(), "config:a")
    assert first is not None and back is not None and back.seq == 3
    assert back.digest == first.digest
    # an operation filed after the change back was filed under version 3, not 1
    filed = await ledger.filed_under("ops", back.audiences["ops"], back.at)
    assert filed is not None and filed.seq == 3


async def test_two_replicas_starting_on_one_new_config_record_it_once(
    store: Store, replica: Store
) -> None:
    await record_policy(store, settings(), "config:a")
    data = base_data()
    data["audiences"][0]["required_confirmations"] = 2
    new = parse(data)
    results = await asyncio.gather(
        record_policy(store, new, "config:a"), record_policy(replica, new, "config:b")
    )
    recorded = [result for result in results if result is not None]
    assert len(recorded) == 1 and recorded[0].seq == 2
    assert [v.seq for v in await PolicyLedger(store).history()] == [2, 1]
    entries = await policy_entries(store)
    assert [e.operation_id for e in entries] == [policy_subject(1), policy_subject(2)]


async def test_the_chat_line_says_what_changed_for_its_audience_and_that_old_cards_are_stale(
    store: Store,
) -> None:
    await record_policy(store, settings(), "config:a")
    data = base_data()
    data["audiences"][1]["operators"].append("ou_dave")  # treasury's only
    version = await record_policy(store, parse(data), "config:a")
    assert version is not None
    assert version.lines_for("ops") == []  # nothing of ops changed: its chat is not told
    said = announcement(version, "treasury", version.lines_for("treasury"), True, "en")
    assert "version 2" in said and "config:a" in said
    assert "• audience treasury: operators: added Dave (ou_dave)" in said
    assert "Cards of treasury posted before this change are stale" in said
    uuid = announcement_uuid(2, "oc_" + "x" * 60)
    assert len(uuid) <= 50 and uuid == announcement_uuid(2, "oc_" + "x" * 60)
