"""After the claim: the attempt, the reservation and the outcomes of an operation.

An executor pass writes at most four times, each write one transaction named for what it
means (`workers.executor` walks them):

    begin_preflight    queued -> preflight
    reserve_and_mark   the reservation (if the domain holds exposure) + reserved; or, when the
                       budget refuses, the refusal recorded as `record_observation` does
    begin_dispatch     the attempt with its client id + dispatching + dispatched_at, durable
                       before the request leaves
    record_observation the outcome, its conclusions, the reservation settled, the attempt
                       answered, the card due, the execution state and the next look

A reconcile or track pass ends in one `record_observation` (or one `schedule` when nothing
changed). The writes are hand-written intents (`store.execution_sql`), prepared before they
queue for the group commit; only a reservation against a budget, which must read and sum
before it writes, runs as SQLAlchemy work inside the batch (and its refusal, the same
observation intent, with it). The database decides every race here too: each write moves the execution state
by a conditional UPDATE from a state `store.lifecycle.EXECUTION_TRANSITIONS` allows; one
attempt per operation (unique), one client id per attempt (unique); reservations
serialized per account by a compare-and-set on the account's version (FOR UPDATE would be
dropped on SQLite); outcomes append-only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, and_, insert, or_, select, update

from store.authority import OperationNotFound, Store
from store.conclusions import outcome_digest
from store.execution_sql import (
    OUTCOME_SOURCES,
    dispatch_intent,
    observation_intent,
    settle_statement,
    step_intent,
)
from store.groupcommit import ConditionNotMet, Intent, Results, run_on_connection
from store.leases import lease_due, next_due
from store.lifecycle import (
    Event,
    Execution,
    IllegalExecutionStep,
    IllegalTransition,
    State,
)
from store.models import AccountRow, AttemptRow, OperationRow, OutcomeRow, ReservationRow
from store.once import insert_once
from store.records import Operation
from store.timeutil import stored_time
from store.vocabulary import ReservationState, Stage

RESERVE_RETRIES = 20
EXEC_LEASE_S = 60


@dataclass(frozen=True)
class Attempt:
    """The one submission; where it stands is the operation's execution state."""

    id: str
    operation_id: str
    client_id: str
    last_error: str | None
    dispatched_at: datetime | None = None
    resolved_at: datetime | None = None

    @classmethod
    def from_row(cls, row: Any) -> Attempt:
        return cls(
            row.id,
            row.operation_id,
            row.client_id,
            row.last_error,
            row.dispatched_at,
            row.resolved_at,
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
class Observation:
    """What a pass learned and everything that follows from it, written by one
    `record_observation`. `status` and `concludes` are the domain's say."""

    stage: Stage
    status: str
    execution: Execution
    detail: Mapping[str, Any] = field(default_factory=dict)
    concludes: bool = True
    reconciles: str | None = None  # the digest of the outcome this one reconciles
    # the active reservation becomes CONVERTED (the venue holds the exposure now) or
    # RELEASED (nothing came of it); None keeps it held (an unknown: people or a lookup decide)
    settles: ReservationState | None = None
    look_again_in_s: float | None = None  # None: nothing left to look at
    # the venue's answer to the attempt (or why there is none): stamps resolved_at and
    # last_error on it; progress of a working order does not answer it again
    answers_attempt: bool = False
    attempt_error: str | None = None


@dataclass(frozen=True)
class Exposure:
    """What an operation would add to an account, against the account's budget."""

    account: str
    amount: Decimal
    budget: Decimal
    observed: Decimal  # positions and open orders from a fresh observation
    observed_at: datetime | None = None  # when that observation was taken


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

    # -- the four writes of a pass ----------------------------------------------------------

    async def begin_preflight(self, operation_id: str) -> None:
        """queued -> preflight: the checks against a fresh observation begin."""
        await self._step_to(operation_id, Execution.PREFLIGHT)

    async def reserve_and_mark(
        self,
        operation_id: str,
        exposure: Exposure | None,
        *,
        refused: Callable[[ReservationRefused], Observation],
    ) -> Reserved | ReservationRefused | None:
        """preflight -> reserved, holding `exposure` (if any) against its account's budget,
        in one write. When the budget refuses, that same write records `refused(...)` (an
        observation, see `record_observation`) instead, and the refusal is returned.

        Held: every active reservation, and every one converted into a venue order at or
        after the observation was taken: that observation may predate the order, so the
        order's exposure still counts here. Counting it twice (when the observation did
        include it) only ever refuses more, never exceeds the budget.
        """

        if exposure is None:
            await self._step_to(operation_id, Execution.RESERVED)
            return None

        def write(conn: Connection) -> Reserved | ReservationRefused:
            held = self._hold(conn, operation_id, exposure)
            now, sqlite = self.store.clock(), self.store.sqlite
            if isinstance(held, ReservationRefused):
                seen = refused(held)
                intent = observation_intent(
                    operation_id, seen, _digest(operation_id, seen), now, sqlite
                )
                target = seen.execution
            else:
                intent, target = (
                    step_intent(operation_id, Execution.RESERVED, now, sqlite),
                    Execution.RESERVED,
                )
            try:
                run_on_connection(conn, intent)
            except ConditionNotMet:
                raise IllegalExecutionStep(_execution_of(conn, operation_id), target) from None
            return held

        for _ in range(RESERVE_RETRIES):
            try:
                return await self.store.transact(write)
            except _Raced:
                continue
        raise RuntimeError(f"could not reserve for {operation_id}: too much contention")

    async def begin_dispatch(self, operation_id: str, client_id: str) -> Attempt:
        """reserved -> dispatching with the attempt, its client id and dispatched_at, in one
        write that must commit before the request leaves. An attempt already recorded (by an
        older release) keeps its client id: a restart never mints a second one."""
        intent = dispatch_intent(operation_id, client_id, self.store.clock(), self.store.sqlite)
        results = await self._conditional(intent, operation_id, Execution.DISPATCHING)
        (row,) = results[2]
        return Attempt(
            row["id"],
            row["operation_id"],
            row["client_id"],
            row["last_error"],
            _time_or_none(row["dispatched_at"]),
            _time_or_none(row["resolved_at"]),
        )

    async def record_observation(self, operation_id: str, seen: Observation) -> Outcome:
        """One write: the outcome appended (the envelope shows outcome_observed), the
        proposer's conclusions queued if it concludes its stage, the reservation settled,
        the attempt answered, the card due, the execution state moved and the next look
        scheduled."""
        digest = _digest(operation_id, seen)
        intent = observation_intent(
            operation_id, seen, digest, self.store.clock(), self.store.sqlite
        )
        try:
            await self.store.submit(intent)
        except ConditionNotMet:
            state, execution = await self._where(operation_id)
            if state not in OUTCOME_SOURCES:
                raise IllegalTransition(state, Event.OUTCOME) from None
            raise IllegalExecutionStep(execution, seen.execution) from None
        return Outcome(
            operation_id,
            Stage(seen.stage).value,
            seen.status,
            dict(seen.detail),
            digest,
            seen.reconciles,
        )

    async def _step_to(self, operation_id: str, target: Execution) -> None:
        intent = step_intent(operation_id, target, self.store.clock(), self.store.sqlite)
        await self._conditional(intent, operation_id, target)

    async def _conditional(self, intent: Intent, operation_id: str, target: Execution) -> Results:
        """Submit an intent whose first statement moves the execution state to `target`."""
        try:
            return await self.store.submit(intent)
        except ConditionNotMet:
            _, execution = await self._where(operation_id)
            raise IllegalExecutionStep(execution, target) from None

    async def _where(self, operation_id: str) -> tuple[State, Execution]:
        """Where the operation stands now (why a conditional write matched nothing)."""
        async with self.store.read() as conn:
            row = (
                await conn.execute(
                    select(OperationRow.state, OperationRow.execution_state).where(
                        OperationRow.id == operation_id
                    )
                )
            ).one_or_none()
        if row is None:
            raise OperationNotFound(operation_id)
        return State(row.state), Execution(row.execution_state or Execution.QUEUED)

    # -- the schedule -------------------------------------------------------------------------

    async def lease_due(self, limit: int, lease_s: float = EXEC_LEASE_S) -> list[Operation]:
        """Operations whose executor or reconciler is due, leased to this caller."""
        return await lease_due(self.store, OperationRow.exec_due_at, limit, lease_s)

    async def next_due(self) -> datetime | None:
        """When the executor or reconciler is next due (a backoff, a lease running out)."""
        return await next_due(self.store, OperationRow.exec_due_at)

    async def schedule(self, operation_id: str, in_s: float | None, *, tried: bool = False) -> None:
        """Due again in `in_s` seconds (None: nothing left to do); `tried` counts a fruitless look.
        The one write of a pass that learned nothing new."""
        scheduled = (
            update(OperationRow)
            .where(OperationRow.id == operation_id)
            .values(**self._schedule_values(in_s, tried=tried))
        )
        await self.store.transact(lambda conn: conn.execute(scheduled))

    def _schedule_values(self, in_s: float | None, *, tried: bool) -> dict[str, Any]:
        due = None if in_s is None else self.store.clock() + timedelta(seconds=in_s)
        return {"exec_due_at": due, "exec_tries": OperationRow.exec_tries + 1 if tried else 0}

    async def due_now(self, operation_ids: Sequence[str]) -> int:
        """Something changed at the venue for these operations: look at them now."""
        if not operation_ids:
            return 0
        now = self.store.clock()
        due = (
            update(OperationRow)
            .where(
                OperationRow.id.in_(list(operation_ids)),
                OperationRow.exec_due_at.is_not(None),
                OperationRow.exec_due_at > now,
            )
            .values(exec_due_at=now)
        )
        return await self.store.transact(lambda conn: int(conn.execute(due).rowcount))

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

        def write(conn: Connection) -> list[str]:
            ids = list(conn.execute(query).scalars())
            if ids:
                conn.execute(
                    update(OperationRow)
                    .where(OperationRow.id.in_(ids))
                    .values(exec_due_at=self.store.clock(), exec_tries=0)
                )
            return ids

        return await self.store.transact(write)

    # -- the attempt --------------------------------------------------------------------------

    async def attempt(self, operation_id: str) -> Attempt | None:
        async with self.store.read() as conn:
            row = (
                await conn.execute(
                    select(AttemptRow.__table__).where(AttemptRow.operation_id == operation_id)
                )
            ).one_or_none()
        return None if row is None else Attempt.from_row(row)

    # -- reservations -------------------------------------------------------------------------

    def _hold(
        self, conn: Connection, operation_id: str, exposure: Exposure
    ) -> Reserved | ReservationRefused:
        """Inside `reserve_and_mark`'s write: hold `exposure.amount` if it fits the budget."""
        account, amount = exposure.account, exposure.amount
        # the account row exists from here on (a concurrent first reserver's insert is
        # skipped, not an error); FOR UPDATE then queues concurrent reservers on PostgreSQL
        # (SQLite has one writer anyway and SQLAlchemy leaves the clause out there); the
        # conditional version update below is what guarantees the budget either way
        conn.execute(insert_once(conn.dialect.name, AccountRow).values(account=account, version=0))
        version = conn.execute(
            select(AccountRow.version).where(AccountRow.account == account).with_for_update()
        ).scalar_one()
        holding = ReservationRow.state == ReservationState.ACTIVE.value
        if exposure.observed_at is not None:
            holding = or_(
                holding,
                and_(
                    ReservationRow.state == ReservationState.CONVERTED.value,
                    ReservationRow.released_at >= exposure.observed_at,
                ),
            )
        rows = conn.execute(
            select(ReservationRow.operation_id, ReservationRow.amount, ReservationRow.state).where(
                ReservationRow.account == account, holding
            )
        ).all()
        held = sum((Decimal(row.amount) for row in rows), Decimal(0))
        if any(
            row.operation_id == operation_id and row.state == ReservationState.ACTIVE.value
            for row in rows
        ):
            return Reserved(account, amount, held)  # taken before a restart (older releases)
        if exposure.observed + held + amount > exposure.budget:
            return ReservationRefused(account, amount, exposure.budget, exposure.observed, held)
        moved = conn.execute(
            update(AccountRow)
            .where(AccountRow.account == account, AccountRow.version == version)
            .values(version=version + 1)
        )
        if moved.rowcount != 1:
            raise _Raced
        conn.execute(
            insert(ReservationRow).values(
                operation_id=operation_id,
                account=account,
                amount=format(amount, "f"),
                state=ReservationState.ACTIVE.value,
                created_at=self.store.clock(),
            )
        )
        return Reserved(account, amount, held + amount)

    async def release(self, operation_id: str) -> bool:
        """Nothing came of it: the held exposure is gone."""
        return await self.settle(operation_id, converted=False)

    async def settle(self, operation_id: str, *, converted: bool) -> bool:
        """The venue answered: the held exposure is now observable (converted) or gone."""
        return await self.store.transact(
            lambda conn: self._settle(conn, operation_id, _settled(converted))
        )

    async def close_out(self, operation_id: str, *, converted: bool) -> None:
        """The outcome is recorded and the venue has settled it, but a crash cut the
        bookkeeping short: settle the reservation and stop looking, in one write."""
        stops = (
            update(OperationRow)
            .where(OperationRow.id == operation_id)
            .values(**self._schedule_values(None, tried=False))
        )

        def write(conn: Connection) -> None:
            self._settle(conn, operation_id, _settled(converted))
            conn.execute(stops)

        await self.store.transact(write)

    def _settle(self, conn: Connection, operation_id: str, settles: ReservationState) -> bool:
        statement = settle_statement(operation_id, settles, self.store.clock(), self.store.sqlite)
        (settled,) = run_on_connection(conn, Intent((statement,)))
        return bool(settled)

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


def _settled(converted: bool) -> ReservationState:
    return ReservationState.CONVERTED if converted else ReservationState.RELEASED


def _digest(operation_id: str, seen: Observation) -> str:
    return outcome_digest(
        operation_id, Stage(seen.stage), seen.status, dict(seen.detail), seen.reconciles
    )


def _execution_of(conn: Connection, operation_id: str) -> Execution:
    current = conn.execute(
        select(OperationRow.execution_state).where(OperationRow.id == operation_id)
    ).scalar_one_or_none()
    return Execution(current or Execution.QUEUED)


def _time_or_none(value: Any) -> datetime | None:
    return None if value is None else stored_time(value)


async def views(store: Store, operations: Sequence[Operation]) -> list[dict[str, Any]]:
    """The projection of each operation with its outcomes (one query for all of them)."""
    from store.projection import operation_view  # projection imports this module

    outcomes = await ExecutionLedger(store).outcomes_for([op.id for op in operations])
    return [operation_view(op, outcomes[op.id]) for op in operations]


async def view(store: Store, operation: Operation) -> dict[str, Any]:
    [found] = await views(store, [operation])
    return found
