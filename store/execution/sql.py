"""The executor's writes as hand-written SQL: `store.execution.execution_ledger`'s steps as group-commit intents.

An executor pass in the worker process writes up to four times per order, and on SQLite each
write holds the one write lock the bot's clicks need. Built with SQLAlchemy inside the lock
they took ~0.5 ms of Python each; prepared here, outside it, the lock sees only the driver.

Every write is conditional on where the operation stands, as `store.lifecycle` allows
(`execution_sources`, `TRANSITIONS`): the first statement is a conditional UPDATE that must
return a row, or the intent changes nothing (`ConditionNotMet`) and the caller reads why.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ulid import ULID

from kernel.canonical import canonical_json
from store.claims.click_sql import bound_time
from store.deliveries.conclusions import conclusion_statements
from store.execution.records import Observation
from store.groupcommit import Intent, Statement
from store.lifecycle import TRANSITIONS, Event, Execution, execution_sources
from store.vocabulary import ReservationState, Stage, Tone

ACTOR = "system:executor"

# an outcome moves the envelope to one state from every state that allows it
OUTCOME_SOURCES = tuple(source for (source, event) in TRANSITIONS if event is Event.OUTCOME)
OUTCOME_TARGETS = {TRANSITIONS[(source, Event.OUTCOME)] for source in OUTCOME_SOURCES}
assert len(OUTCOME_TARGETS) == 1, "an outcome must lead to one state from every source"
(OUTCOME_TARGET,) = OUTCOME_TARGETS

AUDIT = """
INSERT INTO audit (operation_id, at, actor, event)
VALUES (:operation_id, :at, :actor, :event)
"""
ATTEMPT = """
INSERT INTO attempts (id, operation_id, client_id, recorded_at, dispatched_at)
VALUES (:attempt_id, :operation_id, :client_id, :at, :at)
ON CONFLICT (operation_id) DO UPDATE SET dispatched_at = excluded.dispatched_at
RETURNING id, operation_id, client_id, last_error, dispatched_at, resolved_at
"""
OUTCOME = """
INSERT INTO outcomes (operation_id, stage, status, detail, outcome_digest, reconciles_digest,
                      observed_at, final, tone, words)
VALUES (:operation_id, :stage, :status, :detail, :digest, :reconciles, :at, :final, :tone,
        :words)
"""
SETTLE = """
UPDATE reservations SET state = :settles, released_at = :at
 WHERE operation_id = :operation_id AND state = :active
RETURNING operation_id
"""
# an observation that says nothing was sent holds only while the store agrees: no attempt
NOTHING_SENT = (
    " AND NOT EXISTS (SELECT 1 FROM attempts WHERE attempts.operation_id = operations.id)"
)
ANSWER_ATTEMPT = """
UPDATE attempts SET resolved_at = :at, last_error = :error WHERE operation_id = :operation_id
"""


def _in(prefix: str, values: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """`(:prefix0, :prefix1, ...)` and its parameters: a set of states for `IN`."""
    names = [f"{prefix}{index}" for index in range(len(values))]
    return "(" + ", ".join(f":{name}" for name in names) + ")", dict(
        zip(names, values, strict=True)
    )


def _audit(operation_id: str, event: str, at: Any) -> Statement:
    return Statement(
        AUDIT, {"operation_id": operation_id, "at": at, "actor": ACTOR, "event": event[:32]}
    )


def _step(operation_id: str, target: Execution, at: Any) -> Statement:
    sources, params = _in("source", tuple(state.value for state in execution_sources(target)))
    return Statement(
        "UPDATE operations SET execution_state = :target, updated_at = :at"
        f" WHERE id = :operation_id AND execution_state IN {sources} RETURNING id",
        {"operation_id": operation_id, "target": target.value, "at": at, **params},
        require_row=True,
    )


def step_intent(operation_id: str, target: Execution, now: datetime, sqlite: bool) -> Intent:
    """Move the execution state to `target` from a state the table allows, with its audit."""
    at = bound_time(now, sqlite)
    return Intent(
        (_step(operation_id, target, at), _audit(operation_id, f"execution:{target.value}", at))
    )


def dispatch_intent(operation_id: str, client_id: str, now: datetime, sqlite: bool) -> Intent:
    """reserved -> dispatching, and the attempt with its client id and dispatched_at (an
    attempt an older release recorded keeps its client id). Its third statement returns the
    attempt."""
    at = bound_time(now, sqlite)
    attempt = {
        "attempt_id": str(ULID.from_datetime(now)),
        "operation_id": operation_id,
        "client_id": client_id,
        "at": at,
    }
    return Intent(
        (
            _step(operation_id, Execution.DISPATCHING, at),
            _audit(operation_id, f"execution:{Execution.DISPATCHING.value}", at),
            Statement(ATTEMPT, attempt),
        )
    )


def settle_statement(
    operation_id: str, settles: ReservationState, now: datetime, sqlite: bool
) -> Statement:
    """The operation's active reservation settled (converted or released); a row if it was."""
    assert settles is not ReservationState.ACTIVE, settles
    params = {
        "operation_id": operation_id,
        "settles": settles.value,
        "active": ReservationState.ACTIVE.value,
        "at": bound_time(now, sqlite),
    }
    return Statement(SETTLE, params)


def observation_intent(
    operation_id: str, seen: Observation, digest: str, now: datetime, sqlite: bool
) -> Intent:
    """`ExecutionLedger.record_observation`'s one write: the envelope and execution state
    moved (conditional on both), the card due, the next look; the conclusions, the outcome,
    the reservation settled, the attempt answered and the audit row."""
    stage, status, execution = Stage(seen.stage), seen.status, seen.execution
    reconciles, settles, look_again_in_s = seen.reconciles, seen.settles, seen.look_again_in_s
    at = bound_time(now, sqlite)
    states, state_params = _in("state", tuple(state.value for state in OUTCOME_SOURCES))
    steps, step_params = _in("source", tuple(state.value for state in execution_sources(execution)))
    due = None if look_again_in_s is None else now + timedelta(seconds=look_again_in_s)
    unsent = NOTHING_SENT if seen.nothing_sent else ""
    statements = [
        Statement(
            "UPDATE operations SET state = :target_state, execution_state = :target,"
            " version = version + 1, updated_at = :at, card_due_at = :at,"
            " exec_due_at = :due, exec_tries = 0, exec_failures = 0"
            f" WHERE id = :operation_id AND state IN {states} AND execution_state IN {steps}"
            f"{unsent} RETURNING id",
            {
                "operation_id": operation_id,
                "target_state": OUTCOME_TARGET.value,
                "target": execution.value,
                "at": at,
                "due": None if due is None else bound_time(due, sqlite),
                **state_params,
                **step_params,
            },
            require_row=True,
        )
    ]
    if seen.concludes:
        statements += conclusion_statements(
            operation_id, stage=stage, digest=digest, reconciles=reconciles, now=now, sqlite=sqlite
        )
    statements.append(
        Statement(
            OUTCOME,
            {
                "operation_id": operation_id,
                "stage": stage.value,
                "status": status,
                "detail": canonical_json(dict(seen.detail)),
                "digest": digest,
                "reconciles": reconciles,
                "at": at,
                "final": seen.final,
                "tone": Tone(seen.tone).value,
                "words": canonical_json(seen.said()),
            },
        )
    )
    if settles is not None:
        statements.append(settle_statement(operation_id, settles, now, sqlite))
    if seen.answers_attempt:
        error = seen.attempt_error[:300] if seen.attempt_error else None
        statements.append(
            Statement(ANSWER_ATTEMPT, {"operation_id": operation_id, "at": at, "error": error})
        )
    statements.append(_audit(operation_id, f"outcome:{status}", at))
    return Intent(tuple(statements))
