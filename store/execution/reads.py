"""Reading what execution recorded: an operation's attempt and outcomes, and the one
projection of operations with their outcomes (`views`, `view`; docs/architecture.md §1,
principle 6) that cards, the API, the CLI, the dashboard and text replies render."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from kernel.timeutil import iso_utc
from store.authority.records import Operation
from store.authority.store import Store
from store.execution.records import Attempt, Outcome
from store.reads.projection import ConfirmerView, OperationView, operation_view
from store.schema.tables import AttemptRow, ConfirmationRow, OutcomeRow
from store.vocabulary import ClickAction, Entry, State


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


async def confirmers_for(
    store: Store, operations: Sequence[Operation]
) -> dict[str, list[ConfirmerView]]:
    """Each accepted confirmation of the operations someone confirmed (one query), oldest
    first: who, where and when, for every surface that names the confirmers."""
    found: dict[str, list[ConfirmerView]] = {op.id: [] for op in operations}
    asked = [op.id for op in operations if op.confirmed_by]
    if not asked:
        return found
    async with store.read() as conn:
        rows = (
            await conn.execute(
                select(
                    ConfirmationRow.operation_id,
                    ConfirmationRow.operator_open_id,
                    ConfirmationRow.entry,
                    ConfirmationRow.at,
                )
                .where(
                    ConfirmationRow.operation_id.in_(asked),
                    ConfirmationRow.accepted.is_(True),
                    ConfirmationRow.action == ClickAction.CONFIRM.value,
                )
                .order_by(ConfirmationRow.id)
            )
        ).all()
    for row in rows:
        entry = Entry(row.entry) if row.entry in {e.value for e in Entry} else Entry.LARK
        found[row.operation_id].append(
            ConfirmerView(by=row.operator_open_id, entry=entry, at=iso_utc(row.at))
        )
    return found


async def views(store: Store, operations: Sequence[Operation]) -> list[OperationView]:
    """The projection of each operation with its outcomes and confirmers (one query each for
    all of them)."""
    found = await outcomes_for(store, [op.id for op in operations])
    confirmers = await confirmers_for(store, operations)
    fresh = []
    for op in operations:
        if op.state is State.CLAIMED and found[op.id]:
            # read before the write that recorded its first outcome (which moves the state
            # too): an outcome beside "claimed" is a torn view, and a waiter would stop on it
            op = await store.get(op.id) or op
        fresh.append(op)
    return [operation_view(op, found[op.id], confirmers[op.id]) for op in fresh]


async def view(store: Store, operation: Operation) -> OperationView:
    [found] = await views(store, [operation])
    return found
