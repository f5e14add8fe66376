"""Reading what execution recorded: an operation's attempt and outcomes, and the one
projection of operations with their outcomes (`views`, `view`; docs/architecture.md §1,
principle 6) that cards, the API, the CLI, the dashboard and text replies render."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from store.authority.records import Operation
from store.authority.store import Store
from store.execution.records import Attempt, Outcome
from store.reads.projection import OperationView, operation_view
from store.schema.tables import AttemptRow, OutcomeRow
from store.vocabulary import State


async def attempt(store: Store, operation_id: str) -> Attempt | None:
    async with store.read() as conn:
        row = (
            await conn.execute(
                select(AttemptRow.__table__).where(AttemptRow.operation_id == operation_id)
            )
        ).one_or_none()
    return None if row is None else Attempt.from_row(row)


async def outcomes_for(store: Store, operation_ids: Sequence[str]) -> dict[str, list[Outcome]]:
    """Outcomes of many operations in one query (oldest first per operation)."""
    found: dict[str, list[Outcome]] = {operation_id: [] for operation_id in operation_ids}
    if not operation_ids:
        return found
    async with store.read() as conn:
        rows = (
            await conn.execute(
                select(OutcomeRow.__table__)
                .where(OutcomeRow.operation_id.in_(list(operation_ids)))
                .order_by(OutcomeRow.id)
            )
        ).all()
    for row in rows:
        found[row.operation_id].append(Outcome.from_row(row))
    return found


async def outcomes(store: Store, operation_id: str) -> list[Outcome]:
    async with store.read() as conn:
        rows = (
            await conn.execute(
                select(OutcomeRow.__table__)
                .where(OutcomeRow.operation_id == operation_id)
                .order_by(OutcomeRow.id)
            )
        ).all()
    return [Outcome.from_row(row) for row in rows]


async def views(store: Store, operations: Sequence[Operation]) -> list[OperationView]:
    """The projection of each operation with its outcomes (one query for all of them)."""
    found = await outcomes_for(store, [op.id for op in operations])
    fresh = []
    for op in operations:
        if op.state is State.CLAIMED and found[op.id]:
            # read before the write that recorded its first outcome (which moves the state
            # too): an outcome beside "claimed" is a torn view, and a waiter would stop on it
            op = await store.get(op.id) or op
        fresh.append(op)
    return [operation_view(op, found[op.id]) for op in fresh]


async def view(store: Store, operation: Operation) -> OperationView:
    [found] = await views(store, [operation])
    return found
