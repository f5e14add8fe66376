"""Leasing due operations: the one pattern card delivery and execution share.

A worker takes an operation by moving its due time forward with a compare-and-set, so
several workers or replicas never work on one operation at once; a lease left by a dead
worker simply falls due again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from store.authority import Store
from store.models import OperationRow
from store.records import Operation


async def lease_due(
    store: Store, due: Any, limit: int, lease_s: float, where: Sequence[Any] = ()
) -> list[Operation]:
    """Operations whose `due` column (an OperationRow datetime) has passed, leased to us."""
    now = store.clock()
    async with store.read() as conn:
        candidates = (
            await conn.execute(
                select(OperationRow.id, due).where(due <= now, *where).order_by(due).limit(limit)
            )
        ).all()
    leased: list[Operation] = []
    until = now + timedelta(seconds=lease_s)
    for operation_id, due_at in candidates:
        async with store.write() as conn:
            won = await conn.execute(
                update(OperationRow)
                .where(OperationRow.id == operation_id, due == due_at)
                .values({due: until})
            )
            if won.rowcount == 1:
                row = (
                    await conn.execute(
                        select(OperationRow.__table__).where(OperationRow.id == operation_id)
                    )
                ).one()
                leased.append(Operation.from_row(row))
    return leased
