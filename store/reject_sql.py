"""The reject as hand-written SQL: what `Store.reject` writes, as group-commit statements.

The conditional update (awaiting_confirmation -> rejected, same digest), its confirmation
row, its audit row and, for a routed operation, its conclusion (`declined`) for each route,
each once (the deliveries' unique index). Like a claim, a reject can ride on a click's
inbox entry (`after`) so that the click costs one write before its answer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ulid import ULID

from store.claim_sql import GRACE, decided_as, sqlite_time
from store.conclusions import CHANNELS, closing_outcome
from store.groupcommit import Statement
from store.lifecycle import Event, next_state, sources_for
from store.records import Operation
from store.vocabulary import DeliveryState

(FROM_STATE,) = sources_for(Event.REJECTED)  # one source: a card still awaiting its decision
TO_STATE = next_state(FROM_STATE, Event.REJECTED)

UPDATE = """
UPDATE operations
   SET state = :to_state, version = version + 1, updated_at = :at, decided_by = :operator,
       decided_at = :at, card_due_at = :due
 WHERE id = :operation_id AND state = :from_state AND confirm_digest = :digest
RETURNING id, version
"""
CONFIRMATION = """
INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, chat_id,
                           message_id, event_id, accepted)
VALUES (:operation_id, :at, 'reject', :operator, :digest, :chat_id, :message_id, :event_id,
        :accepted)
"""
AUDIT = """
INSERT INTO audit (operation_id, at, actor, event, from_state, to_state)
VALUES (:operation_id, :at, :actor, :event, :from_state, :to_state)
"""
CONCLUSION = """
INSERT INTO deliveries (id, operation_id, channel, stage, outcome_digest, state, attempts,
                        due_at, created_at)
VALUES (:delivery_id, :operation_id, :channel, :stage, :outcome_digest, :pending, 0, :at, :at)
ON CONFLICT DO NOTHING
"""


def rejected_as(seen: Operation, operator: str, now: datetime, version: int) -> Operation:
    """`seen` as the reject leaves it (what the statements below set)."""
    return decided_as(seen, TO_STATE, operator, now, version)


def reject_statements(
    seen: Operation,
    *,
    digest: str,
    operator: str,
    now: datetime,
    sqlite: bool,
    at: int,
    after: int | None = None,
    chat_id: str | None = None,
    message_id: str | None = None,
    event_id: str | None = None,
) -> tuple[Statement, ...]:
    """The reject of `seen` (the operation as the caller read it: its routes decide the
    conclusions), for an intent in which the first statement has index `at`; the first
    one's rows are `[{'id', 'version'}]` if it was rejected, and the rest run only then."""
    stamp: Any = sqlite_time(now) if sqlite else now
    due: Any = sqlite_time(now + GRACE) if sqlite else now + GRACE
    params = {
        "operation_id": seen.id,
        "digest": digest,
        "operator": operator,
        "at": stamp,
        "due": due,
        "from_state": FROM_STATE.value,
        "to_state": TO_STATE.value,
    }
    done = (at, True)
    statements = [
        Statement(UPDATE, params, only_if=(after, True) if after is not None else None),
        Statement(
            CONFIRMATION,
            {
                "operation_id": seen.id,
                "at": stamp,
                "operator": operator,
                "digest": digest[:128],
                "chat_id": chat_id,
                "message_id": message_id,
                "event_id": event_id,
                "accepted": 1 if sqlite else True,
            },
            only_if=done,
        ),
        Statement(
            AUDIT,
            {
                "operation_id": seen.id,
                "at": stamp,
                "actor": f"operator:{operator}",
                "event": Event.REJECTED.value,
                "from_state": FROM_STATE.value,
                "to_state": TO_STATE.value,
            },
            only_if=done,
        ),
    ]
    routes = seen.envelope.source.routes()
    closing = closing_outcome(rejected_as(seen, operator, now, seen.version + 1))
    if routes and closing is not None:
        for route, channel in CHANNELS.items():
            if route not in routes:
                continue
            statements.append(
                Statement(
                    CONCLUSION,
                    {
                        "delivery_id": str(ULID.from_datetime(now)),
                        "operation_id": seen.id,
                        "channel": channel.value,
                        "stage": closing["stage"],
                        "outcome_digest": closing["outcome_digest"],
                        "pending": DeliveryState.PENDING.value,
                        "at": stamp,
                    },
                    only_if=done,
                )
            )
    return tuple(statements)
