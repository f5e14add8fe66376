"""`prune` (store/retention/prune.py) on history driven end to end through the bot and the
sandbox, both backends: what is past its window shrinks (inbox payloads to their digest,
card revisions and delivered results' attempts to the newest, dead sessions gone), and
nothing the record or an unfinished operation needs is touched: the audit log keeps every
entry and its chain, each decision's evidence is the digest its pruned inbox entry now
holds, an operation still awaiting keeps every card revision, an entry still being
processed keeps its payload. A dry run changes nothing; a second prune finds nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import func, insert, select

from store import (
    AuditChain,
    AuditRow,
    CardDeliveryRow,
    DeliveryRow,
    Inbox,
    InboxRow,
    Retention,
    Store,
    WebSessionRow,
    WebSessions,
    payload_digest,
    prune,
)
from store.schema.tables import DeliveryAttemptRow
from tests.support.audit import link_all
from tests.support.factories import order_request
from tests.support.history_driven import drive
from tests.support.stack import StackFactory, make_stack  # noqa: F401  (fixture)

EVERYTHING_PAST = timedelta(0)  # every row older than now is past its window
RETENTION = Retention(
    inbox=EVERYTHING_PAST,
    card_revisions=EVERYTHING_PAST,
    delivery_attempts=EVERYTHING_PAST,
    session_idle=timedelta(minutes=30),
    session_max=timedelta(hours=12),
)


async def rows(store: Store, table: Any) -> list[Any]:
    async with store.read() as conn:
        return list(await conn.execute(select(table).order_by(table.id)))


async def card_revisions(store: Store) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for row in await rows(store, CardDeliveryRow):
        found.setdefault(row.operation_id, []).append(row.id)
    return found


async def audit_rows(store: Store) -> int:
    async with store.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(AuditRow))).scalar_one())


async def test_prune_shrinks_what_is_past_its_window_and_keeps_the_record(
    make_stack: StackFactory,  # noqa: F811  (the fixture imported above)
) -> None:
    stack = await make_stack("ws")
    store = stack.store
    await drive(stack)
    waiting, _card = await stack.offered(order_request("prune-still-waiting"))
    # a click received but not processed yet (a crash before its answer): never touched
    pending = await Inbox(store).receive("callback", "ev-still-processing", {"event": "x"})
    # a delivered result tried three times: the last attempt is kept
    [delivered] = [d for d in await rows(store, DeliveryRow) if d.state == "delivered"][:1]
    async with store.engine.begin() as conn:
        for _ in range(2):
            await conn.execute(
                insert(DeliveryAttemptRow).values(
                    delivery_id=delivered.id, at=store.clock(), ok=False, code=500
                )
            )
    sessions = WebSessions(store, idle_s=1800, max_s=43200)
    revoked, _ = await sessions.open("ou_alice", "t", "Alice")
    await sessions.revoke(revoked)
    live, _ = await sessions.open("ou_bob", "t", "Bob")
    await link_all(store)

    inbox_before = await rows(store, InboxRow)
    revisions_before = await card_revisions(store)
    attempts_before = await rows(store, DeliveryAttemptRow)
    entries_before = await audit_rows(store)
    assert any(row.answer for row in inbox_before)  # stored answers: whole cards
    assert len(revisions_before[waiting["id"]]) >= 1

    dry = await prune(store, RETENTION, dry_run=True)
    assert dry.inbox_stripped > 0 and dry.card_revisions > 0 and dry.delivery_attempts == 2
    assert dry.sessions == 1
    assert await rows(store, InboxRow) == inbox_before  # a dry run changes nothing
    assert await card_revisions(store) == revisions_before

    report = await prune(store, RETENTION)
    assert report == dry

    # the inbox: each processed entry is its payload's digest, its answer gone
    inbox_after = {row.key: row for row in await rows(store, InboxRow)}
    assert len(inbox_after) == len(inbox_before)  # rows stay: a replay is still known
    digests = set()
    for before in inbox_before:
        after = inbox_after[before.key]
        if before.status == "received":
            assert after.payload == before.payload  # still being processed
            continue
        kept = json.loads(after.payload)
        assert kept == {"pruned": True, "sha256": payload_digest(json.loads(before.payload))}
        assert after.answer is None and after.status == before.status
        digests.add(kept["sha256"])
    assert json.loads(inbox_after[pending.entry.key].payload) == {"event": "x"}

    # the audit log: every entry kept and still chained; the evidence of each decision is
    # the digest its pruned inbox entry now holds
    assert await audit_rows(store) == entries_before
    check = await AuditChain(store).verify()
    assert check.problem is None, check.problem
    evidence = {row.evidence for row in await rows(store, AuditRow) if row.evidence}
    decisions = {
        row.evidence
        for row in await rows(store, AuditRow)
        if row.evidence and row.actor.startswith("operator:")
    }
    assert decisions and decisions <= digests, (decisions - digests, evidence)

    # card revisions: a settled operation keeps its newest; the waiting one keeps them all
    revisions_after = await card_revisions(store)
    assert revisions_after[waiting["id"]] == revisions_before[waiting["id"]]
    for operation_id, ids in revisions_before.items():
        if operation_id != waiting["id"]:
            assert revisions_after[operation_id] == [max(ids)], operation_id

    # delivery attempts: a delivered result keeps its last
    attempts_after = [row for row in await rows(store, DeliveryAttemptRow)]
    mine = [row.id for row in attempts_after if row.delivery_id == delivered.id]
    assert mine == [max(row.id for row in attempts_before if row.delivery_id == delivered.id)]

    # sessions: the revoked one is gone, the live one stays
    tokens = {row.token_hash for row in await rows_of_sessions(store)}
    assert len(tokens) == 1 and await sessions.find(live, touch=False) is not None
    assert await sessions.find(revoked, touch=False) is None

    again = await prune(store, RETENTION)
    assert again.total() == 0, again


async def rows_of_sessions(store: Store) -> list[Any]:
    async with store.read() as conn:
        return list(await conn.execute(select(WebSessionRow)))
