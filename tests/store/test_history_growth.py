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
from tests.support.factories import message_request, order_request
from tests.support.proposer_routes import conversation, with_routes
from tests.support.stack import Stack, StackFactory, make_stack  # noqa: F401  (fixture)
from tests.support.waiting import eventually
from workers.domains.finance.examples import LIMIT_BUY

COPIES = 3
# no protective children: an order whose stop-loss still works stays on the executor's
# schedule, and the multiplication leaves such operations out
PLAIN_ORDER = dict(LIMIT_BUY)
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


async def drive(stack: Stack) -> None:
    """A filled order replied to in its conversation, a refused click then a reject with a
    reason, a cancel, a message draft sent, and a counterparty's text (a signal)."""
    thread = await conversation(stack)
    filled, filled_card = await stack.offered(
        with_routes(order_request("hist-filled", payload=PLAIN_ORDER), conversation_id=thread)
    )
    refused = await stack.click(filled_card, "ou_mallory")
    assert refused["toast"]["type"] != "success", refused
    assert (await stack.click(filled_card, "ou_alice"))["toast"]["type"] == "success"
    rejected, rejected_card = await stack.offered(order_request("hist-rejected"))
    await stack.click(rejected_card, "ou_bob", "reject", form={"reason": "too big"})
    cancelled = await stack.propose(order_request("hist-cancelled"))
    status, _ = await stack.post(f"/api/v1/operations/{cancelled['id']}/cancel", {})
    assert status == 200
    draft, draft_card = await stack.offered(message_request("hist-draft"))
    assert (await stack.click(draft_card, "ou_bob"))["toast"]["type"] == "success"
    status, _ = await stack.control(
        "POST", "/chats/oc_acme/messages", {"sender": "ou_alice", "text": "see you Friday"}
    )
    assert status == 201

    async def finished() -> bool:
        ops = [await stack.store.get(v["id"]) for v in (filled, rejected, cancelled, draft)]
        if any(op is None or op.state is State.AWAITING_CONFIRMATION for op in ops):
            return False
        async with stack.store.engine.connect() as conn:
            working = (await conn.execute(text(working_sql()))).all()
            deliveries = await conn.execute(text("SELECT count(*) FROM deliveries"))
            return not working and int(deliveries.scalar() or 0) > 0

    await eventually(finished, deadline_s=60)


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
