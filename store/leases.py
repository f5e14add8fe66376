"""Leasing due rows: the one pattern card delivery, execution and result return share.

A worker takes a batch of due rows with ONE statement that moves their due time forward
and returns them:

    UPDATE t SET due = :until
     WHERE id IN (SELECT id FROM t WHERE due <= :now [AND ...]
                   ORDER BY due LIMIT :n FOR UPDATE SKIP LOCKED)
    RETURNING *

On PostgreSQL `SKIP LOCKED` lets several workers and replicas lease at once, each passing
over the rows another is taking, so no row is ever leased twice; a row changed under us is
re-checked against `due <= :now` before it is locked. SQLite has one writer at a time (and
no `FOR UPDATE`: SQLAlchemy leaves it out there), so the statement simply runs alone. A
lease left by a dead worker falls due again when `until` passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update

from store.authority import Store
from store.models import OperationRow
from store.records import Operation


async def lease_rows(
    store: Store, table: Any, due: Any, limit: int, lease_s: float, where: Sequence[Any] = ()
) -> list[Any]:
    """Rows of `table` (a mapped class with an `id`) whose `due` time has passed, leased:
    the oldest due first, at most `limit`, their `due` moved `lease_s` seconds ahead."""
    if limit <= 0:
        return []
    now = store.clock()
    picked = (
        select(table.id)
        .where(due <= now, *where)
        .order_by(due)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    lease = (
        update(table)
        .where(table.id.in_(picked))
        .values({due: now + timedelta(seconds=lease_s)})
        .returning(*table.__table__.columns)
    )
    rows = await store.transact(lambda conn: conn.execute(lease).all())
    # RETURNING promises no order: sort for a stable one
    return sorted(rows, key=lambda row: row.id)


async def lease_due(
    store: Store, due: Any, limit: int, lease_s: float, where: Sequence[Any] = ()
) -> list[Operation]:
    """Operations whose `due` column (an OperationRow datetime) has passed, leased to us."""
    rows = await lease_rows(store, OperationRow, due, limit, lease_s, where)
    return [Operation.from_row(row) for row in rows]


async def next_due(store: Store, due: Any, where: Sequence[Any] = ()) -> datetime | None:
    """When the earliest row not yet due falls due (None: nothing is scheduled): how long an
    idle worker may sleep before looking again."""
    async with store.read() as conn:
        found: datetime | None = (
            await conn.execute(select(func.min(due)).where(due > store.clock(), *where))
        ).scalar_one()
    return found
