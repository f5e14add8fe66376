"""Migration 0020 on both backends: a store holding many refused web posts of one person on
one operation (written before the fix) comes out with one row for them, counting them, the
newest's reason kept; card clicks' refusals and accepted rows are left as they were; and the
downgrade gives the column back."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, MetaData, Table, select

from kernel.timeutil import utc_now
from store.schema.migrate import current_revision, downgrade, upgrade
from tests.support.backends import Backend
from tests.support.migrations import columns_of, fresh_database

T0 = utc_now()
# (operator, entry, accepted, reason): in the order they were written
ROWS = [
    ("ou_mallory", "web", False, "operator_not_allowed"),
    ("ou_mallory", "lark", False, "operator_not_allowed"),
    ("ou_mallory", "web", False, "operator_not_allowed"),
    ("ou_bob", "web", False, "digest_mismatch"),
    ("ou_mallory", "lark", False, "operator_not_allowed"),
    ("ou_alice", "web", True, None),
    ("ou_mallory", "web", False, "expired"),
]


def write_rows(sync: Connection) -> None:
    table = Table("confirmations", MetaData(), autoload_with=sync)
    for n, (operator, entry, accepted, reason) in enumerate(ROWS):
        sync.execute(
            table.insert().values(
                operation_id="op-flooded",
                at=T0 + timedelta(seconds=n),
                action="confirm",
                operator_open_id=operator,
                digest="d" * 64,
                event_id=f"form-key-{n}",
                accepted=accepted,
                reason_code=reason,
                entry=entry,
            )
        )


def read_rows(sync: Connection) -> list[dict[str, Any]]:
    table = Table("confirmations", MetaData(), autoload_with=sync)
    return [dict(row) for row in sync.execute(select(table).order_by(table.c.id)).mappings()]


async def test_0020_folds_a_persons_refused_web_posts_into_one_counted_row(
    backend: Backend, tmp_path: Path
) -> None:
    async with fresh_database(backend, tmp_path) as engine:
        await upgrade(engine, "0019")
        async with engine.begin() as conn:
            await conn.run_sync(write_rows)
        await upgrade(engine, "0020")
        async with engine.connect() as conn:
            rows = await conn.run_sync(read_rows)
        kept = [
            (
                r["operator_open_id"],
                r["entry"],
                bool(r["accepted"]),
                r["reason_code"],
                r["refusals"],
            )
            for r in rows
        ]
        assert kept == [
            ("ou_mallory", "lark", False, "operator_not_allowed", 1),
            ("ou_bob", "web", False, "digest_mismatch", 1),
            ("ou_mallory", "lark", False, "operator_not_allowed", 1),
            ("ou_alice", "web", True, None, 1),
            ("ou_mallory", "web", False, "expired", 3),  # the newest row, counting all three
        ]
        assert rows[-1]["event_id"] == "form-key-6"

        await downgrade(engine, "0019")
        assert await current_revision(engine) == "0019"
        assert "refusals" not in await columns_of(engine, "confirmations")
