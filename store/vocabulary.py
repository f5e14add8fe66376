"""Every state and status the store keeps, in one place; the database enforces them.

Each enum below is the whole vocabulary of a column: `CHECKED` names the columns, the
models and migration 0006 turn it into `CHECK (column IN (...))`, so a value outside it is
refused by the database whoever writes it. Adding a value takes a migration that widens the
constraint (tests/store/test_vocabulary.py writes every value and fails until it does).

Outcome statuses are not here: they are the domain's own words, stored with the outcome
together with their tone and finality (`workers.domains.words.Meaning`).
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    """operations.state: the envelope's lifecycle (`store.lifecycle` has the transitions)."""

    PREPARED = "prepared"
    AWAITING_CONFIRMATION = "awaiting_confirmation"
    CLAIMED = "claimed"
    OUTCOME_OBSERVED = "outcome_observed"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    # an operator asked the proposer to rewrite the draft (message drafts): closed, like a
    # reject, and the proposer's re-file is a new draft
    CHANGES_REQUESTED = "changes_requested"


class Event(StrEnum):
    CARD_SENT = "card_sent"
    CONFIRMED = "confirmed"
    # one more operator's confirmation counted; the operation still awaits the rest (N of M)
    CONFIRMATION_COUNTED = "confirmation_counted"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    CHANGES_REQUESTED = "changes_requested"
    OUTCOME = "outcome"


class Execution(StrEnum):
    """operations.execution_state: where a claimed operation's executor is."""

    QUEUED = "queued"
    PREFLIGHT = "preflight"
    RESERVED = "reserved"
    DISPATCHING = "dispatching"
    SUBMITTED = "submitted"
    SUBMISSION_UNKNOWN = "submission_unknown"
    COMPLETED = "completed"  # a terminal outcome is recorded
    RECONCILED = "reconciled"  # an unknown resolved by looking it up, never by resubmitting
    PREFLIGHT_REJECTED = "preflight_rejected"
    RESERVATION_REFUSED = "reservation_refused"


class ReservationState(StrEnum):
    ACTIVE = "active"
    RELEASED = "released"  # nothing came of it: the order never worked or never reached the venue
    CONVERTED = "converted"  # the venue has the order: its exposure shows in fresh observations


class Stage(StrEnum):
    """outcomes.stage and deliveries.stage: each stage concludes once for its proposer."""

    INITIAL = "initial"
    RECONCILED = "reconciled"


class Tone(StrEnum):
    """outcomes.tone: how a reader should take an outcome (cards map it to a colour)."""

    GOOD = "good"
    WORKING = "working"
    WARN = "warn"
    BAD = "bad"
    DONE = "done"


class World(StrEnum):
    """operations.world: which world an operation acts in, marked on every surface (design
    principle 8). None on an operation of a kind that is not a venue (a Lark message)."""

    SIMULATED = "simulated"  # the built-in simulated venue
    EMULATOR = "emulator"  # a local copy of a real venue's API
    TESTNET = "testnet"  # a real venue's test network: no real money
    LIVE = "live"  # real money


class DeliveryState(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class CardDelivery(StrEnum):
    """The projection's card.delivery: whether the card shows the operation's version. Read
    off the card columns, never stored, so no CHECK (not in `CHECKED`)."""

    CURRENT = "current"
    PENDING = "pending"
    FAILED = "failed"


class Channel(StrEnum):
    """deliveries.channel: how a conclusion goes back to its proposer, or (ops_chat) a
    draft's filing receipt goes to its destination's internal ops chat."""

    REPLY = "reply"
    WEBHOOK = "webhook"
    OPS_CHAT = "ops_chat"


class InboxStatus(StrEnum):
    RECEIVED = "received"
    ANSWERED = "answered"
    FAILED = "failed"


class CardAction(StrEnum):
    """card_deliveries.action: how the card came to show a version."""

    SEND = "send"
    PATCH = "patch"
    CALLBACK = "callback"  # answered in the click's own callback response
    NONE = "none"  # closed before any card went out: nothing to show


class Entry(StrEnum):
    """confirmations.entry and operations.decision_entry: where a decision was made."""

    LARK = "lark"  # a button on the operation's card (or its escalation copy) in Lark
    WEB = "web"  # the dashboard's detail page, signed in with Lark
    AUTO = "auto"  # a time-boxed draft's clock: nobody decided in time (store/claims/auto_send.py)


class ClickAction(StrEnum):
    """A card button. Not checked in confirmations.action: a refused click is recorded with
    whatever action it carried (truncated), that is the record of it."""

    CONFIRM = "confirm"
    REJECT = "reject"
    # a message draft sent back to its proposer with a note (closed as changes_requested)
    REQUEST_CHANGES = "request_changes"


# (table, column) -> its vocabulary; NULL stays allowed where the column is nullable
CHECKED: dict[tuple[str, str], type[StrEnum]] = {
    ("operations", "state"): State,
    ("operations", "execution_state"): Execution,
    ("reservations", "state"): ReservationState,
    ("outcomes", "stage"): Stage,
    ("outcomes", "tone"): Tone,
    ("deliveries", "stage"): Stage,
    ("deliveries", "state"): DeliveryState,
    ("deliveries", "channel"): Channel,
    ("inbox", "status"): InboxStatus,
    ("card_deliveries", "action"): CardAction,
    ("confirmations", "entry"): Entry,
    ("operations", "decision_entry"): Entry,
    ("operations", "world"): World,
}


def allowed_sql(column: str, values: tuple[str, ...]) -> str:
    """The CHECK expression: `column IN ('a', 'b')` (values are our own identifiers)."""
    assert all(value.replace("_", "").isalnum() for value in values), values
    return f"{column} IN ({', '.join(repr(value) for value in values)})"


def check_sql(column: str, vocabulary: type[StrEnum]) -> str:
    return allowed_sql(column, tuple(member.value for member in vocabulary))
