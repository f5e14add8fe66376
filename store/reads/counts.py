"""What health, metrics and the dashboard's long poll count over operations: the unknowns
still outstanding, the cards Lark refused, and a mark that moves whenever any operation
changes. Each one statement, so no surface outside the store reads the tables itself
(issue 34 makes them cheap as history grows).
"""

from __future__ import annotations

from sqlalchemy import func, select

from store.reads.operations import ReadSource
from store.schema.tables import OperationRow
from store.vocabulary import Execution


async def unknown_outstanding(store: ReadSource) -> int:
    """Operations whose submission's fate the reconciler has not settled yet."""
    async with store.read() as conn:
        query = select(func.count()).where(
            OperationRow.execution_state == Execution.SUBMISSION_UNKNOWN.value
        )
        return int((await conn.execute(query)).scalar_one())


async def card_delivery_failures(store: ReadSource) -> int:
    """Operations whose card Lark refused for good (the card worker gave up on it)."""
    async with store.read() as conn:
        query = select(func.count()).where(OperationRow.card_error.is_not(None))
        return int((await conn.execute(query)).scalar_one())


async def change_mark(store: ReadSource) -> str:
    """Moves whenever any operation changes (its newest updated_at, and how many there
    are), for the dashboard's long poll."""
    async with store.read() as conn:
        newest, count = (
            await conn.execute(select(func.max(OperationRow.updated_at), func.count()))
        ).one()
    return f"{newest.isoformat() if newest else '-'}/{count}"
