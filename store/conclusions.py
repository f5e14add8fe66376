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

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection
from ulid import ULID

from store.canonical import canonical_digest
from store.lifecycle import State
from store.models import DeliveryRow
from store.records import Operation
from store.timeutil import iso_utc

# delivery states
PENDING = "pending"
DELIVERED = "delivered"
FAILED = "failed"

INITIAL = "initial"
DECLINED = "declined"  # an operator pressed Reject
EXPIRED = "expired"  # nobody decided before the operation's expiry


def outcome_digest(
    operation_id: str, stage: str, status: str, detail: dict[str, Any], reconciles: str | None
) -> str:
    return canonical_digest(
        {
            "operation": operation_id,
            "stage": stage,
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
        "stage": INITIAL,
        "status": status,
        "detail": detail,
        "outcome_digest": outcome_digest(op.id, INITIAL, status, detail, None),
        "reconciles_digest": None,
    }


# Outcomes that conclude a stage: terminal ones, an unknown people must hear about, and
# the two ways an operation closes unexecuted without its proposer's doing.
CONCLUSIVE = frozenset(
    {
        DECLINED,
        EXPIRED,
        "filled",
        "rejected",
        "cancelled",
        "preflight_rejected",
        "reservation_refused",
        "sent",
        "not_submitted",
        "unknown",
        "unresolved",
    }
)
CHANNELS = {"conversation": "reply", "callback": "webhook"}


async def enqueue_conclusions(
    conn: AsyncConnection,
    *,
    operation_id: str,
    routes: Mapping[str, Any] | None,
    stage: str,
    status: str,
    outcome_digest: str,
    reconciles: str | None,
    now: datetime,
) -> int:
    """Inside the outcome's (or the closing's) transaction: one conclusion per route if this
    settles the stage."""
    if not routes or status not in CONCLUSIVE:
        return 0
    added = 0
    for route, channel in CHANNELS.items():
        if route not in routes:
            continue
        concluded = (
            await conn.execute(
                select(DeliveryRow.id).where(
                    DeliveryRow.operation_id == operation_id,
                    DeliveryRow.channel == channel,
                    DeliveryRow.stage == stage,
                )
            )
        ).first()
        if concluded is not None:
            continue  # a stage concludes once: later progress is never re-announced
        await conn.execute(
            insert(DeliveryRow).values(
                id=str(ULID.from_datetime(now)),
                operation_id=operation_id,
                channel=channel,
                stage=stage,
                outcome_digest=outcome_digest,
                reconciles_digest=reconciles,
                state=PENDING,
                attempts=0,
                due_at=now,
                created_at=now,
            )
        )
        added += 1
    return added


async def enqueue_closing(conn: AsyncConnection, op: Operation, now: datetime) -> int:
    """Inside the transaction that rejected or expired `op`: its conclusion, if routed."""
    closing = closing_outcome(op)
    if closing is None:
        return 0
    return await enqueue_conclusions(
        conn,
        operation_id=op.id,
        routes=op.envelope.source.routes(),
        stage=INITIAL,
        status=closing["status"],
        outcome_digest=closing["outcome_digest"],
        reconciles=None,
        now=now,
    )
