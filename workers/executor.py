"""The executor and the reconciler: claimed operations run once, unknowns are looked up.

One pass over a leased operation walks the execution table (`store.lifecycle`) from where
the store says it is, so a pass after a crash continues exactly where the dead one stopped:

    queued -> preflight -> reserved -> (attempt recorded) dispatching -> submitted / completed
                                                              \\-> submission_unknown -> reconciled

* Everything before dispatch can simply run again (it sent nothing).
* The attempt and its client id are recorded before dispatch; `dispatching` is stored
  before the request leaves. An operation found in `dispatching` was interrupted mid-flight:
  it gets an explicit `unknown` outcome and is reconciled by looking its client id up. It is
  never submitted again.
* A venue that does not know the client id `not_found_after_s` after dispatch never
  received it (`not_submitted`, the reservation released). Working orders (resting,
  protective children) are looked at again with backoff, or at once when the venue says
  something changed (`ExecutionLedger.due_now`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta

from store.authority import Store
from store.execution import ExecutionLedger, Outcome, ReservationRefused
from store.lifecycle import Execution
from store.logcontext import about
from store.records import Operation
from store.vocabulary import AttemptState, Stage
from workers.crash import crash_point
from workers.domains.execution import (
    Hold,
    Observed,
    Refusal,
    Runner,
    SubmissionUnknown,
    Unresolvable,
    client_id_for,
)
from workers.loop import seconds_until, window_loop

log = logging.getLogger("countersign.executor")

INITIAL = Stage.INITIAL
RECONCILED = Stage.RECONCILED
UNKNOWN = "unknown"
FIRST_LOOK_S = 0.5


class ExecutionWorker:
    def __init__(
        self,
        store: Store,
        runners: Mapping[str, Runner],
        *,
        concurrency: int = 4,
        poll_s: float = 1.0,
        submit_timeout_s: float = 10.0,
        not_found_after_s: float = 60.0,
        track_max_s: float = 30.0,
        on_outcome: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.ledger = ExecutionLedger(store)
        self.runners = runners
        self.concurrency = concurrency
        self.poll_s = poll_s
        self.submit_timeout_s = submit_timeout_s
        self.not_found_after = timedelta(seconds=not_found_after_s)
        self.track_max_s = track_max_s
        # a pass is bounded by its two venue calls' timeouts (prepare, submit) plus a few
        # store writes; the lease outlives it, and a dead worker's lease soon falls due
        self.lease_s = 2 * submit_timeout_s + 3
        self.on_outcome = on_outcome  # the card is due
        self._kick = asyncio.Event()
        self.passes = 0
        self.failures = 0
        self.outcomes: Counter[str] = Counter()  # by status, for /metrics

    def kick(self) -> None:
        """Something is due now (a claim, a venue change, a notification from a replica)."""
        self._kick.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Up to `concurrency` passes in flight; each one that finishes makes room for the next
        lease, so one slow venue call never holds back the operations behind it."""
        await window_loop(
            self._lease,
            self.advance,
            width=self.concurrency,
            kicked=self._kick,
            stop=stop,
            poll_s=self.poll_s,
            log=log,
            next_due=self._next_due_in,
        )

    async def drain(self) -> int:
        """One batch leased and run to its end (tests step the worker with it)."""
        due = await self._lease(self.concurrency)
        await asyncio.gather(*(self.advance(op) for op in due))
        return len(due)

    async def _lease(self, limit: int) -> list[Operation]:
        return await self.ledger.lease_due(limit, self.lease_s)

    async def _next_due_in(self) -> float | None:
        return seconds_until(self.store.clock, await self.ledger.next_due())

    async def advance(self, op: Operation) -> None:
        """One pass over a leased operation; any failure leaves it due again with backoff."""
        self.passes += 1
        try:
            with about(op.id):
                await self._advance(op)
        except Exception:
            self.failures += 1
            log.exception("execution of %s failed; it will be looked at again", op.id)
            await self.ledger.schedule(op.id, self._backoff(op), tried=True)

    def _backoff(self, op: Operation) -> float:
        return min(self.track_max_s, FIRST_LOOK_S * 2.0 ** min(op.exec_tries, 16))

    # -- the steps ----------------------------------------------------------------------------

    async def _advance(self, op: Operation) -> None:
        state = Execution(op.execution_state or Execution.QUEUED)
        runner = self.runners.get(op.kind)
        if state is Execution.QUEUED:
            await self.ledger.step(op.id, Execution.PREFLIGHT)
            state = Execution.PREFLIGHT
        if state is Execution.PREFLIGHT:
            if not await self._prepare(op, runner):
                return
            state = Execution.RESERVED
        if state is Execution.RESERVED:
            refusal = self._unsupported(op, runner)
            if refusal is not None:
                await self._refuse(op, refusal, Execution.PREFLIGHT_REJECTED)
                return
            assert runner is not None
            await self._dispatch(op, runner)
            return
        if state is Execution.DISPATCHING:  # interrupted mid-flight: it may be on the venue
            await self._record(
                op,
                INITIAL,
                Observed(UNKNOWN, {"reason": "the bot stopped while the order was being sent"}),
                Execution.SUBMISSION_UNKNOWN,
            )
            state = Execution.SUBMISSION_UNKNOWN
        if runner is None:  # nothing here can read this venue: keep the operation as it is
            log.error("no runner for %s (%s); it stays %s", op.id, op.kind, state.value)
            await self.ledger.schedule(op.id, self.track_max_s, tried=True)
            return
        if state is Execution.SUBMISSION_UNKNOWN:
            await self._reconcile(op, runner)
        elif state in (Execution.SUBMITTED, Execution.COMPLETED, Execution.RECONCILED):
            await self._track(op, runner, state)
        else:
            await self.ledger.schedule(op.id, None)  # refused before dispatch: settled

    def _unsupported(self, op: Operation, runner: Runner | None) -> Refusal | None:
        """Before anything is sent: is this build allowed to run this operation?"""
        if runner is None:
            return Refusal("executor_missing", f"no executor for {op.kind} in this build")
        envelope = op.envelope
        if (envelope.executor_name, envelope.executor_revision) != (
            runner.executor_name,
            runner.executor_revision,
        ):
            return Refusal(
                "executor_revision_unsupported",
                f"confirmed for {envelope.executor_name} revision {envelope.executor_revision}; "
                f"this build runs {runner.executor_name} revision {runner.executor_revision}",
                "propose it again so operators confirm what this build runs",
            )
        if not runner.enabled:
            return Refusal(
                "domain_disabled",
                f"{op.kind} is disabled in the configuration; nothing was sent",
                "enable the domain and propose again",
            )
        return None

    async def _prepare(self, op: Operation, runner: Runner | None) -> bool:
        """Preflight and reserve; True when the operation may be dispatched."""
        refusal = self._unsupported(op, runner)
        prepared: Refusal | Hold | None = refusal
        if refusal is None:
            assert runner is not None
            prepared = await asyncio.wait_for(runner.prepare(op), self.submit_timeout_s)
        if isinstance(prepared, Refusal):
            await self._refuse(op, prepared, Execution.PREFLIGHT_REJECTED)
            return False
        if isinstance(prepared, Hold):
            held = await self.ledger.reserve(
                op.id,
                prepared.account,
                prepared.amount,
                budget=prepared.budget,
                observed=prepared.observed,
                observed_at=prepared.observed_at,
            )
            if isinstance(held, ReservationRefused):
                await self._refuse(
                    op,
                    Refusal(
                        "budget_exceeded",
                        held.reason,
                        "wait for open orders to settle, or propose a smaller order",
                    ),
                    Execution.RESERVATION_REFUSED,
                )
                return False
        await self.ledger.step(op.id, Execution.RESERVED)
        crash_point("after_reserve")
        return True

    async def _refuse(self, op: Operation, refusal: Refusal, execution: Execution) -> None:
        status = execution.value  # preflight_rejected / reservation_refused
        log.info("%s refused before dispatch: %s (%s)", op.id, refusal.code, refusal.reason)
        await self.ledger.release(op.id)
        await self._record(op, INITIAL, Observed(status, refusal.detail()), execution)
        await self.ledger.schedule(op.id, None)

    async def _dispatch(self, op: Operation, runner: Runner) -> None:
        client_id = client_id_for(op.id)
        await self.ledger.record_attempt(op.id, client_id)
        crash_point("after_attempt")
        await self.ledger.step(op.id, Execution.DISPATCHING)
        await self.ledger.mark_attempt(op.id, AttemptState.DISPATCHED)
        try:
            found = await asyncio.wait_for(runner.submit(op, client_id), self.submit_timeout_s)
        except (SubmissionUnknown, TimeoutError, OSError) as error:
            reason = str(error) or type(error).__name__
            log.warning("%s: submission unknown (%s); reconciling", op.id, reason)
            await self.ledger.mark_attempt(op.id, AttemptState.UNKNOWN, reason)
            await self._record(
                op, INITIAL, Observed(UNKNOWN, {"reason": reason}), Execution.SUBMISSION_UNKNOWN
            )
            await self.ledger.schedule(op.id, FIRST_LOOK_S)
            return
        crash_point("after_response")
        await self.ledger.mark_attempt(op.id, AttemptState.RESOLVED)
        execution = Execution.SUBMITTED if found.working else Execution.COMPLETED
        await self._observed(op, INITIAL, found, execution)

    async def _reconcile(self, op: Operation, runner: Runner) -> None:
        client_id = client_id_for(op.id)
        attempt = await self.ledger.attempt(op.id)
        dispatched_at = attempt.dispatched_at if attempt else None
        unknown = _last(await self.ledger.outcomes(op.id), UNKNOWN)
        reconciles = unknown.outcome_digest if unknown else None
        try:
            found = await asyncio.wait_for(
                runner.lookup(op, client_id, dispatched_at), self.submit_timeout_s
            )
        except Unresolvable as error:
            await self._record(
                op,
                RECONCILED,
                Observed("unresolved", {"reason": str(error)}),
                Execution.RECONCILED,
                reconciles,
            )
            await self.ledger.mark_attempt(op.id, AttemptState.UNKNOWN, str(error))
            await self.ledger.schedule(op.id, None)  # held reservation stays: people decide
            return
        except (SubmissionUnknown, TimeoutError, OSError) as error:
            log.info("%s: still unknown (%s)", op.id, error)
            await self.ledger.schedule(op.id, self._backoff(op), tried=True)
            return
        if found is None:
            never_after = (dispatched_at or op.updated_at) + self.not_found_after
            if self.store.clock() < never_after:
                await self.ledger.schedule(op.id, self._backoff(op), tried=True)
                return
            found = Observed(
                "not_submitted",
                {"client_id": client_id, "reason": "the venue never received this client id"},
            )
        await self.ledger.mark_attempt(op.id, AttemptState.RESOLVED)
        await self._observed(op, RECONCILED, found, Execution.RECONCILED, reconciles)

    async def _track(self, op: Operation, runner: Runner, state: Execution) -> None:
        """A working order: record what changed since the last outcome."""
        outcomes = await self.ledger.outcomes(op.id)
        last = outcomes[-1] if outcomes else None
        found = await asyncio.wait_for(
            runner.lookup(op, client_id_for(op.id), None), self.submit_timeout_s
        )
        if found is None or last is None:
            await self.ledger.schedule(op.id, self._backoff(op), tried=True)
            return
        if (found.status, found.detail) == (last.status, last.detail):
            if found.working:
                await self.ledger.schedule(op.id, self._backoff(op), tried=True)
            else:  # settled before a crash cut the bookkeeping short: finish it
                await self.ledger.settle(op.id, converted=found.holds_exposure)
                await self._look_again(op, found)
            return
        execution = state
        if state is Execution.SUBMITTED and not found.working:
            execution = Execution.COMPLETED
        await self._observed(op, Stage(last.stage), found, execution, last.reconciles_digest)

    async def _observed(
        self,
        op: Operation,
        stage: Stage,
        found: Observed,
        execution: Execution,
        reconciles: str | None = None,
    ) -> None:
        """What the venue said: the outcome, the reservation it settles, the next look."""
        await self._record(op, stage, found, execution, reconciles)
        await self.ledger.settle(op.id, converted=found.holds_exposure)
        crash_point("after_outcome")
        await self._look_again(op, found)

    async def _look_again(self, op: Operation, found: Observed) -> None:
        """A working order is looked at again soon (and with backoff); a settled one never."""
        await self.ledger.schedule(op.id, FIRST_LOOK_S if found.working else None)

    async def _record(
        self,
        op: Operation,
        stage: Stage,
        found: Observed,
        execution: Execution,
        reconciles: str | None = None,
    ) -> Outcome:
        outcome = await self.ledger.record_outcome(
            op.id,
            stage=stage,
            status=found.status,
            concludes=found.concludes,
            detail=found.detail,
            execution=execution,
            reconciles=reconciles,
        )
        self.outcomes[found.status] += 1
        log.info("%s: %s outcome %s", op.id, stage, found.status)
        self.on_outcome()
        return outcome


def _last(outcomes: list[Outcome], status: str) -> Outcome | None:
    return next((o for o in reversed(outcomes) if o.status == status), None)
