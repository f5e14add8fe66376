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
changed). The writes are hand-written intents (`store.execution.sql`), prepared before they
queue for the group commit; only a reservation against a budget, which must read and sum
before it writes, runs as SQLAlchemy work inside the batch (and its refusal, the same
observation intent, with it). The database decides every race here too: each write moves the execution state
by a conditional UPDATE from a state `store.lifecycle.EXECUTION_TRANSITIONS` allows; one
attempt per operation (unique), one client id per attempt (unique); reservations
serialized per account by a compare-and-set on the account's version (FOR UPDATE would be
dropped on SQLite); outcomes append-only.

`ExecutionLedger` owns those writes and fronts the rest, delegating: the schedule
(`store/execution/schedule.py`), reservations (`store/claims/reservations.py`), the attempt and
outcomes read back (`store/execution/reads.py`), an attempt's evidence (`store/execution/evidence.py`);
its values are `store/execution/records.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, select, update

from kernel.timeutil import stored_time
from store.authority.records import Operation
from store.authority.store import Store
from store.authority.transitions import OperationNotFound
from store.claims import reservations
from store.claims.exposure import Exposure
from store.claims.reservations import Raced, ReservationRefused, Reserved, hold, settled
from store.deliveries.conclusions import outcome_digest
from store.execution import reads as execution_reads
from store.execution import schedule as execution_schedule
from store.execution.evidence import evidence_of, record_evidence
from store.execution.records import Attempt, FailedPass, Observation, Outcome
from store.execution.schedule import EXEC_LEASE_S, schedule_values
from store.execution.sql import (
    OUTCOME_SOURCES,
    dispatch_intent,
    observation_intent,
    step_intent,
)
from store.groupcommit import ConditionNotMet, Intent, Results, run_on_connection
from store.lifecycle import (
    Event,
    Execution,
    IllegalExecutionStep,
    IllegalTransition,
    State,
)
from store.schema.tables import OperationRow
from store.vocabulary import Stage, Tone

RESERVE_RETRIES = 20


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
            held = hold(conn, self.store.clock, operation_id, exposure)
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
            except Raced:
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
        now = self.store.clock()
        intent = observation_intent(operation_id, seen, digest, now, self.store.sqlite)
        try:
            await self.store.commit_intent(intent)
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
            now,
            seen.final,
            Tone(seen.tone).value,
            seen.said(),
        )

    async def _step_to(self, operation_id: str, target: Execution) -> None:
        intent = step_intent(operation_id, target, self.store.clock(), self.store.sqlite)
        await self._conditional(intent, operation_id, target)

    async def _conditional(self, intent: Intent, operation_id: str, target: Execution) -> Results:
        """Submit an intent whose first statement moves the execution state to `target`."""
        try:
            return await self.store.commit_intent(intent)
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

    # -- the schedule (store/execution/schedule.py) -------------------------------------------

    async def lease_due(self, limit: int, lease_s: float = EXEC_LEASE_S) -> list[Operation]:
        """Operations whose executor or reconciler is due, leased to this caller."""
        return await execution_schedule.lease_due(self.store, limit, lease_s)

    async def next_due(self) -> datetime | None:
        """When the executor or reconciler is next due (a backoff, a lease running out)."""
        return await execution_schedule.next_due(self.store)

    async def schedule(self, operation_id: str, in_s: float | None, *, tried: bool = False) -> None:
        """Due again in `in_s` seconds (None: nothing left to do); `tried` counts a fruitless look.
        The one write of a pass that learned nothing new."""
        await execution_schedule.schedule(self.store, operation_id, in_s, tried=tried)

    async def failed_pass(self, operation_id: str, in_s: float) -> FailedPass:
        """A pass raised: counted (durably, so a restart never resets it), due again in
        `in_s`; where the operation stands now and whether an attempt is recorded."""
        return await execution_schedule.failed_pass(self.store, operation_id, in_s)

    async def due_now(self, operation_ids: Sequence[str]) -> int:
        """Something changed at the venue for these operations: look at them now."""
        return await execution_schedule.due_now(self.store, operation_ids)

    async def reconcile_now(self, operation_id: str | None = None) -> list[str]:
        """Look at unknown submissions and working orders now (all, or one): an operator's
        "check again" after fixing a venue or a network. Never touches an operation mid-dispatch
        (its worker holds it) or one that is settled."""
        return await execution_schedule.reconcile_now(self.store, operation_id)

    # -- the attempt and outcomes (store/execution/reads.py) ----------------------------------

    async def attempt(self, operation_id: str) -> Attempt | None:
        return await execution_reads.attempt(self.store, operation_id)

    async def outcomes_for(self, operation_ids: Sequence[str]) -> dict[str, list[Outcome]]:
        """Outcomes of many operations in one query (oldest first per operation)."""
        return await execution_reads.outcomes_for(self.store, operation_ids)

    async def outcomes(self, operation_id: str) -> list[Outcome]:
        return await execution_reads.outcomes(self.store, operation_id)

    # -- an attempt's evidence (store/execution/evidence.py) ---------------------------------------------

    async def record_evidence(self, client_id: str, evidence: Mapping[str, Any]) -> None:
        """Written once, before the request leaves: the same again is a no-op, other
        evidence is refused (`store.execution.evidence.EvidenceConflict`)."""
        await record_evidence(self.store, client_id, evidence)

    async def evidence(self, client_id: str) -> dict[str, Any] | None:
        return await evidence_of(self.store, client_id)

    # -- reservations (store/claims/reservations.py) -------------------------------------------------

    async def release(self, operation_id: str) -> bool:
        """Nothing came of it: the held exposure is gone."""
        return await self.settle(operation_id, converted=False)

    async def settle(self, operation_id: str, *, converted: bool) -> bool:
        """The venue answered: the held exposure is now observable (converted) or gone."""
        return await self.store.transact(
            lambda conn: reservations.settle(
                conn, self.store.clock, self.store.sqlite, operation_id, settled(converted)
            )
        )

    async def close_out(self, operation_id: str, *, converted: bool) -> None:
        """The outcome is recorded and the venue has settled it, but a crash cut the
        bookkeeping short: settle the reservation and stop looking, in one write."""
        stops = (
            update(OperationRow)
            .where(OperationRow.id == operation_id)
            .values(**schedule_values(self.store.clock, None, tried=False))
        )

        def write(conn: Connection) -> None:
            reservations.settle(
                conn, self.store.clock, self.store.sqlite, operation_id, settled(converted)
            )
            conn.execute(stops)

        await self.store.transact(write)

    async def reservation_state(self, operation_id: str) -> str | None:
        return await reservations.reservation_state(self.store, operation_id)

    async def held(self, account: str) -> Decimal:
        return await reservations.held(self.store, account)


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
