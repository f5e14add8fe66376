"""When executor passes keep raising: how the failure is named, and how the operation ends.

A pass that raises is counted in the store (`ExecutionLedger.failed_pass`); after
`max_failed_passes` in a row the executor stops looping and records one of these, chosen by
where the store says the operation stands, never by where the failed pass thought it was:

* before dispatch, with no attempt recorded (so the store proves nothing left): `unresolved`,
  final, the reservation released; the proposer hears of it like any other conclusion.
* dispatching or a working order: it may be on the venue, so it becomes `unknown` and goes to
  reconciliation, which looks the client id up (and has its own budget of failed passes).
* an unknown or a settled order being looked at: `unresolved` at the reconciled stage, the
  reservation left as it is: people check the venue.

Only the exception's class is recorded, never its message: a venue's or a driver's message
may carry an account, a URL with a token or a payload. `concluding` decides (pure);
`after_failure` counts, reads where the operation stands and asks it.

Whatever the executor records, failure or not, is `meant` first: the outcome is stored with
what its status says for the operation's kind (words, tone, finality), so no reader guesses.
"""

from __future__ import annotations

import decimal
import logging
from dataclasses import replace
from typing import Any

from store import (
    Execution,
    ExecutionLedger,
    FailedPass,
    Observation,
    Outcome,
    ReservationState,
    Stage,
)
from workers.domains import meaning
from workers.domains.execution import UNKNOWN, UNRESOLVED

log = logging.getLogger("countersign.executor")

FAILED_CODE = "executor_failed"
BEFORE_DISPATCH = frozenset({Execution.PREFLIGHT, Execution.RESERVED})
MAY_BE_SENT = frozenset({Execution.DISPATCHING, Execution.SUBMITTED})
LOOKED_AT = frozenset({Execution.SUBMISSION_UNKNOWN, Execution.COMPLETED, Execution.RECONCILED})


def error_class(error: BaseException) -> str:
    """The exception's class name; for a decimal signal, the condition that raised it
    (`InvalidOperation([DivisionImpossible])` is "DivisionImpossible")."""
    if isinstance(error, decimal.DecimalException) and error.args:
        conditions = error.args[0]
        if isinstance(conditions, list) and conditions and isinstance(conditions[0], type):
            return conditions[0].__name__
    return type(error).__name__


def meant(kind: str, seen: Observation) -> Observation:
    """`seen` with what its status says for an operation of `kind` (the domain's words, tone
    and finality, else the executor's own: `workers.domains.meaning`), to be stored with it."""
    said = meaning(kind, seen.status)
    return replace(seen, words=said.words.as_json(), tone=said.tone, final=said.final)


def failure_detail(failed: FailedPass, error: str, *, nothing_sent: bool) -> dict[str, Any]:
    return {
        "code": FAILED_CODE,
        "error_class": error,
        "failed_passes": failed.count,
        "nothing_sent": nothing_sent,
        "hint": "fix the cause, then propose it again"
        if nothing_sent
        else "check the venue for this operation's client id before anything else",
    }


def concluding(failed: FailedPass, error: str, last: Outcome | None) -> Observation | None:
    """What to record after `failed.count` failed passes in a row; None: nothing safe to
    record from where it stands (left due, for people to see in the logs)."""
    execution = failed.execution
    if execution in BEFORE_DISPATCH and not failed.attempt_recorded:
        return Observation(
            Stage.INITIAL,
            UNRESOLVED,
            Execution.PREFLIGHT_REJECTED,  # final: nothing was sent and nothing will be
            failure_detail(failed, error, nothing_sent=True),
            settles=ReservationState.RELEASED,
            nothing_sent=True,
        )
    detail = failure_detail(failed, error, nothing_sent=False)
    if execution in MAY_BE_SENT:  # the reservation stays held; the reconciler looks it up
        return Observation(
            Stage.INITIAL,
            UNKNOWN,
            Execution.SUBMISSION_UNKNOWN,
            detail,
            look_again_in_s=0.0,
            answers_attempt=True,
            attempt_error=error,
        )
    if execution in LOOKED_AT:  # what the venue holds is for people to check
        return Observation(
            Stage.RECONCILED,
            UNRESOLVED,
            Execution.RECONCILED,
            detail,
            reconciles=last.outcome_digest if last else None,
            answers_attempt=execution is Execution.SUBMISSION_UNKNOWN,
            attempt_error=error,
        )
    return None


async def after_failure(
    ledger: ExecutionLedger, operation_id: str, error: str, *, backoff_s: float, budget: int
) -> Observation | None:
    """Count a failed pass (durably: a restart keeps the count), due again in `backoff_s`;
    at `budget` in a row, what to record from where the store says it stands."""
    failed = await ledger.failed_pass(operation_id, backoff_s)
    if failed.count < budget:
        return None
    if failed.execution is Execution.QUEUED and not failed.attempt_recorded:
        await ledger.begin_preflight(operation_id)  # the one step into a refusable state
        failed = replace(failed, execution=Execution.PREFLIGHT)
    outcomes = await ledger.outcomes(operation_id)
    seen = concluding(failed, error, outcomes[-1] if outcomes else None)
    log.error(
        "%s: %d passes failed in a row (%s) while %s: %s",
        operation_id,
        failed.count,
        error,
        failed.execution,
        f"recording {seen.status}" if seen else "nothing safe to record; it stays due",
    )
    return seen
