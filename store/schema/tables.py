"""Tables of the operation authority. Migrations in `store/schema/migrations` mirror these.

Their base and shared column types are store/schema/columns.py's (`Base` and `UTCDateTime` are
re-exported here for the modules that have always imported them from this one)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    literal_column,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from store.schema.audit_tables import AuditChainRow as AuditChainRow
from store.schema.audit_tables import AuditRow as AuditRow
from store.schema.columns import Base as Base
from store.schema.columns import BigId, operation_ref, vocabulary_checks
from store.schema.columns import UTCDateTime as UTCDateTime
from store.vocabulary import Execution

# What the reads of outstanding work ask, and the partial indexes that hold just that: SQLite
# uses a partial index only for a WHERE term that is the index's own, constants written as
# constants (a bound parameter is not), so both are written from these (issue 34).
CARD_REFUSED = "card_error IS NOT NULL"
CARD_WAITING = "card_due_at IS NOT NULL AND card_error IS NULL"
SUBMISSION_UNKNOWN = f"execution_state = '{Execution.SUBMISSION_UNKNOWN.value}'"
SUBMITTED = f"execution_state = '{Execution.SUBMITTED.value}'"  # orders working at a venue
# outcome statuses that put an operation before a person (store/reads/attention.py)
NEEDS_PEOPLE = ("unknown", "unresolved")


def partial(table: str, name: str, columns: tuple[str, ...], where: str) -> Index:
    """An index over only the rows `where` holds, on both backends."""
    return Index(
        f"ix_{table}_{name}", *columns, sqlite_where=text(where), postgresql_where=text(where)
    )


def constant(value: str) -> Any:
    """`value` as a SQL constant in a statement (our own words only), so a partial index on
    it can serve the statement."""
    assert "'" not in value, value
    return literal_column(f"'{value}'")


class OperationRow(Base):
    __tablename__ = "operations"

    id: Mapped[str] = mapped_column(String(26), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    kind: Mapped[str] = mapped_column(String(64), nullable=False)
    schema_version: Mapped[int] = mapped_column(Integer, nullable=False)
    executor_name: Mapped[str] = mapped_column(String(64), nullable=False)
    executor_revision: Mapped[str] = mapped_column(String(32), nullable=False)
    # world in {simulated, emulator}: nothing of it leaves this machine
    simulated: Mapped[bool] = mapped_column(Boolean, nullable=False)
    # which world it acts in (store.vocabulary.World; NULL: not a venue, e.g. a Lark message)
    world: Mapped[str | None] = mapped_column(String(16))
    payload: Mapped[str] = mapped_column(Text, nullable=False)
    payload_digest: Mapped[str] = mapped_column(String(64), nullable=False)
    projection: Mapped[str] = mapped_column(Text, nullable=False)
    projection_digest: Mapped[str] = mapped_column(String(64), nullable=False)
    audience_name: Mapped[str] = mapped_column(String(64), nullable=False)
    audience_chat_id: Mapped[str] = mapped_column(String(128), nullable=False)
    audience_operators: Mapped[str] = mapped_column(Text, nullable=False)
    allow_self_approval: Mapped[bool] = mapped_column(Boolean, nullable=False)
    target_ref: Mapped[str] = mapped_column(String(200), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    source_proposer: Mapped[str] = mapped_column(String(64), nullable=False)
    source_request_id: Mapped[str] = mapped_column(String(128), nullable=False)
    source_requester_open_id: Mapped[str | None] = mapped_column(String(128))
    source_context: Mapped[str] = mapped_column(Text, nullable=False)
    # why, in the proposer's words: one line of plain text shown on the card (bound in the digest)
    source_reason: Mapped[str | None] = mapped_column(Text)
    # where the conclusion goes back: {"conversation": {...}, "callback": {...}} or NULL
    source_routes: Mapped[str | None] = mapped_column(Text)
    request_content: Mapped[str] = mapped_column(Text, nullable=False)
    confirm_digest: Mapped[str] = mapped_column(String(64), nullable=False)
    state: Mapped[str] = mapped_column(String(32), nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    card_message_id: Mapped[str | None] = mapped_column(String(128))
    execution_state: Mapped[str | None] = mapped_column(String(32))
    # who decided (confirm or reject) and when, for every surface to show
    decided_by: Mapped[str | None] = mapped_column(String(128))
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # why, in the operator's words, where they gave a reason (a reject's, bounded and cleaned)
    decision_reason: Mapped[str | None] = mapped_column(Text)
    # where the decision was made (store.vocabulary.Entry): the card in Lark, or the web
    decision_entry: Mapped[str | None] = mapped_column(String(16))
    # card delivery, derived from versions: the card shows `card_version`; anything newer is due
    card_version: Mapped[int | None] = mapped_column(Integer)
    card_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    card_attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    card_error: Mapped[str | None] = mapped_column(String(300))
    # execution schedule: the executor/reconciler is due at `exec_due_at` (None: nothing to do);
    # leased by a compare-and-set, like card delivery; exec_failures: passes in a row that raised
    exec_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    exec_tries: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    exec_failures: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    # the approval policy as filed (store.authority.envelope.Approval): how many distinct operators
    # must confirm, who may (JSON list), the rule that applied (JSON) and the digest of the
    # audience's policy then; who has confirmed so far (JSON list, oldest first)
    required_confirmations: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1")
    approvers: Mapped[str | None] = mapped_column(Text)
    approval: Mapped[str | None] = mapped_column(Text)
    policy_digest: Mapped[str] = mapped_column(String(64), nullable=False, server_default="")
    confirmed_by: Mapped[str | None] = mapped_column(Text)
    # who confirmed with a delegated right: JSON {person: {"for": delegator, "until": ISO}}
    delegated: Mapped[str | None] = mapped_column(Text)
    # the reminder before expiry: due at `remind_at` (leased like card delivery), sent once
    remind_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    reminded_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # a time-boxed draft sends itself then, if nobody has decided (store/claims/auto_send.py)
    auto_send_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # the copy of the card in the escalation audience's chat (sent at the reminder)
    escalation_chat_id: Mapped[str | None] = mapped_column(String(128))
    escalation_message_id: Mapped[str | None] = mapped_column(String(128))
    escalation_card_version: Mapped[int | None] = mapped_column(Integer)

    __table_args__ = (
        UniqueConstraint("source_proposer", "source_request_id"),
        Index("ix_operations_created_at_id", "created_at", "id"),
        Index("ix_operations_state_created_at_id", "state", "created_at", "id"),
        Index("ix_operations_state_expires_at", "state", "expires_at"),
        Index("ix_operations_card_due_at", "card_due_at"),
        # only what is scheduled (a lease's `<=` implies it; a reconcile asks IS NOT NULL)
        partial("operations", "exec_due_at", ("exec_due_at",), "exec_due_at IS NOT NULL"),
        Index("ix_operations_remind_at", "remind_at"),
        Index("ix_operations_auto_send_at", "auto_send_at"),
        # the dashboard's change mark and recent activity: the newest change first
        Index("ix_operations_updated_at_id", "updated_at", "id"),
        # a proposer's list (the API, `countersign list`), newest first
        Index("ix_operations_source_proposer_created_at_id", "source_proposer", "created_at", "id"),
        partial("operations", "card_refused", ("created_at", "id"), CARD_REFUSED),
        partial("operations", "card_waiting", ("updated_at",), CARD_WAITING),
        partial("operations", "unknown_submissions", ("created_at", "id"), SUBMISSION_UNKNOWN),
        partial("operations", "working_orders", ("id",), SUBMITTED),
        *vocabulary_checks("operations"),
    )


class ConfirmationRow(Base):
    """Every click, accepted or refused. operation_id is the click's claim, hence no FK."""

    __tablename__ = "confirmations"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    operation_id: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    action: Mapped[str] = mapped_column(String(32), nullable=False)
    operator_open_id: Mapped[str] = mapped_column(String(128), nullable=False)
    digest: Mapped[str] = mapped_column(String(128), nullable=False)
    chat_id: Mapped[str | None] = mapped_column(String(128))
    message_id: Mapped[str | None] = mapped_column(String(128))
    event_id: Mapped[str | None] = mapped_column(String(128))
    accepted: Mapped[bool] = mapped_column(Boolean, nullable=False)
    reason_code: Mapped[str | None] = mapped_column(String(64))
    # where the click was made (store.vocabulary.Entry)
    entry: Mapped[str] = mapped_column(String(16), nullable=False, server_default="lark")
    # refused posts this row stands for: one person's refused web posts on one operation are
    # one row, counted (uq_confirmations_refused_web, store/claims/click_sql.py); else 1
    refusals: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1")
    # given with a delegated right: whose (its seat in the quorum), which delegation (0028)
    on_behalf_of: Mapped[str | None] = mapped_column(String(128))
    delegation_id: Mapped[str | None] = mapped_column(String(26))

    __table_args__ = (
        # a quorum counts people and rights: one counted confirmation per person, one per right
        # (its holder's or a delegate's, 0028); the database decides, not a read
        Index(
            "uq_confirmations_counted",
            "operation_id",
            "operator_open_id",
            unique=True,
            sqlite_where=text("action = 'confirm' AND accepted"),
            postgresql_where=text("action = 'confirm' AND accepted"),
        ),
        Index(
            "uq_confirmations_seat",
            "operation_id",
            text("coalesce(on_behalf_of, operator_open_id)"),
            unique=True,
            sqlite_where=text("action = 'confirm' AND accepted"),
            postgresql_where=text("action = 'confirm' AND accepted"),
        ),
        Index(
            "uq_confirmations_refused_web",
            "operation_id",
            "operator_open_id",
            unique=True,
            sqlite_where=text("NOT accepted AND entry = 'web'"),
            postgresql_where=text("NOT accepted AND entry = 'web'"),
        ),
        *vocabulary_checks("confirmations"),
    )


class ClaimRow(Base):
    __tablename__ = "claims"

    id: Mapped[str] = mapped_column(String(26), primary_key=True)
    operation_id: Mapped[str] = operation_ref(unique=True)
    confirmation_id: Mapped[int] = mapped_column(ForeignKey("confirmations.id"), nullable=False)
    operator_open_id: Mapped[str] = mapped_column(String(128), nullable=False)
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)


class InboxRow(Base):
    """Ingress events by their dedupe key: callbacks by event_id, text by message_id.

    Stored before processing, so a replay returns the first answer and a restart finds
    what was received but never answered.
    """

    __tablename__ = "inbox"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    key: Mapped[str] = mapped_column(String(128), nullable=False)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    payload: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    tries: Mapped[int] = mapped_column(Integer, nullable=False)
    answer: Mapped[str | None] = mapped_column(Text)
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        UniqueConstraint("kind", "key"),
        Index("ix_inbox_kind_status", "kind", "status"),
        *vocabulary_checks("inbox"),
    )


class CardDeliveryRow(Base):
    """Every attempt to show an operation's card: send, patch, or a callback answer."""

    __tablename__ = "card_deliveries"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    operation_id: Mapped[str] = operation_ref(index=True)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    action: Mapped[str] = mapped_column(String(16), nullable=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    ok: Mapped[bool] = mapped_column(Boolean, nullable=False)
    code: Mapped[int | None] = mapped_column(Integer)
    detail: Mapped[str | None] = mapped_column(String(300))

    __table_args__ = vocabulary_checks("card_deliveries")


class AttemptRow(Base):
    """The one submission of an operation, recorded (with its stable client id) before dispatch.

    Where it stands is the operation's `execution_state` (dispatching, submission_unknown,
    ...); migration 0007 dropped the copy this table kept."""

    __tablename__ = "attempts"

    id: Mapped[str] = mapped_column(String(26), primary_key=True)
    operation_id: Mapped[str] = operation_ref(unique=True)
    client_id: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    dispatched_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(String(300))
    # what the runner must be able to show later (a signed request, its nonce): canonical
    # JSON, written once before the request leaves (store/execution/evidence.py)
    evidence: Mapped[str | None] = mapped_column(Text)


class OutcomeRow(Base):
    """Append-only: a reconciliation adds a row naming the digest of the outcome it reconciles."""

    __tablename__ = "outcomes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    operation_id: Mapped[str] = operation_ref()
    stage: Mapped[str] = mapped_column(String(16), nullable=False)
    status: Mapped[str] = mapped_column(String(32), nullable=False)
    detail: Mapped[str] = mapped_column(Text, nullable=False)
    outcome_digest: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    reconciles_digest: Mapped[str | None] = mapped_column(String(64))
    observed_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    # what the status says, from its domain when written (migration 0021): whether it is
    # final, its tone (store.vocabulary.Tone) and its words, JSON {"en": ..., "zh": ...}
    final: Mapped[bool] = mapped_column(Boolean, nullable=False)
    tone: Mapped[str] = mapped_column(String(8), nullable=False)
    words: Mapped[str] = mapped_column(Text, nullable=False)

    __table_args__ = (
        # an operation's newest outcome first, in one seek (migration 0024)
        Index("ix_outcomes_operation_id_id", "operation_id", "id"),
        *(
            partial("outcomes", status, ("operation_id", "id"), f"status = '{status}'")
            for status in NEEDS_PEOPLE
        ),
        *vocabulary_checks("outcomes"),
    )


class AccountRow(Base):
    """One row per account: its version is the compare-and-set that serializes reservations."""

    __tablename__ = "accounts"

    account: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, nullable=False)


class ReservationRow(Base):
    """Exposure held for an order between its claim and its observed outcome."""

    __tablename__ = "reservations"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    operation_id: Mapped[str] = operation_ref(unique=True)
    account: Mapped[str] = mapped_column(ForeignKey("accounts.account"), nullable=False)
    # decimal text, exact: summed in Python inside the account's compare-and-set
    amount: Mapped[str] = mapped_column(String(64), nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    released_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        # what an account holds: its active ones, and those converted since an observation
        Index("ix_reservations_account_state_released_at", "account", "state", "released_at"),
        *vocabulary_checks("reservations"),
    )


class DeliveryRow(Base):
    """One conclusion of an operation going back to its proposer (outbox).

    Written in the outcome's own transaction, so a crash can never lose it; `id` is the
    delivery id receivers dedupe on, the same on every attempt and across restarts.
    """

    __tablename__ = "deliveries"

    id: Mapped[str] = mapped_column(String(26), primary_key=True)
    operation_id: Mapped[str] = operation_ref()
    channel: Mapped[str] = mapped_column(String(16), nullable=False)
    stage: Mapped[str] = mapped_column(String(16), nullable=False)
    outcome_digest: Mapped[str] = mapped_column(String(64), nullable=False)
    reconciles_digest: Mapped[str | None] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    result: Mapped[str | None] = mapped_column(String(128))  # reply message id, HTTP status
    last_error: Mapped[str | None] = mapped_column(String(300))

    __table_args__ = (
        UniqueConstraint("operation_id", "channel", "outcome_digest"),
        # a stage concludes once per channel: the database refuses a second conclusion
        UniqueConstraint("operation_id", "channel", "stage"),
        Index("ix_deliveries_due_at", "due_at"),
        Index("ix_deliveries_state", "state"),
        *vocabulary_checks("deliveries"),
    )


class DeliveryAttemptRow(Base):
    __tablename__ = "delivery_attempts"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(
        ForeignKey("deliveries.id"), nullable=False, index=True
    )
    at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    ok: Mapped[bool] = mapped_column(Boolean, nullable=False)
    code: Mapped[int | None] = mapped_column(Integer)
    detail: Mapped[str | None] = mapped_column(String(300))


class SignalRow(Base):
    """A text the counterparty wrote in a message destination's chat (store/inbox/signals.py)."""

    __tablename__ = "signals"

    message_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    destination: Mapped[str] = mapped_column(String(64), nullable=False)
    chat_id: Mapped[str] = mapped_column(String(128), nullable=False)
    sender_open_id: Mapped[str] = mapped_column(String(128), nullable=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)

    __table_args__ = (Index("ix_signals_destination_received_at", "destination", "received_at"),)
