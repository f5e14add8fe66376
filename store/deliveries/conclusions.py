"""What concludes an operation for its proposer, and the outbox rows that carry it back.

An execution's outcome concludes a stage when it is terminal (or an unknown that needs
people). An operation that closes without running also concludes, so a proposer waiting on
its webhook is not left hanging: an operator declined it, or nobody decided before expiry.
(A proposer's own cancel or supersede is not announced back: the proposer did it.) The rows
are written in the transaction that makes them due; `store.deliveries.delivery_ledger` owns them after that.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from ulid import ULID

from kernel.canonical import canonical_digest
from kernel.timeutil import iso_utc
from store.authority.records import Operation
from store.backend.once import insert_once
from store.claims.click_sql import bound_time
from store.groupcommit import Statement
from store.lifecycle import State
from store.reads.projection import OutcomeView
from store.schema.tables import DeliveryRow
from store.vocabulary import Channel, DeliveryState, Stage, Tone

# how an operation that closed without running concludes (the store's own words; what an
# execution's outcome is called, and whether it concludes, is the domain's to say)
DECLINED = "declined"  # an operator pressed Reject
EXPIRED = "expired"  # nobody decided before the operation's expiry
CHANGES_REQUESTED = "changes_requested"  # an operator sent the draft back with a note

# A conclusion per route the proposer gave (`source_routes` holds them by name), once per
# stage and channel: the unique index skips a second.
SQLITE_CONCLUSION = """
INSERT INTO deliveries (id, operation_id, channel, stage, outcome_digest, reconciles_digest,
                        state, attempts, due_at, created_at)
SELECT :delivery_id, id, :channel, :stage, :digest, :reconciles, :pending, 0, :at, :at
  FROM operations
 WHERE id = :operation_id AND json_type(source_routes, :route_path) IS NOT NULL
ON CONFLICT DO NOTHING
"""
PG_CONCLUSION = """
INSERT INTO deliveries (id, operation_id, channel, stage, outcome_digest, reconciles_digest,
                        state, attempts, due_at, created_at)
SELECT CAST(:delivery_id AS text), id, CAST(:channel AS text), CAST(:stage AS text),
       CAST(:digest AS text), CAST(:reconciles AS text), CAST(:pending AS text), 0,
       CAST(:at AS timestamptz), CAST(:at AS timestamptz)
  FROM operations
 WHERE id = CAST(:operation_id AS text)
   AND CAST(source_routes AS jsonb) -> CAST(:route AS text) IS NOT NULL
ON CONFLICT DO NOTHING
"""


def outcome_digest(
    operation_id: str, stage: Stage, status: str, detail: dict[str, Any], reconciles: str | None
) -> str:
    return canonical_digest(
        {
            "operation": operation_id,
            "stage": stage.value,
            "status": status,
            "detail": detail,
            "reconciles": reconciles,
        }
    )


def closing_outcome(op: Operation) -> OutcomeView | None:
    """The conclusion of an operation that closed without running, shaped like an outcome."""
    if op.state is State.REJECTED:
        return declined_outcome(op.id, op.decided_by, op.decided_at, op.decision_reason)
    if op.state is State.EXPIRED:
        expired = {"expired_at": iso_utc(op.envelope.expires_at)}
        return _closing(op.id, EXPIRED, expired, Tone.DONE)
    if op.state is State.CHANGES_REQUESTED:
        return changes_requested_outcome(op.id, op.decided_by, op.decided_at, op.decision_reason)
    return None


def declined_outcome(
    operation_id: str, by: str | None, at: datetime | None, reason: str | None = None
) -> OutcomeView:
    """The conclusion of a reject by `by` at `at`, shaped like an outcome; its `reason` only
    where the operator gave one (so a reject without one concludes as it always did)."""
    detail: dict[str, Any] = {"by": by, "at": iso_utc(at) if at else None}
    if reason:
        detail["reason"] = reason
    return _closing(operation_id, DECLINED, detail, Tone.BAD)


def changes_requested_outcome(
    operation_id: str, by: str | None, at: datetime | None, note: str | None
) -> OutcomeView:
    """The conclusion of a request for changes: who, when, and the note for the proposer
    (what to change before filing the draft again)."""
    detail: dict[str, Any] = {"by": by, "at": iso_utc(at) if at else None, "note": note}
    return _closing(operation_id, CHANGES_REQUESTED, detail, Tone.DONE)


def _closing(operation_id: str, status: str, detail: dict[str, Any], tone: Tone) -> OutcomeView:
    # no row, so no domain's words: readers take the catalogue's (`outcome.<status>`); it is
    # final like every operation closed without running, its tone the headline's for that state
    return OutcomeView(
        stage=Stage.INITIAL,
        status=status,
        detail=detail,
        outcome_digest=outcome_digest(operation_id, Stage.INITIAL, status, detail, None),
        reconciles_digest=None,
        final=True,
        tone=tone,
        words={},
    )


def conclusion_statements(
    operation_id: str,
    *,
    stage: Stage,
    digest: str,
    reconciles: str | None,
    now: datetime,
    sqlite: bool,
    only_if: tuple[int, bool] | None = None,
) -> list[Statement]:
    """A conclusion per route, for an intent: the routes are read off the operation's row in
    the database (so the intent needs no copy of the operation), each once per stage and
    channel."""
    at = bound_time(now, sqlite)
    return [
        Statement(
            SQLITE_CONCLUSION if sqlite else PG_CONCLUSION,
            {
                "delivery_id": str(ULID.from_datetime(now)),
                "operation_id": operation_id,
                "channel": channel.value,
                "stage": stage.value,
                "digest": digest,
                "reconciles": reconciles,
                "pending": DeliveryState.PENDING.value,
                "at": at,
                **({"route_path": f"$.{route}"} if sqlite else {"route": route}),
            },
            only_if=only_if,
        )
        for route, channel in CHANNELS.items()
    ]


CHANNELS = {"conversation": Channel.REPLY, "callback": Channel.WEBHOOK}


def enqueue_conclusions(
    conn: Connection,
    *,
    operation_id: str,
    routes: Mapping[str, Any] | None,
    stage: Stage,
    concludes: bool,
    outcome_digest: str,
    reconciles: str | None,
    now: datetime,
) -> int:
    """Inside the outcome's (or the closing's) transaction: one conclusion per route if this
    settles the stage (`concludes`, the domain's say). A stage concludes once per channel:
    the unique index refuses a second one, and later progress is never re-announced."""
    if not routes or not concludes:
        return 0
    added = 0
    for route, channel in CHANNELS.items():
        if route not in routes:
            continue
        inserted = conn.execute(
            insert_once(conn.dialect.name, DeliveryRow)
            .values(
                id=str(ULID.from_datetime(now)),
                operation_id=operation_id,
                channel=channel.value,
                stage=stage.value,
                outcome_digest=outcome_digest,
                reconciles_digest=reconciles,
                state=DeliveryState.PENDING.value,
                attempts=0,
                due_at=now,
                created_at=now,
            )
            .returning(DeliveryRow.id)
        )
        added += inserted.first() is not None
    return added


def enqueue_closing(conn: Connection, op: Operation, now: datetime) -> int:
    """Inside the transaction that rejected or expired `op`: its conclusion, if routed.
    (From an async connection: `await conn.run_sync(enqueue_closing, op, now)`.)"""
    closing = closing_outcome(op)
    if closing is None:
        return 0
    return enqueue_conclusions(
        conn,
        operation_id=op.id,
        routes=op.envelope.source.routes(),
        stage=Stage.INITIAL,
        concludes=True,
        outcome_digest=closing.outcome_digest,
        reconciles=None,
        now=now,
    )
