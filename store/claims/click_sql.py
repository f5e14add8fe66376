"""A click's other writes as hand-written group-commit intents (the claim is in store.claims.claim_sql).

* `entry_intent`: the click's inbox entry, once per (kind, key): the unique index decides,
  `ON CONFLICT DO NOTHING RETURNING` says whether this was the first; a replay gets the
  stored entry back in the same intent.
* `answered_intent`: after the answer left, the answer kept for replays and, when the
  answer carried the decision's card, that card recorded as shown: one write.

Times are bound as each backend compares them (`claim_sql.sqlite_time` on SQLite, aware
datetimes on PostgreSQL); `kernel.timeutil.stored_time` reads them back alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from store.claims.claim_sql import sqlite_time
from store.groupcommit import Intent, Lane, Row, Statement
from store.vocabulary import CardAction, InboxStatus

ENTRY_INSERT = """
INSERT INTO inbox (kind, key, received_at, payload, status, tries)
VALUES (:kind, :key, :at, :payload, :status, 0)
ON CONFLICT (kind, key) DO NOTHING
RETURNING id
"""
ENTRY_STORED = """
SELECT received_at, payload, status, tries, answer FROM inbox WHERE kind = :kind AND key = :key
"""

ANSWER = """
UPDATE inbox SET status = :answered, answer = :answer, answered_at = :at
 WHERE kind = :kind AND key = :key AND status <> :answered
RETURNING id
"""
# The card (or, `ESCALATION_`, its copy in the escalation chat) now shows `:version`; due again
# at once if the operation moved on since, or if the other card still shows an older one.
SQLITE_SHOWN = """
UPDATE operations
   SET card_version = max(coalesce(card_version, 0), :version),
       card_due_at = CASE WHEN version > :version
                            OR (escalation_message_id IS NOT NULL
                                AND version > coalesce(escalation_card_version, 0))
                          THEN :at ELSE NULL END,
       card_attempts = 0
 WHERE id = :operation_id
"""
PG_SHOWN = """
UPDATE operations
   SET card_version = greatest(coalesce(card_version, 0), CAST(:version AS integer)),
       card_due_at = CASE WHEN version > CAST(:version AS integer)
                            OR (escalation_message_id IS NOT NULL
                                AND version > coalesce(escalation_card_version, 0))
                          THEN CAST(:at AS timestamptz) ELSE NULL END,
       card_attempts = 0
 WHERE id = CAST(:operation_id AS text)
"""
SQLITE_ESCALATION_SHOWN = """
UPDATE operations
   SET escalation_card_version = max(coalesce(escalation_card_version, 0), :version),
       card_due_at = CASE WHEN version > :version OR version > coalesce(card_version, 0)
                          THEN :at ELSE NULL END,
       card_attempts = 0
 WHERE id = :operation_id
"""
PG_ESCALATION_SHOWN = """
UPDATE operations
   SET escalation_card_version = greatest(coalesce(escalation_card_version, 0),
                                          CAST(:version AS integer)),
       card_due_at = CASE WHEN version > CAST(:version AS integer)
                            OR version > coalesce(card_version, 0)
                          THEN CAST(:at AS timestamptz) ELSE NULL END,
       card_attempts = 0
 WHERE id = CAST(:operation_id AS text)
"""
SHOWN_LOG = """
INSERT INTO card_deliveries (operation_id, version, action, at, ok)
VALUES (:operation_id, :version, :action, :at, :ok)
"""


# A person's refused web posts on one operation are one row that counts them (a signed-in
# script can post as fast as it likes; its page must not grow with it): the latest post's time,
# action, digest, form key and reason, `refusals` + 1. A card click's refusal never meets this
# partial index (entry lark): a row each, found again by its event id. Migration 0020.
REFUSAL_CONFIRMATION = """
INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, chat_id,
                           message_id, event_id, accepted, reason_code, entry, refusals)
VALUES (:operation_id, :at, :action, :operator, :digest, :chat_id, :message_id, :event_id,
        :accepted, :reason, :entry, 1)
ON CONFLICT (operation_id, operator_open_id) WHERE NOT accepted AND entry = 'web'
DO UPDATE SET at = excluded.at, action = excluded.action, digest = excluded.digest,
              event_id = excluded.event_id, reason_code = excluded.reason_code,
              refusals = confirmations.refusals + 1
RETURNING refusals
"""
# The operation's state on both sides of the audit row (none for an unknown operation). A
# person's refused web posts on one operation are audited once, at the first. SQLite: run
# before the confirmation row is written (writes are serial there), "none yet" is the first.
# PostgreSQL: concurrent posts would each see "none yet", so the audit row follows from the
# upsert itself (which waits for the row's lock): written when it counted the first refusal.
SQLITE_REFUSAL_AUDIT = """
INSERT INTO audit (operation_id, at, actor, event, from_state, to_state, reason_code, evidence)
SELECT :operation_id, :at, :actor, 'click_refused', op.state, op.state, :reason, :evidence
  FROM (SELECT 1 AS one) AS refused LEFT JOIN operations AS op ON op.id = :operation_id
 WHERE :entry <> 'web' OR NOT EXISTS (
       SELECT 1 FROM confirmations AS c
        WHERE c.operation_id = :operation_id AND c.operator_open_id = :operator
          AND NOT c.accepted AND c.entry = 'web')
"""
PG_REFUSAL = f"""
WITH refused AS ({REFUSAL_CONFIRMATION})
INSERT INTO audit (operation_id, at, actor, event, from_state, to_state, reason_code, evidence)
SELECT :operation_id::text, :at::timestamptz, :actor::text, 'click_refused', op.state,
       op.state, :reason::text, :evidence::text
  FROM refused LEFT JOIN operations AS op ON op.id = :operation_id::text
 WHERE refused.refusals = 1
"""


def bound_time(moment: datetime, sqlite: bool) -> Any:
    return sqlite_time(moment) if sqlite else moment


def entry_intent(
    *, kind: str, key: str, payload: str, now: datetime, sqlite: bool, lane: Lane = Lane.PEOPLE
) -> Intent:
    """Rows: `[{'id': n}]` first if this entry is new; else the stored entry second."""
    params = {
        "kind": kind,
        "key": key,
        "at": bound_time(now, sqlite),
        "payload": payload,
        "status": InboxStatus.RECEIVED.value,
    }
    return Intent(
        (
            Statement(ENTRY_INSERT, params),
            Statement(ENTRY_STORED, {"kind": kind, "key": key}, only_if=(0, False)),
        ),
        lane,
    )


@dataclass(frozen=True)
class ShownCard:
    """The card an answer carried: the operation's version it showed (`escalation`: on the
    card's copy in the escalation chat)."""

    operation_id: str
    version: int
    escalation: bool = False


def answered_intent(
    *,
    kind: str,
    key: str,
    answer: str,
    now: datetime,
    sqlite: bool,
    shown: ShownCard | None = None,
    also: tuple[Statement, ...] = (),
    lane: Lane = Lane.BACKGROUND,
) -> Intent:
    """Rows: `[{'id': n}]` first if this answer was stored (not one stored before). `also`:
    statements that belong to the same moment (a refusal found before the answer)."""
    at = bound_time(now, sqlite)
    statements = [
        Statement(
            ANSWER,
            {
                "kind": kind,
                "key": key,
                "answer": answer,
                "at": at,
                "answered": InboxStatus.ANSWERED.value,
            },
        )
    ]
    if shown is not None:
        statements.extend(shown_statements(shown, CardAction.CALLBACK, now, sqlite))
    return Intent((*statements, *also), lane)


def shown_statements(
    shown: ShownCard, action: CardAction, now: datetime, sqlite: bool
) -> tuple[Statement, Statement]:
    """The card now shows `shown.version` (sent, patched, or answered in a callback): its
    mark on the operation (due again at once if something newer happened) and its log row."""
    card = {
        "operation_id": shown.operation_id,
        "version": shown.version,
        "at": bound_time(now, sqlite),
    }
    log = {**card, "action": action.value, "ok": 1 if sqlite else True}
    if shown.escalation:
        mark = SQLITE_ESCALATION_SHOWN if sqlite else PG_ESCALATION_SHOWN
    else:
        mark = SQLITE_SHOWN if sqlite else PG_SHOWN
    return Statement(mark, card), Statement(SHOWN_LOG, log)


def refusal_statements(
    *,
    operation_id: str,
    action: str,
    operator: str,
    digest: str,
    reason: str,
    now: datetime,
    sqlite: bool,
    chat_id: str | None = None,
    message_id: str | None = None,
    event_id: str | None = None,
    entry: str = "lark",
    evidence: str | None = None,
) -> tuple[Statement, ...]:
    """A refused click on record: its audit row and its confirmation row (not accepted, with
    the reason; a web post's counted into the person's one row). Values are cut to their
    columns: a refused click may carry anything."""
    operator = operator[:128]
    params = {
        "operation_id": operation_id[:64],
        "at": bound_time(now, sqlite),
        "action": action[:32],
        "operator": operator,
        "digest": digest[:128],
        "chat_id": chat_id[:128] if chat_id else chat_id,
        "message_id": message_id[:128] if message_id else message_id,
        "event_id": event_id[:128] if event_id else event_id,
        "accepted": 0 if sqlite else False,
        "reason": reason,
        "entry": entry,
        "actor": f"operator:{operator}"[:160],
        "evidence": evidence,
    }
    if not sqlite:
        return (Statement(PG_REFUSAL, params),)
    return Statement(SQLITE_REFUSAL_AUDIT, params), Statement(REFUSAL_CONFIRMATION, params)


def replayed(rows: list[Row]) -> Row:
    """The stored entry a replay found (the second statement of `entry_intent`)."""
    (row,) = rows
    return row
