"""After the claim: the attempt, the reservation and the outcomes of an operation.

The database decides every race here too: one attempt per operation (unique), one client id
per attempt (unique), reservations serialized per account by a compare-and-set on the
account's version (FOR UPDATE would be dropped on SQLite), outcomes append-only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection
from ulid import ULID

from store.authority import Store
from store.canonical import canonical_json
from store.conclusions import enqueue_conclusions, outcome_digest
from store.leases import lease_due, next_due
from store.lifecycle import (
    EXECUTION_TRANSITIONS,
    Event,
    Execution,
    IllegalExecutionStep,
    State,
    execution_sources,
    next_state,
)
from store.models import AccountRow, AttemptRow, AuditRow, OperationRow, OutcomeRow, ReservationRow
from store.once import insert_once
from store.records import Operation
from store.vocabulary import AttemptState, ReservationState, Stage

RESERVE_RETRIES = 20
EXEC_LEASE_S = 60


@dataclass(frozen=True)
class Attempt:
    id: str
    operation_id: str
    client_id: str
    state: str
    last_error: str | None
    dispatched_at: datetime | None = None

    @classmethod
    def from_row(cls, row: Any) -> Attempt:
        return cls(
            row.id, row.operation_id, row.client_id, row.state, row.last_error, row.dispatched_at
        )


@dataclass(frozen=True)
class Outcome:
    operation_id: str
    stage: str
    status: str
    detail: dict[str, Any]
    outcome_digest: str
    reconciles_digest: str | None

    @classmethod
    def from_row(cls, row: Any) -> Outcome:
        return cls(
            row.operation_id,
            row.stage,
            row.status,
            json.loads(row.detail),
            row.outcome_digest,
            row.reconciles_digest,
        )


@dataclass(frozen=True)
class Reserved:
    account: str
    amount: Decimal
    held_after: Decimal  # all active reservations of the account, this one included


@dataclass(frozen=True)
class ReservationRefused:
    account: str
    amount: Decimal
    budget: Decimal
    observed: Decimal
    held: Decimal

    @property
    def reason(self) -> str:
        return (
            f"exposure budget of {self.account} is {self.budget}: positions and open orders "
            f"{self.observed} + reserved {self.held} + this order {self.amount} exceed it"
        )


class _Raced(Exception):
    """The account's version moved under us: read again."""


class ExecutionLedger:
    def __init__(self, store: Store) -> None:
        self.store = store

    # -- execution state ----------------------------------------------------------------------

    async def step(
        self, operation_id: str, target: Execution, actor: str = "system:executor"
    ) -> None:
        """Move the execution state to `target`, from a state the table allows."""
        sources = [state.value for state in execution_sources(target)]
        async with self.store.write() as conn:
            result = await conn.execute(
                update(OperationRow)
                .where(OperationRow.id == operation_id, OperationRow.execution_state.in_(sources))
                .values(execution_state=target.value, updated_at=self.store.clock())
            )
            if result.rowcount != 1:
                current = (
                    await conn.execute(
                        select(OperationRow.execution_state).where(OperationRow.id == operation_id)
                    )
                ).scalar_one_or_none()
                raise IllegalExecutionStep(Execution(current or Execution.QUEUED), target)
            await self._audit(conn, operation_id, actor, f"execution:{target.value}")

    async def _audit(
        self, conn: AsyncConnection, operation_id: str, actor: str, event: str
    ) -> None:
        await conn.execute(
            insert(AuditRow).values(
                operation_id=operation_id, at=self.store.clock(), actor=actor, event=event[:32]
            )
        )

    # -- the schedule -------------------------------------------------------------------------

    async def lease_due(self, limit: int, lease_s: float = EXEC_LEASE_S) -> list[Operation]:
        """Operations whose executor or reconciler is due, leased to this caller."""
        return await lease_due(self.store, OperationRow.exec_due_at, limit, lease_s)

    async def next_due(self) -> datetime | None:
        """When the executor or reconciler is next due (a backoff, a lease running out)."""
        return await next_due(self.store, OperationRow.exec_due_at)

    async def schedule(self, operation_id: str, in_s: float | None, *, tried: bool = False) -> None:
        """Due again in `in_s` seconds (None: nothing left to do); `tried` counts a fruitless look."""
        values: dict[str, Any] = {
            "exec_due_at": None if in_s is None else self.store.clock() + timedelta(seconds=in_s)
        }
        values["exec_tries"] = OperationRow.exec_tries + 1 if tried else 0
        async with self.store.write() as conn:
            await conn.execute(
                update(OperationRow).where(OperationRow.id == operation_id).values(**values)
            )

    async def due_now(self, operation_ids: Sequence[str]) -> int:
        """Something changed at the venue for these operations: look at them now."""
        if not operation_ids:
            return 0
        async with self.store.write() as conn:
            result = await conn.execute(
                update(OperationRow)
                .where(
                    OperationRow.id.in_(list(operation_ids)),
                    OperationRow.exec_due_at.is_not(None),
                    OperationRow.exec_due_at > self.store.clock(),
                )
                .values(exec_due_at=self.store.clock())
            )
        return int(result.rowcount)

    async def reconcile_now(self, operation_id: str | None = None) -> list[str]:
        """Look at unknown submissions and working orders now (all, or one): an operator's
        "check again" after fixing a venue or a network. Never touches an operation mid-dispatch
        (its worker holds it) or one that is settled."""
        looking = or_(
            OperationRow.execution_state.in_(
                [Execution.SUBMISSION_UNKNOWN.value, Execution.SUBMITTED.value]
            ),
            and_(
                OperationRow.execution_state.in_(
                    [Execution.COMPLETED.value, Execution.RECONCILED.value]
                ),
                OperationRow.exec_due_at.is_not(None),
            ),
        )
        query = select(OperationRow.id).where(looking)
        if operation_id is not None:
            query = query.where(OperationRow.id == operation_id)
        async with self.store.write() as conn:
            ids = list((await conn.execute(query)).scalars())
            if ids:
                await conn.execute(
                    update(OperationRow)
                    .where(OperationRow.id.in_(ids))
                    .values(exec_due_at=self.store.clock(), exec_tries=0)
                )
        return ids

    # -- the attempt --------------------------------------------------------------------------

    async def record_attempt(self, operation_id: str, client_id: str) -> Attempt:
        """Record the one attempt before anything is sent; a second call returns the first.

        The unique operation id decides (insert, or nothing on conflict), not a read before."""
        now = self.store.clock()
        async with self.store.write() as conn:
            await conn.execute(
                insert_once(conn, AttemptRow).values(
                    id=str(ULID.from_datetime(now)),
                    operation_id=operation_id,
                    client_id=client_id,
                    state=AttemptState.RECORDED.value,
                    recorded_at=now,
                )
            )
            attempt = await self._attempt(conn, operation_id)
        assert attempt is not None
        return attempt

    @staticmethod
    async def _attempt(conn: AsyncConnection, operation_id: str) -> Attempt | None:
        row = (
            await conn.execute(
                select(AttemptRow.__table__).where(AttemptRow.operation_id == operation_id)
            )
        ).one_or_none()
        return None if row is None else Attempt.from_row(row)

    async def attempt(self, operation_id: str) -> Attempt | None:
        async with self.store.read() as conn:
            return await self._attempt(conn, operation_id)

    async def mark_attempt(
        self, operation_id: str, state: AttemptState, error: str | None = None
    ) -> None:
        now = self.store.clock()
        values: dict[str, Any] = {
            "state": AttemptState(state).value,
            "last_error": error[:300] if error else None,
        }
        if state is AttemptState.DISPATCHED:
            values["dispatched_at"] = now
        if state in (AttemptState.RESOLVED, AttemptState.UNKNOWN):
            values["resolved_at"] = now
        async with self.store.write() as conn:
            await conn.execute(
                update(AttemptRow).where(AttemptRow.operation_id == operation_id).values(**values)
            )

    # -- reservations -------------------------------------------------------------------------

    async def reserve(
        self,
        operation_id: str,
        account: str,
        amount: Decimal,
        *,
        budget: Decimal,
        observed: Decimal,
        observed_at: datetime | None = None,
    ) -> Reserved | ReservationRefused:
        """Hold `amount` if observed exposure + held reservations + amount fit `budget`.

        Held: every active reservation, and every one converted into a venue order at or
        after `observed_at` (when the observation was taken): that observation may predate
        the order, so the order's exposure still counts here. Counting it twice (when the
        observation did include it) only ever refuses more, never exceeds the budget.
        """
        for _ in range(RESERVE_RETRIES):
            try:
                return await self._reserve_once(
                    operation_id, account, amount, budget, observed, observed_at
                )
            except _Raced:
                continue
        raise RuntimeError(f"could not reserve on {account}: too much contention")

    async def _reserve_once(
        self,
        operation_id: str,
        account: str,
        amount: Decimal,
        budget: Decimal,
        observed: Decimal,
        observed_at: datetime | None,
    ) -> Reserved | ReservationRefused:
        try:
            async with self.store.write() as conn:
                # FOR UPDATE queues concurrent reservers on PostgreSQL (SQLite has one writer
                # anyway and SQLAlchemy leaves the clause out there); the conditional version
                # update below is what guarantees the budget either way.
                version = (
                    await conn.execute(
                        select(AccountRow.version)
                        .where(AccountRow.account == account)
                        .with_for_update()
                    )
                ).scalar_one_or_none()
                if version is None:
                    await conn.execute(insert(AccountRow).values(account=account, version=0))
                    version = 0
                holding = ReservationRow.state == ReservationState.ACTIVE.value
                if observed_at is not None:
                    holding = or_(
                        holding,
                        and_(
                            ReservationRow.state == ReservationState.CONVERTED.value,
                            ReservationRow.released_at >= observed_at,
                        ),
                    )
                rows = (
                    await conn.execute(
                        select(
                            ReservationRow.operation_id, ReservationRow.amount, ReservationRow.state
                        ).where(ReservationRow.account == account, holding)
                    )
                ).all()
                held = sum((Decimal(row.amount) for row in rows), Decimal(0))
                if any(
                    row.operation_id == operation_id and row.state == ReservationState.ACTIVE.value
                    for row in rows
                ):
                    return Reserved(account, amount, held)  # taken before a restart
                if observed + held + amount > budget:
                    return ReservationRefused(account, amount, budget, observed, held)
                moved = await conn.execute(
                    update(AccountRow)
                    .where(AccountRow.account == account, AccountRow.version == version)
                    .values(version=version + 1)
                )
                if moved.rowcount != 1:
                    raise _Raced
                await conn.execute(
                    insert(ReservationRow).values(
                        operation_id=operation_id,
                        account=account,
                        amount=format(amount, "f"),
                        state=ReservationState.ACTIVE.value,
                        created_at=self.store.clock(),
                    )
                )
                return Reserved(account, amount, held + amount)
        except IntegrityError:
            raise _Raced from None  # a concurrent first reservation created the account row

    async def release(self, operation_id: str) -> bool:
        """Nothing came of it: the held exposure is gone."""
        return await self.settle(operation_id, converted=False)

    async def settle(self, operation_id: str, *, converted: bool) -> bool:
        """The venue answered: the held exposure is now observable (converted) or gone."""
        async with self.store.write() as conn:
            result = await conn.execute(
                update(ReservationRow)
                .where(
                    ReservationRow.operation_id == operation_id,
                    ReservationRow.state == ReservationState.ACTIVE.value,
                )
                .values(
                    state=ReservationState.CONVERTED.value
                    if converted
                    else ReservationState.RELEASED.value,
                    released_at=self.store.clock(),
                )
            )
        return result.rowcount == 1

    async def reservation_state(self, operation_id: str) -> str | None:
        async with self.store.read() as conn:
            state: str | None = (
                await conn.execute(
                    select(ReservationRow.state).where(ReservationRow.operation_id == operation_id)
                )
            ).scalar_one_or_none()
        return state

    async def held(self, account: str) -> Decimal:
        async with self.store.read() as conn:
            amounts = (
                await conn.execute(
                    select(ReservationRow.amount).where(
                        ReservationRow.account == account,
                        ReservationRow.state == ReservationState.ACTIVE.value,
                    )
                )
            ).scalars()
            return sum((Decimal(amount) for amount in amounts), Decimal(0))

    # -- outcomes -----------------------------------------------------------------------------

    async def record_outcome(
        self,
        operation_id: str,
        *,
        stage: Stage,
        status: str,
        concludes: bool,
        detail: dict[str, Any],
        execution: Execution,
        reconciles: str | None = None,
    ) -> Outcome:
        """Append an outcome; the envelope shows it (outcome_observed) and the card is due.

        `status` is the domain's word for it; `concludes` (the domain's say too) whether it
        settles `stage` for the proposer, who then hears of it once."""
        stage = Stage(stage)
        digest = outcome_digest(operation_id, stage, status, detail, reconciles)
        now = self.store.clock()
        async with self.store.write() as conn:
            current = (
                await conn.execute(
                    select(
                        OperationRow.state,
                        OperationRow.execution_state,
                        OperationRow.source_routes,
                    ).where(OperationRow.id == operation_id)
                )
            ).one()
            state = next_state(State(current.state), Event.OUTCOME)
            if execution not in (
                {Execution(current.execution_state)} | _after(current.execution_state)
            ):
                raise IllegalExecutionStep(Execution(current.execution_state), execution)
            await enqueue_conclusions(
                conn,
                operation_id=operation_id,
                routes=json.loads(current.source_routes) if current.source_routes else None,
                stage=stage,
                concludes=concludes,
                outcome_digest=digest,
                reconciles=reconciles,
                now=now,
            )
            await conn.execute(
                insert(OutcomeRow).values(
                    operation_id=operation_id,
                    stage=stage.value,
                    status=status,
                    detail=canonical_json(detail),
                    outcome_digest=digest,
                    reconciles_digest=reconciles,
                    observed_at=now,
                )
            )
            await conn.execute(
                update(OperationRow)
                .where(OperationRow.id == operation_id)
                .values(
                    state=state.value,
                    execution_state=execution.value,
                    version=OperationRow.version + 1,
                    updated_at=now,
                    card_due_at=now,
                )
            )
            await self._audit(conn, operation_id, "system:executor", f"outcome:{status}")
        return Outcome(operation_id, stage.value, status, detail, digest, reconciles)

    async def outcomes_for(self, operation_ids: Sequence[str]) -> dict[str, list[Outcome]]:
        """Outcomes of many operations in one query (oldest first per operation)."""
        found: dict[str, list[Outcome]] = {operation_id: [] for operation_id in operation_ids}
        if not operation_ids:
            return found
        async with self.store.read() as conn:
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

    async def outcomes(self, operation_id: str) -> list[Outcome]:
        async with self.store.read() as conn:
            rows = (
                await conn.execute(
                    select(OutcomeRow.__table__)
                    .where(OutcomeRow.operation_id == operation_id)
                    .order_by(OutcomeRow.id)
                )
            ).all()
        return [Outcome.from_row(row) for row in rows]


def _after(current: str | None) -> frozenset[Execution]:
    return EXECUTION_TRANSITIONS[Execution(current or Execution.QUEUED)]


async def views(store: Store, operations: Sequence[Operation]) -> list[dict[str, Any]]:
    """The projection of each operation with its outcomes (one query for all of them)."""
    from store.projection import operation_view  # projection imports this module

    outcomes = await ExecutionLedger(store).outcomes_for([op.id for op in operations])
    return [operation_view(op, outcomes[op.id]) for op in operations]


async def view(store: Store, operation: Operation) -> dict[str, Any]:
    [found] = await views(store, [operation])
    return found
