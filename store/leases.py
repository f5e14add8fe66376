"""Leasing due rows: the one pattern card delivery, execution and result return share.

A worker takes a row by moving its due time forward with a compare-and-set, so several
workers or replicas never work on one row at once; a lease left by a dead worker simply
falls due again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from store.authority import Store
from store.models import OperationRow
from store.records import Operation


async def lease_rows(
    store: Store, table: Any, due: Any, limit: int, lease_s: float, where: Sequence[Any] = ()
) -> list[Any]:
    """Rows of `table` (a mapped class with an `id`) whose `due` time has passed, leased."""
    now = store.clock()
    async with store.read() as conn:
        candidates = (
            await conn.execute(
                select(table.id, due).where(due <= now, *where).order_by(due).limit(limit)
            )
        ).all()
    leased: list[Any] = []
    until = now + timedelta(seconds=lease_s)
    for row_id, due_at in candidates:
        async with store.write() as conn:
            won = await conn.execute(
                update(table).where(table.id == row_id, due == due_at).values({due: until})
            )
            if won.rowcount == 1:
                row = (await conn.execute(select(table.__table__).where(table.id == row_id))).one()
                leased.append(row)
    return leased


async def lease_due(
    store: Store, due: Any, limit: int, lease_s: float, where: Sequence[Any] = ()
) -> list[Operation]:
    """Operations whose `due` column (an OperationRow datetime) has passed, leased to us."""
    rows = await lease_rows(store, OperationRow, due, limit, lease_s, where)
    return [Operation.from_row(row) for row in rows]
