"""Plain read models the store hands out (no ORM objects escape the store)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Boolean

from kernel.timeutil import stored_time
from store.authority.envelope import Approval, Audience, Envelope, Source
from store.lifecycle import State
from store.schema.tables import OperationRow, UTCDateTime
from store.vocabulary import World

# the columns a raw driver returns untyped: times (SQLite: text) and flags (SQLite: 0/1)
_STORED_TIMES = tuple(
    column.name for column in OperationRow.__table__.columns if isinstance(column.type, UTCDateTime)
)
_STORED_FLAGS = tuple(
    column.name for column in OperationRow.__table__.columns if isinstance(column.type, Boolean)
)


@dataclass(frozen=True)
class DelegatedRight:
    """A confirmation given with someone else's right: whose, and until when it held."""

    on_behalf_of: str
    until: str  # ISO-8601 UTC


def delegated_from(text: str | None) -> dict[str, DelegatedRight]:
    """The operation's `delegated` column: person -> the right they confirmed with."""
    found = json.loads(text) if text else {}
    return {
        person: DelegatedRight(str(right["for"]), str(right["until"]))
        for person, right in found.items()
    }


@dataclass(frozen=True)
class Operation:
    envelope: Envelope
    confirm_digest: str
    state: State
    version: int
    created_at: datetime
    updated_at: datetime
    card_message_id: str | None
    execution_state: str | None
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision_reason: str | None = None  # a reject's reason, in the operator's words
    decision_entry: str | None = None  # where it was decided (store.vocabulary.Entry)
    card_version: int | None = None
    card_error: str | None = None
    card_attempts: int = 0
    exec_tries: int = 0
    # when the card worker is next to send or patch (None: the card is current, or failed)
    card_due_at: datetime | None = None
    # operators whose confirmation counts so far, oldest first (a quorum's progress)
    confirmed_by: tuple[str, ...] = ()
    # the copy of the card in the escalation chat, once sent, and the version it shows
    escalation_message_id: str | None = None
    escalation_card_version: int | None = None
    # a time-boxed draft sends itself then if nobody has decided (None: it never does)
    auto_send_at: datetime | None = None
    # who of `confirmed_by` confirmed with a delegated right, and whose
    delegated: Mapping[str, DelegatedRight] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.envelope.id

    @property
    def kind(self) -> str:
        return self.envelope.kind

    @property
    def payload(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.envelope.payload)
        return loaded

    @property
    def projection(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.envelope.projection)
        return loaded

    @classmethod
    def from_stored(cls, row: Mapping[str, Any]) -> Operation:
        """From a raw driver's row of `operations` (a hand-written statement's `RETURNING *`):
        its times and flags typed as SQLAlchemy would read them."""
        typed = dict(row)
        for name in _STORED_TIMES:
            if typed[name] is not None:
                typed[name] = stored_time(typed[name])
        for name in _STORED_FLAGS:
            typed[name] = bool(typed[name])
        return cls.from_row(SimpleNamespace(**typed))

    @classmethod
    def from_row(cls, row: Any) -> Operation:
        conversation, callback = Source.routes_from(
            json.loads(row.source_routes) if row.source_routes else None
        )
        envelope = Envelope(
            id=row.id,
            kind=row.kind,
            schema_version=row.schema_version,
            executor_name=row.executor_name,
            executor_revision=row.executor_revision,
            simulated=row.simulated,
            payload=row.payload,
            projection=row.projection,
            audience=Audience(
                name=row.audience_name,
                chat_id=row.audience_chat_id,
                operators=tuple(json.loads(row.audience_operators)),
                allow_self_approval=row.allow_self_approval,
            ),
            target_ref=row.target_ref,
            expires_at=row.expires_at,
            approval=approval_from(row),
            world=World(row.world) if row.world else None,
            source=Source(
                proposer=row.source_proposer,
                request_id=row.source_request_id,
                requester_open_id=row.source_requester_open_id,
                context=json.loads(row.source_context),
                reason=row.source_reason,
                conversation=conversation,
                callback=callback,
            ),
        )
        return cls(
            envelope=envelope,
            confirm_digest=row.confirm_digest,
            state=State(row.state),
            version=row.version,
            created_at=row.created_at,
            updated_at=row.updated_at,
            card_message_id=row.card_message_id,
            execution_state=row.execution_state,
            decided_by=row.decided_by,
            decided_at=row.decided_at,
            decision_reason=row.decision_reason,
            decision_entry=row.decision_entry,
            card_version=row.card_version,
            card_error=row.card_error,
            card_attempts=row.card_attempts,
            exec_tries=row.exec_tries,
            card_due_at=row.card_due_at,
            confirmed_by=tuple(json.loads(row.confirmed_by)) if row.confirmed_by else (),
            escalation_message_id=row.escalation_message_id,
            escalation_card_version=row.escalation_card_version,
            auto_send_at=row.auto_send_at,
            delegated=delegated_from(row.delegated),
        )


def approval_from(row: Any) -> Approval:
    """The approval policy as the operation was filed with it (store/authority/filing.py)."""
    terms = json.loads(row.approval) if row.approval else {}
    return Approval(
        required=row.required_confirmations,
        approvers=tuple(json.loads(row.approvers)) if row.approvers else (),
        rule=terms.get("rule"),
        threshold=terms.get("threshold"),
        notional=terms.get("notional"),
        policy=row.policy_digest,
        escalation_chat_id=row.escalation_chat_id,
    )


@dataclass(frozen=True)
class Confirmation:
    id: int
    operation_id: str
    at: datetime
    action: str
    operator_open_id: str
    digest: str
    chat_id: str | None
    message_id: str | None
    event_id: str | None
    accepted: bool
    reason_code: str | None
    entry: str = "lark"  # where the click was made (store.vocabulary.Entry)
    refusals: int = 1  # refused web posts this row counts (one row per person and operation)

    @classmethod
    def from_row(cls, row: Any) -> Confirmation:
        return cls(
            id=row.id,
            operation_id=row.operation_id,
            at=row.at,
            action=row.action,
            operator_open_id=row.operator_open_id,
            digest=row.digest,
            chat_id=row.chat_id,
            message_id=row.message_id,
            event_id=row.event_id,
            accepted=row.accepted,
            reason_code=row.reason_code,
            entry=row.entry,
            refusals=row.refusals,
        )


@dataclass(frozen=True)
class AuditEntry:
    operation_id: str
    at: datetime
    actor: str
    event: str
    from_state: str | None
    to_state: str | None
    reason_code: str | None
    # a decision's or refusal's: SHA-256 of the click or web post as the inbox keeps it; a
    # supersede's: the superseding operation's id
    evidence: str | None = None

    @classmethod
    def from_row(cls, row: Any) -> AuditEntry:
        return cls(
            operation_id=row.operation_id,
            at=row.at,
            actor=row.actor,
            event=row.event,
            from_state=row.from_state,
            to_state=row.to_state,
            reason_code=row.reason_code,
            evidence=row.evidence,
        )
