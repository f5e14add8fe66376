"""The reject as hand-written SQL: what `Store.reject` writes, as group-commit statements.

The conditional update (awaiting_confirmation -> rejected, same digest), its confirmation
row, its audit row and, for a routed operation, its conclusion (`declined`) for each route,
each once (the deliveries' unique index). Like a claim, a reject can ride on a click's
inbox entry (`after`) so that the click costs one write before its answer.

A request for changes (a message draft sent back with a note) closes the operation the same
way, as `changes_requested`, and concludes `changes_requested` with the note.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from store.claims.claim_sql import GRACE, from_card, sqlite_time
from store.claims.delegation_sql import REJECT_ON_BEHALF_OF
from store.deliveries.conclusions import (
    changes_requested_outcome,
    conclusion_statements,
    declined_outcome,
)
from store.groupcommit import Statement
from store.lifecycle import Event, next_state, sources_for
from store.vocabulary import ClickAction, Entry, Stage

(FROM_STATE,) = sources_for(Event.REJECTED)  # one source: a card still awaiting its decision
assert sources_for(Event.CHANGES_REQUESTED) == (FROM_STATE,)
# the two ways an operator closes an operation unrun: the click's action -> its event
CLOSING_EVENTS = {
    ClickAction.REJECT: Event.REJECTED,
    ClickAction.REQUEST_CHANGES: Event.CHANGES_REQUESTED,
}

# the operation's whole row as the reject left it (Operation.from_stored)
UPDATE_FOR = """
UPDATE operations
   SET state = :to_state, version = version + 1, updated_at = :at, decided_by = :operator,
       decided_at = :at, card_due_at = :due, decision_reason = :reason, decision_entry = :entry
 WHERE id = :operation_id AND state = :from_state AND confirm_digest = :digest
   AND expires_at > :at{from_card}
RETURNING *
"""
# a request for changes only where the domain offers it (the projection's `steer`, which the
# digest binds): a forged button on any other card changes nothing
STEERABLE = {
    True: "\n   AND json_extract(projection, '$.steer') = 1",
    False: "\n   AND CAST(projection AS jsonb) -> 'steer' = 'true'::jsonb",
}
UPDATES = {
    (sqlite, card_click, steer): UPDATE_FOR.format(
        from_card=(from_card(sqlite) if card_click else "") + (STEERABLE[sqlite] if steer else "")
    )
    for sqlite in (True, False)
    for card_click in (True, False)
    for steer in (True, False)
}
# a delegate's reject names whose right it used (store/claims/delegation_sql.py); on
# PostgreSQL every parameter cast, so asyncpg deduces one type for each
PG_CAST = {
    ":operation_id": "CAST(:operation_id AS text)",
    ":operator": "CAST(:operator AS text)",
    ":at": "CAST(:at AS timestamptz)",
}


def _typed(sql: str, sqlite: bool) -> str:
    if sqlite:
        return sql
    for name, cast in PG_CAST.items():
        sql = re.sub(re.escape(name) + r"\b(?! AS)", cast, sql)
    return sql


CONFIRMATION = {
    sqlite: _typed(
        """
INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, chat_id,
                           message_id, event_id, accepted, entry, on_behalf_of)
VALUES (:operation_id, :at, :action, :operator, :digest, :chat_id, :message_id, :event_id,
        :accepted, :entry, """,
        sqlite,
    )
    + REJECT_ON_BEHALF_OF[sqlite]
    + ")"
    for sqlite in (True, False)
}
AUDIT = {
    sqlite: _typed(
        """
INSERT INTO audit (operation_id, at, actor, event, from_state, to_state, evidence)
VALUES (:operation_id, :at, :actor || coalesce(' for ' || """,
        sqlite,
    )
    + REJECT_ON_BEHALF_OF[sqlite]
    + """, ''), :event, :from_state, :to_state, :evidence)
"""
    for sqlite in (True, False)
}


def reject_statements(
    operation_id: str,
    *,
    digest: str,
    operator: str,
    now: datetime,
    sqlite: bool,
    at: int,
    after: int | None = None,
    card_click: bool = False,
    chat_id: str | None = None,
    message_id: str | None = None,
    event_id: str | None = None,
    reason: str | None = None,
    entry: str = Entry.LARK.value,
    action: ClickAction = ClickAction.REJECT,
    evidence: str | None = None,
) -> tuple[Statement, ...]:
    """The reject (or, by `action`, the request for changes with `reason` as its note), for
    an intent in which the first statement has index `at`; the first one's rows are the
    operation's row as closed if it was, and the rest run only then. `after` and
    `card_click` as for the claim (`claim_sql.claim_statements`)."""
    event = CLOSING_EVENTS[action]
    to_state = next_state(FROM_STATE, event)
    stamp: Any = sqlite_time(now) if sqlite else now
    due: Any = sqlite_time(now + GRACE) if sqlite else now + GRACE
    params = {
        "operation_id": operation_id,
        "digest": digest,
        "operator": operator,
        "at": stamp,
        "due": due,
        "from_state": FROM_STATE.value,
        "to_state": to_state.value,
        "chat_id": chat_id,
        "message_id": message_id,
        "reason": reason,
        "entry": entry,
    }
    done = (at, True)
    closing = (
        declined_outcome(operation_id, operator, now, reason)
        if event is Event.REJECTED
        else changes_requested_outcome(operation_id, operator, now, reason)
    )
    return (
        Statement(
            UPDATES[(sqlite, card_click, event is Event.CHANGES_REQUESTED)],
            params,
            only_if=(after, True) if after is not None else None,
        ),
        Statement(
            CONFIRMATION[sqlite],
            {
                "operation_id": operation_id,
                "at": stamp,
                "action": action.value,
                "operator": operator,
                "digest": digest[:128],
                "chat_id": chat_id,
                "message_id": message_id,
                "event_id": event_id,
                "accepted": 1 if sqlite else True,
                "entry": entry,
            },
            only_if=done,
        ),
        Statement(
            AUDIT[sqlite],
            {
                "operation_id": operation_id,
                "at": stamp,
                "operator": operator,
                "actor": f"operator:{operator}",
                "event": event.value,
                "from_state": FROM_STATE.value,
                "to_state": to_state.value,
                "evidence": evidence,
            },
            only_if=done,
        ),
        # a routed operation concludes (`declined`, `changes_requested`) for each route, once
        *conclusion_statements(
            operation_id,
            stage=Stage.INITIAL,
            digest=closing.outcome_digest,
            reconciles=None,
            now=now,
            sqlite=sqlite,
            only_if=done,
        ),
    )
