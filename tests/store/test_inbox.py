"""The inbox keeps each event once, without its secrets, whatever the length of its key."""

from __future__ import annotations

import asyncio

from store.authority.store import Store
from store.inbox.inbox import RECEIVED, Inbox, stored_key


def envelope(event_id: str) -> dict[str, object]:
    return {
        "token": "v1-secret",
        "header": {"event_id": event_id, "token": "v2-secret"},
        "event": {"token": "card-update-secret", "action": {"value": {"v": 1}}},
    }


async def test_a_long_key_is_kept_by_digest_and_secrets_are_dropped(store: Store) -> None:
    inbox = Inbox(store)
    long_key = "ev-" + "x" * 300
    first = await inbox.receive("callback", long_key, envelope(long_key))
    again = await inbox.receive("callback", long_key, envelope(long_key))
    assert (first.first, again.first) == (True, False)
    assert first.entry.key == again.entry.key == stored_key(long_key)
    stored = await inbox.get("callback", long_key)
    assert stored is not None and stored.key == stored_key(long_key)
    assert "secret" not in str(stored.payload) and "secret" not in str(again.entry.payload)
    assert stored.payload["event"]["action"] == {"value": {"v": 1}}
    assert again.entry.received_at == stored.received_at  # read back alike on both backends


async def test_clicks_received_together_each_keep_their_own_result(
    store: Store,
) -> None:
    """They share group commits; the unique (kind, key) still tells each whether it was first."""
    inbox = Inbox(store)
    keys = [f"ev-{index}" for index in range(50)] + ["ev-0"]
    results = await asyncio.gather(*(inbox.receive("callback", key, envelope(key)) for key in keys))
    assert [r.entry.key for r in results] == keys
    assert sum(r.first for r in results) == 50  # the second ev-0 is a replay
    assert await Inbox(store).count("callback", RECEIVED) == 50
