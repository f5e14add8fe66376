"""A click costs two writes: one before its answer (its inbox entry and its decision, one
group-commit intent) and one after (the answer kept for replays, with the card it carried
or the refusal). Counted on the store's own writer, on both backends. Its audit entry names
the digest of the click as the inbox keeps it."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from bot.ingress.callbacks import INBOX_KIND, CallbackConsumer
from store import ANSWERED, AuditChain, CardLedger, Inbox, State, Store
from tests.support.audit import evidence_of, inbox_digest, link_all
from tests.support.clicks import click_on, consumer
from tests.support.factories import offered
from tests.support.waiting import eventually


def writes(store: Store) -> tuple[int, int]:
    """(intents committed or failed, SQLAlchemy turns lent) so far."""
    assert store.writer is not None
    return store.writer.stats.intents, store.writer.stats.turns


async def answered_and_counted(
    store: Store, take: CallbackConsumer, envelope: dict[str, Any], event_id: str
) -> tuple[dict[str, Any], tuple[int, int]]:
    before = writes(store)
    answer = await take.on_callback(envelope, "ws")

    async def stored() -> bool:
        entry = await Inbox(store).get(INBOX_KIND, event_id)
        return entry is not None and entry.status == ANSWERED

    await eventually(stored)
    # The writer counts a batch after its COMMIT returns, and another connection may see the row
    # first: one more intent, taken only after that batch is counted, is the barrier.
    assert store.writer is not None
    await store.writer.execute("SELECT 1")
    after = writes(store)
    return answer, (after[0] - before[0] - 1, after[1] - before[1])


async def test_a_confirm_is_one_write_before_its_answer_and_one_after(store: Store) -> None:
    op = await offered(store)
    take = consumer(store)
    answer, (intents, turns) = await answered_and_counted(
        store, take, click_on(op, "ev-confirm"), "ev-confirm"
    )
    assert answer["toast"]["type"] == "success" and answer["card"]["type"] == "raw"
    assert (intents, turns) == (2, 0)
    claimed = await store.get(op.id)
    assert claimed is not None and claimed.state is State.CLAIMED
    assert await store.claim_count(op.id) == 1
    # the second write recorded the card the answer carried: the worker leaves it alone
    assert claimed.card_version == claimed.version and claimed.card_due_at is None
    assert [(d.action, d.version) for d in await CardLedger(store).history(op.id)] == [
        ("send", op.version),
        ("callback", claimed.version),
    ]


async def test_a_reject_is_one_write_before_its_answer_and_one_after(store: Store) -> None:
    op = await offered(store)
    answer, counted = await answered_and_counted(
        store, consumer(store), click_on(op, "ev-reject", action="reject"), "ev-reject"
    )
    assert answer["toast"]["type"] == "success" and counted == (2, 0)
    rejected = await store.get(op.id)
    assert rejected is not None and rejected.state is State.REJECTED
    [confirmation] = await store.confirmations(op.id)
    assert confirmation.accepted and confirmation.event_id == "ev-reject"


async def test_a_refused_click_is_one_write_before_its_answer_and_one_after(
    store: Store,
) -> None:
    op = await offered(store)
    answer, counted = await answered_and_counted(
        store, consumer(store), click_on(op, "ev-outsider", operator="ou_mallory"), "ev-outsider"
    )
    assert answer["toast"]["type"] == "error" and counted == (2, 0)
    [confirmation] = await store.confirmations(op.id)
    assert (confirmation.accepted, confirmation.reason_code) == (False, "operator_not_allowed")
    assert await store.get(op.id) == op


async def test_a_replayed_click_writes_nothing_new_and_gets_the_first_answer(
    store: Store,
) -> None:
    op = await offered(store)
    take = consumer(store)
    first, _ = await answered_and_counted(store, take, click_on(op, "ev-twice"), "ev-twice")
    before = writes(store)
    again = await take.on_callback(click_on(op, "ev-twice"), "ws")
    assert again == first
    assert writes(store)[0] - before[0] == 1  # the entry's insert, which found the first
    assert len(await store.confirmations(op.id)) == 1 and await store.claim_count(op.id) == 1


@pytest.mark.parametrize(
    ("action", "operator", "event"),
    [
        ("confirm", "ou_alice", "confirmed"),
        ("reject", "ou_alice", "rejected"),
        ("confirm", "ou_mallory", "click_refused"),
    ],
)
async def test_a_decisions_audit_entry_names_the_digest_of_the_click_it_came_from(
    store: Store, action: str, operator: str, event: str
) -> None:
    op = await offered(store)
    event_id = f"ev-{action}-{operator}"
    await answered_and_counted(
        store, consumer(store), click_on(op, event_id, action=action, operator=operator), event_id
    )
    evidence = await evidence_of(store, op.id, event)
    assert evidence is not None and evidence == await inbox_digest(store, INBOX_KIND, event_id)
    # and the chain vouches for it: an entry whose evidence is edited no longer fits
    await link_all(store)
    async with store.write() as conn:
        await conn.execute(
            text("UPDATE audit SET evidence = :other WHERE evidence = :evidence"),
            {"other": "0" * 64, "evidence": evidence},
        )
    check = await AuditChain(store).verify()
    assert not check.holds and "was edited" in str(check.problem)
