"""Envelope state changes written with SQLAlchemy: the compare-and-set every one goes through
(`transition`, with its audit row) and the system's moves built on it: the card posted
(`mark_card_sent`), a cancel or supersede (`moved_to`), expiry (`expire_due`).

Each is a plain function of a sync `Connection`, run inside one `Store.transact` write. The
rules are `store/lifecycle.py`'s; the click decisions are hand-written intents instead
(`store/claims/claim_sql.py`, `store/claims/reject_sql.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, bindparam, insert, select, update

from kernel.reasons import Reason
from kernel.timeutil import Clock
from store.authority.records import Operation
from store.claims.click_sql import ShownCard, shown_statements
from store.deliveries.conclusions import enqueue_closing
from store.groupcommit import Intent, run_on_connection
from store.lifecycle import Event, IllegalTransition, State, next_state, sources_for
from store.schema.tables import AuditRow, OperationRow
from store.vocabulary import CardAction

EXPIRE_BATCH = 500

# built once: building a statement costs more than running it (the click path reads this)
LOAD_OPERATION = select(OperationRow.__table__).where(OperationRow.id == bindparam("operation_id"))


class OperationNotFound(LookupError):
    def __init__(self, operation_id: str) -> None:
        super().__init__(f"no operation {operation_id!r}")
        self.operation_id = operation_id


def load_operation(conn: Connection, operation_id: str) -> Operation | None:
    row = conn.execute(LOAD_OPERATION, {"operation_id": operation_id}).one_or_none()
    return None if row is None else Operation.from_row(row)


def state_of(conn: Connection, operation_id: str) -> State:
    current = (
        conn.execute(select(OperationRow.state).where(OperationRow.id == operation_id))
    ).scalar_one_or_none()
    if current is None:
        raise OperationNotFound(operation_id)
    return State(current)


def audit(
    conn: Connection,
    operation_id: str,
    actor: str,
    event: str,
    from_state: State | None,
    to_state: State | None,
    *,
    at: datetime,
    reason: Reason | None = None,
    evidence: str | None = None,
) -> None:
    conn.execute(
        insert(AuditRow).values(
            operation_id=operation_id,
            at=at,
            actor=actor,
            event=event,
            from_state=from_state.value if from_state else None,
            to_state=to_state.value if to_state else None,
            reason_code=reason.value if reason else None,
            evidence=evidence,
        )
    )


def transition(
    conn: Connection,
    clock: Clock,
    operation_id: str,
    event: Event,
    actor: str,
    *,
    values: Mapping[str, Any] | None = None,
    where: Sequence[ColumnElement[bool]] = (),
    evidence: str | None = None,
) -> bool:
    """Compare-and-set from the state read now; False if another writer moved it first.
    `evidence` goes on its audit entry (a supersede's: the superseding operation's id)."""
    current = (
        conn.execute(select(OperationRow.state).where(OperationRow.id == operation_id))
    ).scalar_one_or_none()
    if current is None:
        raise OperationNotFound(operation_id)
    from_state = State(current)
    to_state = next_state(from_state, event)
    now = clock()
    result = conn.execute(
        update(OperationRow)
        .where(OperationRow.id == operation_id, OperationRow.state == from_state.value, *where)
        .values(
            state=to_state.value,
            version=OperationRow.version + 1,
            updated_at=now,
            # every new version is due on the card, unless the caller says otherwise
            **{"card_due_at": now, **(values or {})},
        )
    )
    if result.rowcount != 1:
        return False
    audit(conn, operation_id, actor, event.value, from_state, to_state, at=now, evidence=evidence)
    return True


def mark_card_sent(
    conn: Connection, clock: Clock, sqlite: bool, operation_id: str, message_id: str
) -> Operation:
    """The card is posted (`Store.mark_card_sent` says what this write promises)."""
    try:
        moved = (
            transition(
                conn,
                clock,
                operation_id,
                Event.CARD_SENT,
                "system:cards",
                values={
                    "card_message_id": message_id,
                    # the card just sent shows the awaiting version this transition makes
                    "card_version": OperationRow.version + 1,
                    "card_due_at": None,
                },
                where=(OperationRow.card_message_id.is_(None),),
            )
            if state_of(conn, operation_id) is State.PREPARED
            else False
        )
    except IllegalTransition:  # it left prepared after that read (another writer, PostgreSQL)
        moved = False
    if not moved:
        conn.execute(
            update(OperationRow)
            .where(OperationRow.id == operation_id, OperationRow.card_message_id.is_(None))
            .values(card_message_id=message_id, card_due_at=clock())
        )
    op = load_operation(conn, operation_id)
    assert op is not None
    if op.card_version is None:  # the card shows no state any more: due again
        return op
    shown = ShownCard(operation_id, op.card_version)
    run_on_connection(conn, Intent(shown_statements(shown, CardAction.SEND, clock(), sqlite)))
    again = load_operation(conn, operation_id)
    assert again is not None
    return again


def moved_to(
    conn: Connection, clock: Clock, operation_id: str, event: Event, actor: str
) -> tuple[bool, Operation | None]:
    """A proposer's or the system's move (cancel, supersede): whether it moved, and the
    operation as it now is. Another writer may move the state between our read and our
    write (on PostgreSQL, the card worker's "card sent" beside a cancel): then the move is
    asked again of the state it found, which refuses it (IllegalTransition) if it no longer
    allows it. The states only move forward, so a few asks settle it."""
    moved = False
    for _ in range(len(State)):
        moved = transition(conn, clock, operation_id, event, actor)
        if moved:
            break
    return moved, load_operation(conn, operation_id)


def expire_due(conn: Connection, clock: Clock, now: datetime) -> list[str]:
    """Unclaimed operations past their expiry (at `now`) moved to `expired`; their ids."""
    expirable = [state.value for state in sources_for(Event.EXPIRED)]
    expired: list[str] = []
    due = (
        conn.execute(
            select(OperationRow.id, OperationRow.source_routes)
            .where(OperationRow.state.in_(expirable), OperationRow.expires_at <= now)
            .order_by(OperationRow.expires_at)
            .limit(EXPIRE_BATCH)
        )
    ).all()
    for operation_id, routed in due:
        moved = transition(
            conn,
            clock,
            operation_id,
            Event.EXPIRED,
            "system:expiry",
            where=(OperationRow.expires_at <= now,),
        )
        if not moved:
            continue
        expired.append(operation_id)
        if routed:  # the proposer hears of it through its routes
            op = load_operation(conn, operation_id)
            assert op is not None
            enqueue_closing(conn, op, now)
    return expired
