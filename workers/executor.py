"""The executor and the reconciler: claimed operations run once, unknowns are looked up.

One pass over a leased operation walks the execution table (`store.lifecycle`) from where
the store says it is, so a pass after a crash continues exactly where the dead one stopped.
It writes at most four times, each one transaction named for what it does:

    queued --begin_preflight--> preflight --reserve_and_mark--> reserved
        --begin_dispatch (attempt + client id)--> dispatching --record_observation-->
        submitted / completed, or submission_unknown --record_observation--> reconciled

* Everything before dispatch can simply run again (it sent nothing). A refusal (preflight,
  budget) is recorded by the write that found it, with the reservation released.
* The attempt, its client id and `dispatching` are stored in one write before the request
  leaves. An operation found in `dispatching` was interrupted mid-flight (or just before
  the request left, which the store cannot tell apart): it gets an explicit `unknown`
  outcome and is reconciled by looking its client id up. It is never submitted again.
* A venue that does not know the client id `not_found_after_s` after dispatch never
  received it (`not_submitted`, the reservation released). Working orders (resting,
  protective children) are looked at again with backoff, or at once when the venue says
  something changed (`ExecutionLedger.due_now`); each such look ends in one write.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta

from kernel.logcontext import about
from store import (
    Execution,
    ExecutionLedger,
    Observation,
    Operation,
    Outcome,
    ReservationRefused,
    ReservationState,
    Stage,
    Store,
)
from workers.crash import crash_point
from workers.domains.execution import (
    UNKNOWN,
    Hold,
    Observed,
    Refusal,
    Runner,
    SubmissionUnknown,
    Unresolvable,
    client_id_for,
)
from workers.execution_failures import after_failure, error_class, meant
from workers.executor_observations import (
    over_budget,
    refused_before_dispatch,
    submission_unknown,
)
from workers.loop import seconds_until, window_loop

log = logging.getLogger("countersign.executor")

INITIAL = Stage.INITIAL
RECONCILED = Stage.RECONCILED
FIRST_LOOK_S = 0.5
# a row due already that the lease passed over (held by another transaction for a moment) is
# looked at again this soon, not after the poll (an hour, with a worker process's kicks)
PASSED_OVER_S = 0.1


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
        max_failed_passes: int = 5,
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
        self.max_failed_passes = max_failed_passes
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

    @property
    def state(self) -> str:
        """For `/readyz`: an executor in this process runs while the process does."""
        return "running"

    def where(self) -> dict[str, object]:
        return {"process": "inline"}

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
        due_in = seconds_until(self.store.clock, await self.ledger.next_due())
        return None if due_in is None else max(PASSED_OVER_S, due_in)

    async def advance(self, op: Operation) -> None:
        """One pass; one that raises is due again with backoff, `max_failed_passes` of them in
        a row end it, by where it stands, never a silent loop (`workers.execution_failures`)."""
        self.passes += 1
        try:
            with about(op.id):
                await self._advance(op)
        except Exception as error:
            self.failures += 1
            with about(op.id):
                log.exception("execution of %s failed; it will be looked at again", op.id)
                ended = await after_failure(
                    self.ledger,
                    op.id,
                    error_class(error),
                    backoff_s=self._backoff(op),
                    budget=self.max_failed_passes,
                )
                if ended is not None:  # the budget is spent: it ends here, visibly
                    await self._record(op, ended)

    def _backoff(self, op: Operation) -> float:
        return min(self.track_max_s, FIRST_LOOK_S * 2.0 ** min(op.exec_tries, 16))

    # -- the steps ----------------------------------------------------------------------------
    # Each pass writes at most four times (store/execution/execution_ledger.py names them): begin_preflight,
    # reserve_and_mark, begin_dispatch, record_observation; a reconcile or track pass ends in
    # one record_observation, or one schedule when nothing changed.

    async def _advance(self, op: Operation) -> None:
        state = Execution(op.execution_state or Execution.QUEUED)
        runner = self.runners.get(op.kind)
        if state is Execution.QUEUED:
            await self.ledger.begin_preflight(op.id)
            state = Execution.PREFLIGHT
        if state is Execution.PREFLIGHT:
            if not await self._prepare(op, runner):
                return
            state = Execution.RESERVED
        if state is Execution.RESERVED:
            refusal = self._unsupported(op, runner)
            if refusal is not None:
                await self._refuse(op, refusal)
                return
            assert runner is not None
            await self._dispatch(op, runner)
            return
        if state is Execution.DISPATCHING:  # interrupted mid-flight: it may be on the venue
            reason = "the bot stopped while the order was being sent"
            await self._record(op, submission_unknown(reason, look_again_in_s=FIRST_LOOK_S))
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
        if not runner.runs(envelope.executor_name, envelope.executor_revision):
            return Refusal(
                "executor_revision_unsupported",
                f"confirmed for {envelope.executor_name} revision {envelope.executor_revision}; "
                f"this build's {op.kind} runner does not run it "
                f"(its own: {runner.executor_name} revision {runner.executor_revision})",
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
        """Preflight and reserve (one write either way); True when it may be dispatched."""
        refusal = self._unsupported(op, runner)
        prepared: Refusal | Hold | None = refusal
        if refusal is None:
            assert runner is not None
            prepared = await asyncio.wait_for(runner.prepare(op), self.submit_timeout_s)
        if isinstance(prepared, Refusal):
            await self._refuse(op, prepared)
            return False
        held = await self.ledger.reserve_and_mark(
            op.id,
            prepared if isinstance(prepared, Hold) else None,
            refused=lambda refused: meant(op.kind, over_budget(refused)),
        )
        if isinstance(held, ReservationRefused):  # the same write recorded the refusal
            log.info("%s refused before dispatch: %s", op.id, held.reason)
            self._recorded(op, INITIAL, Execution.RESERVATION_REFUSED.value)
            return False
        crash_point("after_reserve")
        return True

    async def _refuse(self, op: Operation, refusal: Refusal) -> None:
        log.info("%s refused before dispatch: %s (%s)", op.id, refusal.code, refusal.reason)
        await self._record(op, refused_before_dispatch(refusal, Execution.PREFLIGHT_REJECTED))

    async def _dispatch(self, op: Operation, runner: Runner) -> None:
        attempt = await self.ledger.begin_dispatch(op.id, client_id_for(op.id))
        # durable: the attempt, its client id and `dispatching`; nothing has left yet. A crash
        # from here on leaves it dispatching, which only a lookup by client id may resolve.
        crash_point("after_attempt")
        try:
            found = await asyncio.wait_for(
                runner.submit(op, attempt.client_id), self.submit_timeout_s
            )
        except (SubmissionUnknown, TimeoutError, OSError) as error:
            reason = str(error) or type(error).__name__
            log.warning("%s: submission unknown (%s); reconciling", op.id, reason)
            await self._record(op, submission_unknown(reason, look_again_in_s=FIRST_LOOK_S))
            return
        crash_point("after_response")
        execution = Execution.SUBMITTED if found.working else Execution.COMPLETED
        await self._observed(op, INITIAL, found, execution, answers_attempt=True)

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
            # the held reservation stays: people decide
            await self._record(
                op,
                Observation(
                    RECONCILED,
                    "unresolved",
                    Execution.RECONCILED,
                    {"reason": str(error)},
                    reconciles=reconciles,
                    answers_attempt=True,
                    attempt_error=str(error),
                ),
            )
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
                {"client_id": client_id, "reason": "nobody received this client id"},
            )
        await self._observed(
            op, RECONCILED, found, Execution.RECONCILED, reconciles, answers_attempt=True
        )

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
                await self.ledger.close_out(op.id, converted=found.holds_exposure)
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
        *,
        answers_attempt: bool = False,
    ) -> None:
        """What the venue said, with the reservation it settles and the next look (a
        working order soon, with backoff; a settled one never), in one write."""
        await self._record(
            op,
            Observation(
                stage,
                found.status,
                execution,
                found.detail,
                concludes=found.concludes,
                reconciles=reconciles,
                settles=ReservationState.CONVERTED
                if found.holds_exposure
                else ReservationState.RELEASED,
                look_again_in_s=FIRST_LOOK_S if found.working else None,
                answers_attempt=answers_attempt,
            ),
        )
        crash_point("after_outcome")

    async def _record(self, op: Operation, seen: Observation) -> Outcome:
        outcome = await self.ledger.record_observation(op.id, meant(op.kind, seen))
        self._recorded(op, seen.stage, seen.status)
        return outcome

    def _recorded(self, op: Operation, stage: Stage, status: str) -> None:
        self.outcomes[status] += 1
        log.info("%s: %s outcome %s", op.id, stage, status)
        self.on_outcome()


def _last(outcomes: list[Outcome], status: str) -> Outcome | None:
    return next((o for o in reversed(outcomes) if o.status == status), None)
