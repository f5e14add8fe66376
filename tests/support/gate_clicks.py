"""A card click straight into the click's first write (store/claims/click_writes.py), as the
card consumer submits it: for the tests of the database's click gate."""

from __future__ import annotations

from typing import Any

from store import Click, ClickWrites, FirstWrite, Operation, Store

ENVELOPE: dict[str, Any] = {"header": {"event_type": "card.action.trigger"}}


def card_click(op: Operation, action: str, event_id: str, **change: str) -> Click:
    values = {"operator_open_id": "ou_alice", "chat_id": "oc_ops", "message_id": op.card_message_id}
    values.update(change)
    return Click(op.id, action, op.confirm_digest, event_id=event_id, **values)


async def first_write(store: Store, click: Click) -> FirstWrite:
    writes = ClickWrites(store, "callback")
    assert click.event_id is not None
    return await writes.outcome(writes.enqueue(click.event_id, ENVELOPE, click))
