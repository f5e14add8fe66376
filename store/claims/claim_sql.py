"""The claim as hand-written SQL: what `Store.confirm_and_claim` writes, as a group-commit intent.

The conditional update of the operation (awaiting_confirmation -> claimed, same digest, not
expired), its confirmation row, its claim row and its audit row. On SQLite four statements
(the confirmation's id reaches the claim through `last_insert_rowid()`); on PostgreSQL one
statement (a CTE fed by the update's RETURNING). The raw-driver floor (bench/claim_floor.py)
writes the same text, so the bench compares like with like; `Store.confirm_and_claim`
submits it to the store's writer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from store.claims.delegation_sql import (
    confirming_actor,
    delegated_one,
    may_confirm,
    may_reject_as_delegate,
    seat_of,
)
from store.groupcommit import Intent, Lane, Statement
from store.lifecycle import Event, State, next_state
from store.vocabulary import Entry

FROM_STATE = State.AWAITING_CONFIRMATION.value
TO_STATE = next_state(State.AWAITING_CONFIRMATION, Event.CONFIRMED).value
CONFIRMED = Event.CONFIRMED.value
# After a click the callback answer itself carries the new card; the card worker only
# patches if that has not been recorded within this grace. A click answered "processing"
# showed no card: the consumer makes it due at once when the decision commits.
DECISION_CARD_GRACE_S = 3
GRACE = timedelta(seconds=DECISION_CARD_GRACE_S)

# A decision made by a click on the operation's card is also conditional on where the click
# came from, as bot.decide.provenance checks it (which names the reason when this refuses):
# the card's own message in the audience's chat (or its copy in the escalation chat) -- for a
# decision made on the web (entry 'web'), the dashboard's signed-in session stands in for the
# card, checked before this runs -- one of its operators, not its requester unless the audience allows that. So the click needs no read before its one write.
# A confirmation, besides: one of the approvers (a rule may name fewer than the audience's
# operators), the requester never counting toward a quorum, and the audience's policy still
# the one the operation was filed under (`:policies`: audience name -> policy digest now,
# NULL where the caller holds no config; an operation filed with no policy digest predates
# policies and is not compared).
SQLITE_FROM_CARD = (
    """
   AND (:entry = 'web'
        OR (card_message_id = :message_id AND audience_chat_id = :chat_id)
        OR (escalation_message_id = :message_id AND escalation_chat_id = :chat_id))
   AND (EXISTS (SELECT 1 FROM json_each(operations.audience_operators) AS listed
                 WHERE listed.value = :operator)
        OR """
    + may_reject_as_delegate(True)
    + """)
   AND (allow_self_approval OR coalesce(source_requester_open_id, '') = ''
        OR source_requester_open_id <> :operator)"""
)
PG_FROM_CARD = (
    """
   AND (CAST(:entry AS text) = 'web'
        OR (card_message_id = CAST(:message_id AS text)
         AND audience_chat_id = CAST(:chat_id AS text))
        OR (escalation_message_id = CAST(:message_id AS text)
            AND escalation_chat_id = CAST(:chat_id AS text)))
   AND (CAST(audience_operators AS jsonb) @> jsonb_build_array(CAST(:operator AS text))
        OR """
    + may_reject_as_delegate(False)
    + """)
   AND (allow_self_approval OR coalesce(source_requester_open_id, '') = ''
        OR source_requester_open_id <> CAST(:operator AS text))"""
)
SQLITE_CONFIRM_FROM_CARD = (
    """
   AND (:entry = 'web'
        OR (card_message_id = :message_id AND audience_chat_id = :chat_id)
        OR (escalation_message_id = :message_id AND escalation_chat_id = :chat_id))
   AND """
    + may_confirm(True)
    + """
   AND ((allow_self_approval AND required_confirmations = 1)
        OR coalesce(source_requester_open_id, '') = '' OR source_requester_open_id <> :operator)
   AND (policy_digest = '' OR :policies IS NULL
        OR policy_digest = coalesce(json_extract(:policies, '$."' || audience_name || '"'), '-'))"""
)
PG_CONFIRM_FROM_CARD = (
    """
   AND (CAST(:entry AS text) = 'web'
        OR (card_message_id = CAST(:message_id AS text)
         AND audience_chat_id = CAST(:chat_id AS text))
        OR (escalation_message_id = CAST(:message_id AS text)
            AND escalation_chat_id = CAST(:chat_id AS text)))
   AND """
    + may_confirm(False)
    + """
   AND ((allow_self_approval AND required_confirmations = 1)
        OR coalesce(source_requester_open_id, '') = ''
        OR source_requester_open_id <> CAST(:operator AS text))
   AND (policy_digest = '' OR CAST(:policies AS jsonb) IS NULL
        OR policy_digest = coalesce(CAST(:policies AS jsonb) ->> audience_name, '-'))"""
)


def from_card(sqlite: bool) -> str:
    """A reject's provenance condition (any operator of the audience may reject)."""
    return SQLITE_FROM_CARD if sqlite else PG_FROM_CARD


def confirm_from_card(sqlite: bool) -> str:
    return SQLITE_CONFIRM_FROM_CARD if sqlite else PG_CONFIRM_FROM_CARD


# the operation's whole row as the claim left it (Operation.from_stored), whoever reads it
SQLITE_UPDATE_FOR = (
    """
UPDATE operations
   SET state = :to_state, version = version + 1, updated_at = :at, execution_state = 'queued',
       exec_due_at = :at, decided_by = :operator, decided_at = :at, card_due_at = :due,
       confirmed_by = json_array(:operator), decision_entry = :entry,
       delegated = """
    + delegated_one(True)
    + """
 WHERE id = :operation_id AND state = :from_state AND confirm_digest = :digest
   AND expires_at > :at AND required_confirmations = 1{from_card}
RETURNING *
"""
)
SQLITE_UPDATE = SQLITE_UPDATE_FOR.format(from_card="")
SQLITE_CARD_UPDATE = SQLITE_UPDATE_FOR.format(from_card=SQLITE_CONFIRM_FROM_CARD)
SQLITE_CONFIRMATION = (
    """
INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, chat_id,
                           message_id, event_id, accepted, entry, on_behalf_of, delegation_id)
SELECT :operation_id, :at, 'confirm', :operator, :digest, :chat_id, :message_id, :event_id, 1,
       :entry, """
    + seat_of(True, "d.delegator")
    + ", "
    + seat_of(True, "d.id")
    + """
  FROM operations WHERE id = :operation_id
"""
)
SQLITE_CLAIM = """
INSERT INTO claims (id, operation_id, confirmation_id, operator_open_id, claimed_at)
VALUES (:claim_id, :operation_id, last_insert_rowid(), :operator, :at)
"""
SQLITE_AUDIT = (
    """
INSERT INTO audit (operation_id, at, actor, event, from_state, to_state, evidence)
VALUES (:operation_id, :at, """
    + confirming_actor(":operation_id", ":operator")
    + """, :event, :from_state, :to_state, :evidence)
"""
)

PG_CLAIM_FOR = (
    """
WITH taken AS (
    UPDATE operations
       SET state = :to_state::text, version = version + 1, updated_at = :at::timestamptz,
           execution_state = 'queued', exec_due_at = :at::timestamptz,
           decided_by = :operator::text, decided_at = :at::timestamptz,
           card_due_at = :due::timestamptz,
           confirmed_by = CAST(jsonb_build_array(:operator::text) AS text),
           decision_entry = :entry::text,
           delegated = """
    + delegated_one(False)
    + """
     WHERE id = :operation_id::text AND state = :from_state::text
       AND confirm_digest = :digest::text AND expires_at > :at::timestamptz
       AND required_confirmations = 1{from_card}
    RETURNING *
), confirmation AS (
    INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, chat_id,
                               message_id, event_id, accepted, entry, on_behalf_of,
                               delegation_id)
    SELECT id, :at::timestamptz, 'confirm', :operator::text, :digest::text, :chat_id::text,
           :message_id::text, :event_id::text, true, :entry::text,
           """
    + seat_of(False, "d.delegator", "taken")
    + """,
           """
    + seat_of(False, "d.id", "taken")
    + """
      FROM taken
    RETURNING id, operation_id, on_behalf_of
), claim AS (
    INSERT INTO claims (id, operation_id, confirmation_id, operator_open_id, claimed_at)
    SELECT :claim_id::text, operation_id, id, :operator::text, :at::timestamptz FROM confirmation
    RETURNING operation_id
), audit_row AS (
    INSERT INTO audit (operation_id, at, actor, event, from_state, to_state, evidence)
    SELECT claim.operation_id, :at::timestamptz,
           'operator:' || :operator::text || coalesce(' for ' || confirmation.on_behalf_of, ''),
           :event::text, :from_state::text, :to_state::text, :evidence::text
      FROM claim, confirmation
)
SELECT * FROM taken
"""
)
PG_CLAIM = PG_CLAIM_FOR.format(from_card="")
PG_CARD_CLAIM = PG_CLAIM_FOR.format(from_card=PG_CONFIRM_FROM_CARD)
# A time-boxed draft's clock claims instead of a click (store/claims/auto_send.py): only once its
# time has come and while nobody has confirmed toward it; state, digest and expiry as ever;
# and what a click re-checks of the config now: the audience's policy is still the one the
# draft was filed under (`:policies`, as for a click; never NULL here, and a draft with no
# policy digest never sends itself), and its target still lets drafts send themselves for at
# least its time box (`:auto_limits`: JSON {target_ref: longest time box in seconds} from the
# config now; a target it does not name sends nothing by itself).
# the config-now half, written once: the claim requires it, the disarm (auto_disarm) negates it
SQLITE_AUTO_ALLOWED = """(
       policy_digest = coalesce(json_extract(:policies, '$."' || audience_name || '"'), '-')
   AND CAST(strftime('%s', auto_send_at) AS INTEGER) - CAST(strftime('%s', created_at) AS INTEGER)
       <= json_extract(:auto_limits, '$."' || target_ref || '"'))"""
PG_AUTO_ALLOWED = """(
       policy_digest = coalesce(CAST(:policies AS jsonb) ->> audience_name, '-')
   AND EXTRACT(EPOCH FROM auto_send_at - created_at)
       <= CAST(CAST(:auto_limits AS jsonb) ->> target_ref AS numeric))"""
SQLITE_AUTO_DUE = f"""
   AND auto_send_at IS NOT NULL AND auto_send_at <= :at AND confirmed_by IS NULL
   AND {SQLITE_AUTO_ALLOWED}"""
PG_AUTO_DUE = f"""
   AND auto_send_at IS NOT NULL AND auto_send_at <= CAST(:at AS timestamptz)
   AND confirmed_by IS NULL
   AND {PG_AUTO_ALLOWED}"""
SQLITE_AUTO_UPDATE = SQLITE_UPDATE_FOR.format(from_card=SQLITE_AUTO_DUE)
PG_AUTO_CLAIM = PG_CLAIM_FOR.format(from_card=PG_AUTO_DUE)


@dataclass(frozen=True)
class AutoRules:
    """What the config says now that the clock's claim re-checks, as a click's would:
    `policies`: audience name -> policy digest (bot.config.policy.policy_digests); `limits`:
    target_ref -> the longest time box, in seconds, its drafts may still ask for."""

    policies: Mapping[str, str]
    limits: Mapping[str, int]

    def params(self) -> dict[str, str]:
        return {
            "policies": json.dumps(dict(self.policies), sort_keys=True),
            "auto_limits": json.dumps(dict(self.limits), sort_keys=True),
        }


# what the sweep reads: the drafts the clock's claim would take now, oldest time box first
AUTO_DUE_SELECT = """
SELECT id, confirm_digest FROM operations
 WHERE state = :from_state AND expires_at > :at AND required_confirmations = 1{auto_due}
 ORDER BY auto_send_at
 LIMIT :limit
"""


def auto_due_select(sqlite: bool) -> str:
    return AUTO_DUE_SELECT.format(auto_due=SQLITE_AUTO_DUE if sqlite else PG_AUTO_DUE)


# An open draft whose time box the config now never honours: its promise withdrawn (a new
# version, due on its card). `IS NOT TRUE`, as a NULL (a target not named) means never.
AUTO_DISARM = """
UPDATE operations
   SET auto_send_at = NULL, version = version + 1, updated_at = {at}, card_due_at = {at}
 WHERE state = :from_state AND auto_send_at IS NOT NULL AND {allowed} IS NOT TRUE
RETURNING id
"""


def auto_disarm(sqlite: bool) -> str:
    if sqlite:
        return AUTO_DISARM.format(at=":at", allowed=SQLITE_AUTO_ALLOWED)
    return AUTO_DISARM.format(at="CAST(:at AS timestamptz)", allowed=PG_AUTO_ALLOWED)


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
    policies: str | None = None,
    entry: str = Entry.LARK.value,
    evidence: str | None = None,
) -> dict[str, Any]:
    """The parameters of the claim's statements; times as each backend compares them.
    `policies`: JSON {audience name: policy digest now}, for a card click; `entry`: where the
    decision is made (store.vocabulary.Entry)."""
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
        "policies": policies,
        "entry": entry,
        "evidence": evidence,
    }


def claim_statements(
    params: dict[str, Any],
    *,
    sqlite: bool,
    at: int,
    after: int | None = None,
    card_click: bool = False,
    auto: bool = False,
) -> tuple[Statement, ...]:
    """The claim's statements, for an intent in which the first of them has index `at`; with
    `after`, they run only if that earlier statement returned a row (e.g. the click's inbox
    entry was new); `card_click`: also conditional on the click's provenance (FROM_CARD);
    `auto`: a time-boxed draft's clock, conditional on its time (AUTO_DUE). The first one's
    rows: the operation's row as claimed (`Operation.from_stored`) if it was; the others run
    only then."""
    first = (after, True) if after is not None else None
    if not sqlite:
        claim = PG_AUTO_CLAIM if auto else PG_CARD_CLAIM if card_click else PG_CLAIM
        return (Statement(claim, params, only_if=first),)
    update = SQLITE_AUTO_UPDATE if auto else SQLITE_CARD_UPDATE if card_click else SQLITE_UPDATE
    return (
        Statement(update, params, only_if=first),
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
    entry: str = Entry.LARK.value,
    auto: AutoRules | None = None,
) -> Intent:
    """The claim as one intent: raises `ConditionNotMet` (nothing written) if the operation is
    not claimable; its first rows are the operation's row as claimed when it was. `auto`: the
    clock's claim of a time-boxed draft, under the config's rules now (store/claims/auto_send.py)."""
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
        entry=entry,
    )
    if auto is not None:
        params.update(auto.params())
    first, *rest = claim_statements(params, sqlite=sqlite, at=0, auto=auto is not None)
    return Intent((replace(first, require_row=True), *rest), lane)
