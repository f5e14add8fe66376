"""bench/history.py's multiplication keeps history honest: a few real operations, driven
end to end through the bot and the sandbox, copied to 3 of each. Every table that grows is
multiplied, every unique key stays unique, references move with their rows (ULID times
included), nothing is due for any worker, and the store reads the copies. Both backends."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from bench.history_multiply import ALPHABET, grown_tables, multiply, working_sql
from store import State, Store, create_engine
from tests.support.backends import Backend
from tests.support.history_driven import drive
from tests.support.stack import Stack, StackFactory, make_stack  # noqa: F401  (fixture)

COPIES = 3
# tables the few operations below may leave empty (nothing to multiply, asserted as such)
MAY_BE_EMPTY = frozenset({"signals"})


async def counts(conn: AsyncConnection) -> dict[str, int]:
    return {
        t.name: int((await conn.execute(text(f"SELECT count(*) FROM {t.name}"))).scalar() or 0)
        for t in grown_tables()
    }


async def house_entries(conn: AsyncConnection) -> dict[str, int]:
    """Rows of the whole house, not of an operation, which history does not multiply: the
    audit entries of policy versions (one per config change)."""
    found = await conn.execute(
        text("SELECT count(*) FROM audit WHERE operation_id LIKE 'policy:%'")
    )
    return {"audit": int(found.scalar() or 0)}


def ulid_ms(value: str) -> int:
    ms = 0
    for char in value[:10]:
        ms = ms * 32 + ALPHABET.index(char)
    return ms


def as_ms(at: Any) -> int:
    if isinstance(at, str):  # SQLite: naive UTC text
        at = datetime.fromisoformat(at).replace(tzinfo=UTC)
    return int(at.timestamp() * 1000)


async def test_multiplied_history_is_every_table_times_k_with_unique_keys_and_nothing_due(
    make_stack: StackFactory,  # noqa: F811  (the fixture imported above)
    backend: Backend,
    store: Store,
) -> None:
    stack: Stack = await make_stack("ws")
    await drive(stack)
    engine = create_engine(backend.url, schema=backend.schema)
    try:
        async with engine.connect() as conn:
            before = await counts(conn)
            house = await house_entries(conn)
            assert house == {"audit": 1}  # the stack's start recorded its policy
            await conn.commit()
            grown = await multiply(conn, COPIES * before["operations"])
            after = await counts(conn)
            assert grown.copies == COPIES and grown.dropped_working == 0
            assert grown.rows == after
            for name, count in before.items():
                assert name in MAY_BE_EMPTY or count > 0, f"{name}: nothing driven to copy"
                own = house.get(name, 0)
                assert after[name] == COPIES * (count - own) + own, (name, count, after[name])

            assert (await conn.execute(text(working_sql()))).all() == []
            due = await conn.execute(
                text("SELECT count(*) FROM deliveries WHERE due_at IS NOT NULL")
            )
            assert due.scalar() == 0
            for table, column in (
                ("operations", "card_message_id"),
                ("confirmations", "event_id"),
                ("operations", "source_request_id"),
            ):
                distinct = await conn.execute(
                    text(f"SELECT count({column}), count(DISTINCT {column}) FROM {table}")
                )
                total, unique = distinct.one()
                assert total == unique > 0, (table, column)

            # a copy's ULID still spells its own creation time: references moved with it
            rows = (await conn.execute(text("SELECT id, created_at FROM operations"))).all()
            for op_id, created_at in rows:
                assert abs(ulid_ms(op_id) - as_ms(created_at)) < 60_000, op_id
            orphans = await conn.execute(
                text(
                    "SELECT count(*) FROM claims c LEFT JOIN operations o ON o.id = c.operation_id "
                    "LEFT JOIN confirmations f ON f.id = c.confirmation_id "
                    "WHERE o.id IS NULL OR f.operation_id <> c.operation_id"
                )
            )
            assert orphans.scalar() == 0
            # every reference resolves (PostgreSQL copies without its FK triggers)
            for table in grown_tables():
                for key in table.foreign_keys:
                    parent, column = key.column.table.name, key.parent.name
                    missing = await conn.execute(
                        text(
                            f"SELECT count(*) FROM {table.name} x WHERE x.{column} IS NOT NULL "
                            f"AND NOT EXISTS (SELECT 1 FROM {parent} p "
                            f"WHERE p.{key.column.name} = x.{column})"
                        )
                    )
                    assert missing.scalar() == 0, (table.name, column)
    finally:
        await engine.dispose()

    # the store reads the copies as it reads the originals
    for op_id, _ in rows:
        op = await store.get(op_id)
        assert op is not None and op.state in (
            State.OUTCOME_OBSERVED,
            State.REJECTED,
            State.CANCELLED,
        ), (op_id, op and op.state)
    status, page = await stack.api("GET", "/api/v1/operations?limit=50")
    assert status == 200 and len(page["items"]) == len(rows), json.dumps(page)[:500]
