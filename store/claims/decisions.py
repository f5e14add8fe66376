"""A click's decision as values: what the operator asked (`Click`) and what came of it
(`Claimed`, `Decided`, `Refused`), and why a click that took no effect was refused, read off
the operation as it now is (`refusal_reason`). `Store.confirm_and_claim` and `Store.reject`
write them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from kernel.reasons import Reason
from store.authority.records import Operation
from store.lifecycle import State


@dataclass(frozen=True)
class Click:
    """One operator decision on a card, as transport and provenance checks delivered it."""

    operation_id: str
    action: str
    digest: str
    operator_open_id: str
    chat_id: str | None = None
    message_id: str | None = None
    event_id: str | None = None
    reason: str | None = (
        None  # a reject's reason, bounded and cleaned (bot/decide/reject_reason.py)
    )
    # where it was made (store.vocabulary.Entry): a web decision has no chat or message; the
    # dashboard's signed-in session stands in for the card's provenance
    entry: str = "lark"
    # SHA-256 of the verified click or web post as the inbox keeps it (its audit evidence)
    evidence: str | None = None


@dataclass(frozen=True)
class Claimed:
    operation: Operation
    claim_id: str


@dataclass(frozen=True)
class Counted:
    """A confirmation that counts toward the quorum; the operation awaits more (N of M)."""

    operation: Operation


@dataclass(frozen=True)
class Decided:
    """A reject click that took effect."""

    operation: Operation


@dataclass(frozen=True)
class Refused:
    reason: Reason
    operation: Operation | None


CLOSED_STATE_REASONS: dict[State, Reason] = {
    State.PREPARED: Reason.NOT_OFFERED,
    State.CLAIMED: Reason.ALREADY_CLAIMED,
    State.OUTCOME_OBSERVED: Reason.ALREADY_CLAIMED,
    State.REJECTED: Reason.ALREADY_REJECTED,
    State.CANCELLED: Reason.CANCELLED,
    State.SUPERSEDED: Reason.SUPERSEDED,
    State.CHANGES_REQUESTED: Reason.CHANGES_REQUESTED,
    State.EXPIRED: Reason.EXPIRED,
}


def refusal_reason(op: Operation | None, click: Click, now: datetime) -> Reason:
    """Why a click could not take effect, read off the operation as it now is."""
    if op is None:
        return Reason.OPERATION_UNKNOWN
    if click.digest != op.confirm_digest:
        return Reason.DIGEST_MISMATCH
    if op.state in (State.PREPARED, State.AWAITING_CONFIRMATION) and op.envelope.expires_at <= now:
        return Reason.EXPIRED
    if (
        op.state is State.AWAITING_CONFIRMATION
        and click.action == "confirm"
        and click.operator_open_id in op.confirmed_by
    ):
        return Reason.ALREADY_CONFIRMED
    return CLOSED_STATE_REASONS.get(op.state, Reason.NOT_OFFERED)
