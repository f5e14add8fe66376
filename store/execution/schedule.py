"""The executor's schedule on `operations.exec_due_at`: leasing what is due, when it is
next due, due again later (or never), due again after a pass that raised (counted in
`exec_failures`), due now (a venue event, an operator's "check again").

`ExecutionLedger` keeps these as its methods and delegates here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, exists, select, update

from kernel.timeutil import Clock
from store.authority.records import Operation
from store.authority.store import Store
from store.backend import leases
from store.execution.records import FailedPass
from store.lifecycle import Execution
from store.schema.tables import AttemptRow, OperationRow, constant

EXEC_LEASE_S = 60


async def lease_due(store: Store, limit: int, lease_s: float = EXEC_LEASE_S) -> list[Operation]:
    """Operations whose executor or reconciler is due, leased to this caller."""
    return await leases.lease_due(store, OperationRow.exec_due_at, limit, lease_s)


async def next_due(store: Store) -> datetime | None:
    """When the executor or reconciler is next due (a backoff, a lease running out); a time
    not after now: a row due already that a lease passed over (PostgreSQL's SKIP LOCKED:
    another transaction was writing it, say the click's answer marking its card shown)."""
    return await leases.next_due(store, OperationRow.exec_due_at, passed_over=True)


async def schedule(store: Store, operation_id: str, in_s: float | None, *, tried: bool) -> None:
    """Due again in `in_s` seconds (None: nothing left to do); `tried` counts a fruitless look.
    The one write of a pass that learned nothing new."""
    scheduled = (
        update(OperationRow)
        .where(OperationRow.id == operation_id)
        .values(**schedule_values(store.clock, in_s, tried=tried))
    )
    await store.transact(lambda conn: conn.execute(scheduled))


def schedule_values(clock: Clock, in_s: float | None, *, tried: bool) -> dict[str, Any]:
    """A pass that ended normally: due again in `in_s`, and no longer failing."""
    due = None if in_s is None else clock() + timedelta(seconds=in_s)
    return {
        "exec_due_at": due,
        "exec_tries": OperationRow.exec_tries + 1 if tried else 0,
        "exec_failures": 0,
    }


async def failed_pass(store: Store, operation_id: str, in_s: float) -> FailedPass:
    """A pass raised: one more failure in a row, due again in `in_s`, in one write that
    reads back where the operation stands (the pass may have moved it before it raised)."""
    failed = (
        update(OperationRow)
        .where(OperationRow.id == operation_id)
        .values(
            exec_due_at=store.clock() + timedelta(seconds=in_s),
            exec_tries=OperationRow.exec_tries + 1,
            exec_failures=OperationRow.exec_failures + 1,
        )
        .returning(OperationRow.exec_failures, OperationRow.execution_state)
    )
    recorded = select(exists().where(AttemptRow.operation_id == operation_id))

    def write(conn: Connection) -> FailedPass:
        count, execution = conn.execute(failed).one()
        return FailedPass(
            int(count),
            Execution(execution or Execution.QUEUED),
            bool(conn.execute(recorded).scalar_one()),
        )

    return await store.transact(write)


async def due_now(store: Store, operation_ids: Sequence[str]) -> int:
    """Something changed at the venue for these operations: look at them now."""
    if not operation_ids:
        return 0
    now = store.clock()
    due = (
        update(OperationRow)
        .where(
            OperationRow.id.in_(list(operation_ids)),
            OperationRow.exec_due_at.is_not(None),
            OperationRow.exec_due_at > now,
        )
        .values(exec_due_at=now)
    )
    return await store.transact(lambda conn: int(conn.execute(due).rowcount))


async def reconcile_now(store: Store, operation_id: str | None = None) -> list[str]:
    """Look at unknown submissions and working orders now (all, or one): an operator's
    "check again" after fixing a venue or a network. Never touches an operation mid-dispatch
    (its worker holds it) or one that is settled."""
    # three seeks (two partial indexes and the schedule's), never a look at every operation
    # inside the write
    unknown = OperationRow.execution_state == constant(Execution.SUBMISSION_UNKNOWN.value)
    working = OperationRow.execution_state == constant(Execution.SUBMITTED.value)
    tracked = and_(
        OperationRow.exec_due_at.is_not(None),
        OperationRow.execution_state.in_([Execution.COMPLETED.value, Execution.RECONCILED.value]),
    )
    queries = [select(OperationRow.id).where(looking) for looking in (unknown, working, tracked)]
    if operation_id is not None:
        queries = [query.where(OperationRow.id == operation_id) for query in queries]

    def write(conn: Connection) -> list[str]:
        ids = sorted({found for query in queries for found in conn.execute(query).scalars()})
        if ids:
            conn.execute(
                update(OperationRow)
                .where(OperationRow.id.in_(ids))
                .values(exec_due_at=store.clock(), exec_tries=0, exec_failures=0)
            )
        return ids

    return await store.transact(write)
