"""Leasing due rows: the one pattern card delivery, execution and result return share.

A worker takes a batch of due rows with ONE statement that moves their due time forward
and returns their ids (on SQLite an intent of the store's group-commit writer; on
PostgreSQL a short transaction of its own, so its row locks are not held for a batch):

    UPDATE t SET due = :until
     WHERE id IN (SELECT id FROM t WHERE due <= :now [AND ...]
                   ORDER BY due LIMIT :n FOR UPDATE SKIP LOCKED)
    RETURNING id

and then reads those rows (a read, after the commit). On PostgreSQL `SKIP LOCKED` lets
several workers and replicas lease at once, each passing over the rows another is taking,
so no row is ever leased twice; a row changed under us is re-checked against `due <= :now`
before it is locked. SQLite has one writer at a time (and no `FOR UPDATE`), so the
statement simply runs alone. A lease left by a dead worker falls due again when `until`
passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from store.authority import Store
from store.click_sql import bound_time
from store.groupcommit import Intent, Statement, run_on_connection
from store.models import OperationRow
from store.records import Operation

# `{also}`: a condition of the caller's, as SQL without parameters
LEASE = """
UPDATE {table} SET {due} = :until
 WHERE id IN (SELECT id FROM {table} WHERE {due} <= :now{also}
               ORDER BY {due} LIMIT :limit{lock})
RETURNING id
"""


def lease_intent(
    table: str, due: str, *, limit: int, lease_s: float, now: datetime, sqlite: bool, also: str = ""
) -> Intent:
    """Rows: `[{'id': ...}]`, one per row leased (in no particular order)."""
    sql = LEASE.format(
        table=table,
        due=due,
        also=f" AND {also}" if also else "",
        lock="" if sqlite else " FOR UPDATE SKIP LOCKED",
    )
    until = now + timedelta(seconds=lease_s)
    params = {
        "now": bound_time(now, sqlite),
        "until": bound_time(until, sqlite),
        "limit": limit,
    }
    return Intent((Statement(sql, params),))


async def lease_rows(
    store: Store, table: Any, due: Any, limit: int, lease_s: float, also: str = ""
) -> list[Any]:
    """Rows of `table` (a mapped class with an `id`) whose `due` column (one of its
    attributes) has passed, leased: the oldest due first, at most `limit`, their `due`
    moved `lease_s` seconds ahead. The lease is one write (on SQLite an intent of the group
    commit); the rows are read after it committed (fresh, and typed by SQLAlchemy)."""
    if limit <= 0:
        return []
    intent = lease_intent(
        table.__tablename__,
        due.key,
        limit=limit,
        lease_s=lease_s,
        now=store.clock(),
        sqlite=store.sqlite,
        also=also,
    )
    if store.sqlite:
        (leased,) = await store.submit(intent)
    else:
        # its own short transaction: in a group-commit batch its row locks would be held
        # until the batch commits, and a click's claim on a leased row would wait for that
        leased = await store.transact(lambda conn: run_on_connection(conn, intent)[0])
    if not leased:
        return []
    ids = [row["id"] for row in leased]
    read = select(table.__table__).where(table.id.in_(ids)).order_by(table.id)
    return await store.fetch(lambda conn: list(conn.execute(read).all()))


async def lease_due(
    store: Store, due: Any, limit: int, lease_s: float, also: str = ""
) -> list[Operation]:
    """Operations whose `due` column (an OperationRow datetime) has passed, leased to us."""
    rows = await lease_rows(store, OperationRow, due, limit, lease_s, also)
    return [Operation.from_row(row) for row in rows]


async def next_due(store: Store, due: Any, where: Sequence[Any] = ()) -> datetime | None:
    """When the earliest row not yet due falls due (None: nothing is scheduled): how long an
    idle worker may sleep before looking again."""
    async with store.read() as conn:
        found: datetime | None = (
            await conn.execute(select(func.min(due)).where(due > store.clock(), *where))
        ).scalar_one()
    return found
