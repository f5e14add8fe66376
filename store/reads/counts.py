"""What health, metrics and the dashboard's long poll count over operations: the unknowns
still outstanding, the cards Lark refused, and a mark that moves whenever any operation
changes. Each one statement, so no surface outside the store reads the tables itself
(issue 34: each is one seek or a walk of a partial index, whatever the history).
"""

from __future__ import annotations

import hashlib

from sqlalchemy import func, select

from store.reads.operations import ReadSource
from store.schema.tables import OperationRow, constant
from store.vocabulary import Execution


async def unknown_outstanding(store: ReadSource) -> int:
    """Operations whose submission's fate the reconciler has not settled yet."""
    async with store.read() as conn:
        # the partial index ix_operations_unknown_submissions holds exactly these
        unknown = OperationRow.execution_state == constant(Execution.SUBMISSION_UNKNOWN.value)
        query = select(func.count()).select_from(OperationRow).where(unknown)
        return int((await conn.execute(query)).scalar_one())


async def card_delivery_failures(store: ReadSource) -> int:
    """Operations whose card Lark refused for good (the card worker gave up on it)."""
    async with store.read() as conn:
        # the partial index ix_operations_card_refused holds exactly these
        query = (
            select(func.count())
            .select_from(OperationRow)
            .where(OperationRow.card_error.is_not(None))
        )
        return int((await conn.execute(query)).scalar_one())


async def change_mark(store: ReadSource) -> str:
    """Moves whenever any operation changes: the newest change's time and operation, one
    seek on ix_operations_updated_at_id, for the dashboard's long poll. (No count: an
    operation is never deleted, and a new one is the newest change.)"""
    newest = (
        select(OperationRow.updated_at, OperationRow.id)
        .order_by(OperationRow.updated_at.desc(), OperationRow.id.desc())
        .limit(1)
    )
    async with store.read() as conn:
        row = (await conn.execute(newest)).first()
    if row is None:
        return "-"
    # every page carries the mark: a digest of the id, so a page never names an operation it
    # does not show (a filtered list, another proposer's)
    return f"{row.updated_at.isoformat()}/{hashlib.sha256(row.id.encode()).hexdigest()[:16]}"
