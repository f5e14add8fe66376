"""The claim as hand-written SQL: what `Store.confirm_and_claim` writes, as a group-commit intent.

The conditional update of the operation (awaiting_confirmation -> claimed, same digest, not
expired), its confirmation row, its claim row and its audit row. On SQLite four statements
(the confirmation's id reaches the claim through `last_insert_rowid()`); on PostgreSQL one
statement (a CTE fed by the update's RETURNING). The raw-driver floor (bench/claim_floor.py)
writes the same text, so the bench compares like with like; `Store.confirm_and_claim`
submits it to the store's writer.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from store.groupcommit import Intent, Lane, Statement
from store.lifecycle import Event, Execution, State, next_state
from store.records import Operation

FROM_STATE = State.AWAITING_CONFIRMATION.value
TO_STATE = next_state(State.AWAITING_CONFIRMATION, Event.CONFIRMED).value
CONFIRMED = Event.CONFIRMED.value
# After a click the callback answer itself carries the new card; the card worker only
# patches if that has not been recorded within this grace. A click answered "processing"
# showed no card: the consumer makes it due at once when the decision commits.
DECISION_CARD_GRACE_S = 3
GRACE = timedelta(seconds=DECISION_CARD_GRACE_S)

SQLITE_UPDATE = """
UPDATE operations
   SET state = :to_state, version = version + 1, updated_at = :at, execution_state = 'queued',
       exec_due_at = :at, decided_by = :operator, decided_at = :at, card_due_at = :due
 WHERE id = :operation_id AND state = :from_state AND confirm_digest = :digest
   AND expires_at > :at
RETURNING id, version
"""
SQLITE_CONFIRMATION = """
INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, chat_id,
                           message_id, event_id, accepted)
VALUES (:operation_id, :at, 'confirm', :operator, :digest, :chat_id, :message_id, :event_id, 1)
"""
SQLITE_CLAIM = """
INSERT INTO claims (id, operation_id, confirmation_id, operator_open_id, claimed_at)
VALUES (:claim_id, :operation_id, last_insert_rowid(), :operator, :at)
"""
SQLITE_AUDIT = """
INSERT INTO audit (operation_id, at, actor, event, from_state, to_state)
VALUES (:operation_id, :at, 'operator:' || :operator, :event, :from_state, :to_state)
"""

PG_CLAIM = """
WITH claimed AS (
    UPDATE operations
       SET state = :to_state::text, version = version + 1, updated_at = :at::timestamptz,
           execution_state = 'queued', exec_due_at = :at::timestamptz,
           decided_by = :operator::text, decided_at = :at::timestamptz,
           card_due_at = :due::timestamptz
     WHERE id = :operation_id::text AND state = :from_state::text
       AND confirm_digest = :digest::text AND expires_at > :at::timestamptz
    RETURNING id, version
), confirmation AS (
    INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, chat_id,
                               message_id, event_id, accepted)
    SELECT id, :at::timestamptz, 'confirm', :operator::text, :digest::text, :chat_id::text,
           :message_id::text, :event_id::text, true
      FROM claimed
    RETURNING id, operation_id
), claim AS (
    INSERT INTO claims (id, operation_id, confirmation_id, operator_open_id, claimed_at)
    SELECT :claim_id::text, operation_id, id, :operator::text, :at::timestamptz FROM confirmation
    RETURNING operation_id
), audit_row AS (
    INSERT INTO audit (operation_id, at, actor, event, from_state, to_state)
    SELECT operation_id, :at::timestamptz, 'operator:' || :operator::text, :event::text,
           :from_state::text, :to_state::text
      FROM claim
)
SELECT id, version FROM claimed
"""


def sqlite_time(moment: datetime) -> str:
    """The text SQLAlchemy stores for a naive UTC DateTime on SQLite (so `>` compares alike)."""
    return moment.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


def claim_params(
    *,
    operation_id: str,
    digest: str,
    operator: str,
    claim_id: str,
    now: datetime,
    sqlite: bool,
    chat_id: str | None = None,
    message_id: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    """The parameters of the claim's statements; times as each backend compares them."""
    due = now + GRACE
    return {
        "operation_id": operation_id,
        "digest": digest,
        "operator": operator,
        "at": sqlite_time(now) if sqlite else now,
        "due": sqlite_time(due) if sqlite else due,
        "from_state": FROM_STATE,
        "to_state": TO_STATE,
        "event": CONFIRMED,
        "claim_id": claim_id,
        "chat_id": chat_id,
        "message_id": message_id,
        "event_id": event_id,
    }


def decided_as(
    seen: Operation, to_state: State, operator: str, now: datetime, version: int, **also: Any
) -> Operation:
    """`seen` as an operator's decision leaves it: what the claim's or the reject's statements
    set (`also`: what else one of them sets)."""
    return replace(
        seen,
        state=to_state,
        version=version,
        updated_at=now,
        decided_by=operator,
        decided_at=now,
        card_due_at=now + GRACE,
        **also,
    )


def claimed_as(seen: Operation, operator: str, now: datetime, version: int) -> Operation:
    """`seen` as the claim leaves it (what the statements above set)."""
    return decided_as(
        seen, State(TO_STATE), operator, now, version, execution_state=Execution.QUEUED.value
    )


def claim_statements(
    params: dict[str, Any], *, sqlite: bool, at: int, after: int | None = None
) -> tuple[Statement, ...]:
    """The claim's statements, for an intent in which the first of them has index `at`; with
    `after`, they run only if that earlier statement returned a row (e.g. the click's inbox
    entry was new). The first one's rows: `[{'id', 'version'}]` if the operation was claimed;
    the others run only then."""
    first = (after, True) if after is not None else None
    if not sqlite:
        return (Statement(PG_CLAIM, params, only_if=first),)
    return (
        Statement(SQLITE_UPDATE, params, only_if=first),
        Statement(SQLITE_CONFIRMATION, params, only_if=(at, True)),
        Statement(SQLITE_CLAIM, params, only_if=(at, True)),
        Statement(SQLITE_AUDIT, params, only_if=(at, True)),
    )


def claim_intent(
    *,
    operation_id: str,
    digest: str,
    operator: str,
    claim_id: str,
    now: datetime,
    sqlite: bool,
    lane: Lane = Lane.PEOPLE,
    chat_id: str | None = None,
    message_id: str | None = None,
    event_id: str | None = None,
) -> Intent:
    """The claim as one intent: raises `ConditionNotMet` (nothing written) if the operation is
    not claimable; its first rows are `[{'id': operation_id, 'version': n}]` when it was claimed."""
    params = claim_params(
        operation_id=operation_id,
        digest=digest,
        operator=operator,
        claim_id=claim_id,
        now=now,
        sqlite=sqlite,
        chat_id=chat_id,
        message_id=message_id,
        event_id=event_id,
    )
    first, *rest = claim_statements(params, sqlite=sqlite, at=0)
    return Intent((replace(first, require_row=True), *rest), lane)
