"""What concludes an operation for its proposer, and the outbox rows that carry it back.

An execution's outcome concludes a stage when it is terminal (or an unknown that needs
people). An operation that closes without running also concludes, so a proposer waiting on
its webhook is not left hanging: an operator declined it, or nobody decided before expiry.
(A proposer's own cancel or supersede is not announced back: the proposer did it.) The rows
are written in the transaction that makes them due; `store.deliveries` owns them after that.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from ulid import ULID

from store.canonical import canonical_digest
from store.lifecycle import State
from store.models import DeliveryRow
from store.once import insert_once
from store.records import Operation
from store.timeutil import iso_utc
from store.vocabulary import Channel, DeliveryState, Stage

# how an operation that closed without running concludes (the store's own words; what an
# execution's outcome is called, and whether it concludes, is the domain's to say)
DECLINED = "declined"  # an operator pressed Reject
EXPIRED = "expired"  # nobody decided before the operation's expiry


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


def closing_outcome(op: Operation) -> dict[str, Any] | None:
    """The conclusion of an operation that closed without running, shaped like an outcome."""
    if op.state is State.REJECTED:
        status = DECLINED
        detail = {"by": op.decided_by, "at": iso_utc(op.decided_at) if op.decided_at else None}
    elif op.state is State.EXPIRED:
        status, detail = EXPIRED, {"expired_at": iso_utc(op.envelope.expires_at)}
    else:
        return None
    return {
        "stage": Stage.INITIAL.value,
        "status": status,
        "detail": detail,
        "outcome_digest": outcome_digest(op.id, Stage.INITIAL, status, detail, None),
        "reconciles_digest": None,
    }


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
        outcome_digest=closing["outcome_digest"],
        reconciles=None,
        now=now,
    )
