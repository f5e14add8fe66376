"""The inbox keeps each event once, without its secrets, whatever the length of its key."""

from __future__ import annotations

import asyncio

from bot.ingress.receipts import Receipts
from store.authority import Store
from store.inbox import RECEIVED, Inbox, stored_key


def envelope(event_id: str) -> dict[str, object]:
    return {
        "token": "v1-secret",
        "header": {"event_id": event_id, "token": "v2-secret"},
        "event": {"token": "card-update-secret", "action": {"value": {"v": 1}}},
    }


async def test_many_receipts_in_one_transaction_each_get_their_own_result(store: Store) -> None:
    inbox = Inbox(store)
    assert (await inbox.receive("callback", "ev-old", envelope("ev-old"))).first
    long_key = "ev-" + "x" * 300
    results = await inbox.receive_many(
        "callback",
        [(key, envelope(key)) for key in ("ev-a", "ev-old", long_key, "ev-a")],
    )
    assert [r.first for r in results] == [True, False, True, False]
    assert [r.entry.key for r in results] == ["ev-a", "ev-old", stored_key(long_key), "ev-a"]
    assert await inbox.count("callback", RECEIVED) == 3
    stored = await inbox.get("callback", long_key)
    assert stored is not None and stored.key == stored_key(long_key)
    assert "secret" not in str(stored.payload)
    assert stored.payload["event"]["action"] == {"value": {"v": 1}}


async def test_clicks_received_together_each_keep_their_own_result(
    store: Store,
) -> None:
    receipts = Receipts(Inbox(store), "callback")
    keys = [f"ev-{index}" for index in range(50)] + ["ev-0"]
    try:
        results = await asyncio.gather(*(receipts.receive(key, envelope(key)) for key in keys))
    finally:
        await receipts.stop()
    assert [r.entry.key for r in results] == keys
    assert sum(r.first for r in results) == 50  # the second ev-0 is a replay
    assert await Inbox(store).count("callback", RECEIVED) == 50
