"""`countersign prune`, the real process on the test backend: a dry run counts and changes
nothing, a prune strips an inbox entry older than `[retention] inbox_days` to its digest
and leaves a newer one whole, and a window under a day is refused naming the field."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select, update

from store import Inbox, InboxRow, Store, payload_digest
from tests.support.backends import Backend
from tests.support.processes import ENV, backend_config, cli, free_port


async def payloads(store: Store) -> dict[str, str]:
    async with store.read() as conn:
        found = await conn.execute(select(InboxRow.key, InboxRow.payload))
        return {row.key: row.payload for row in found}


async def test_prune_strips_what_is_past_the_window_and_a_dry_run_changes_nothing(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    inbox = Inbox(store)
    for key in ("ev-old", "ev-new"):
        await inbox.receive("callback", key, {"event": key})
        await inbox.answered("callback", key, {"toast": {"type": "success"}})
    async with store.engine.begin() as conn:  # the old one, 31 days ago
        await conn.execute(
            update(InboxRow)
            .where(InboxRow.key == "ev-old")
            .values(received_at=store.clock() - timedelta(days=31))
        )
    before = await payloads(store)
    config = backend_config(backend, tmp_path, free_port())

    dry = await cli("prune", "--dry-run", "--config", str(config), env=ENV)
    assert dry.code == 0, dry.err
    assert "payload and answer would be replaced by the payload's digest: 1" in dry.out
    assert dry.out.strip().endswith("nothing was changed (--dry-run)")
    assert await payloads(store) == before

    done = await cli("prune", "--config", str(config), env=ENV)
    assert done.code == 0, done.err
    assert "payload and answer were replaced by the payload's digest: 1" in done.out
    after = await payloads(store)
    assert json.loads(after["ev-old"]) == {
        "pruned": True,
        "sha256": payload_digest({"event": "ev-old"}),
    }
    assert after["ev-new"] == before["ev-new"]  # inside the 30-day window


async def test_a_window_under_a_day_is_refused_naming_the_field(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    config = backend_config(backend, tmp_path, free_port())
    config.write_text(config.read_text() + "[retention]\ninbox_days = 0\n")
    refused = await cli("prune", "--config", str(config), env=ENV)
    assert refused.code != 0
    said = refused.out + refused.err
    assert "retention.inbox_days" in said and "Traceback" not in said, said
