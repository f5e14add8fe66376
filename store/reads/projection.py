"""The one versioned read projection of an operation (docs/architecture.md §1, principle 6).

Cards, the HTTP API, the CLI and the dashboard all render this dict, and everyone waiting on
an operation (the API's `?until=`, `countersign show --wait`, the MCP wait) asks it the same
two questions:

Decided: no operator decision is pending any more (confirmed, rejected, or closed without
one: cancelled, expired, superseded). Final: nothing more will happen by itself: closed
without running, or a newest outcome its domain declared final (stored with the outcome, so
a status nobody here knows is read as its domain said). Both are conditions on the current
view, not on a change seen, so a waiter that asks again never misses one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from kernel.timeutil import iso_utc
from store.lifecycle import OPEN_UNCLAIMED, TERMINAL_UNCLAIMED, State
from store.vocabulary import ClickAction, Entry

if TYPE_CHECKING:  # the records' modules load SQLAlchemy; a client reading views needs none
    from store.authority.records import Operation
    from store.execution.records import Outcome

PROJECTION_VERSION = 1


def outcome_view(outcome: Outcome) -> dict[str, Any]:
    return {
        "stage": outcome.stage,
        "status": outcome.status,
        "detail": outcome.detail,
        "outcome_digest": outcome.outcome_digest,
        "reconciles_digest": outcome.reconciles_digest,
        "observed_at": iso_utc(outcome.observed_at) if outcome.observed_at else None,
        # what the status says, as its domain declared it when the row was written
        "final": outcome.final,
        "tone": outcome.tone,
        "words": dict(outcome.words),
    }


# a decided operation's state -> the button that decided it (any other: Confirm)
DECIDED_BY_ACTION = {
    State.REJECTED: ClickAction.REJECT,
    State.CHANGES_REQUESTED: ClickAction.REQUEST_CHANGES,
}


def operation_view(op: Operation, outcomes: Sequence[Outcome] = ()) -> dict[str, Any]:
    """The projection; `outcomes` (oldest first) come from the execution ledger."""
    envelope = op.envelope
    return {
        "projection_version": PROJECTION_VERSION,
        "id": op.id,
        "kind": envelope.kind,
        "schema_version": envelope.schema_version,
        "state": op.state.value,
        "version": op.version,
        "confirm_digest": op.confirm_digest,
        "created_at": iso_utc(op.created_at),
        "updated_at": iso_utc(op.updated_at),
        "expires_at": iso_utc(envelope.expires_at),
        # a time-boxed draft sends itself then if nobody has decided (None: never)
        "auto_send_at": iso_utc(op.auto_send_at) if op.auto_send_at else None,
        # nothing of it leaves this machine (world simulated or emulator)
        "simulated": envelope.simulated,
        # which world it acts in, marked on every surface (None: not a venue)
        "world": envelope.world.value if envelope.world else None,
        "executor": {"name": envelope.executor_name, "revision": envelope.executor_revision},
        "audience": envelope.audience.as_json(),
        "target": envelope.target_ref,
        "terms": op.projection,
        "payload": op.payload,
        "payload_digest": envelope.payload_digest,
        "projection_digest": envelope.projection_digest,
        "source": envelope.source.as_json(),
        # what the approval policy asks (fixed when filed) and who has confirmed so far
        "approval": {
            "required": envelope.approval.required,
            "approvers": list(envelope.approval.approvers_of(envelope.audience)),
            "rule": envelope.approval.rule,
            "threshold": envelope.approval.threshold,
            "notional": envelope.approval.notional,
            "why": envelope.approval.why,
            "confirmed_by": list(op.confirmed_by),
        },
        "decision": (
            {
                "action": DECIDED_BY_ACTION.get(op.state, ClickAction.CONFIRM).value,
                "by": op.decided_by,
                "at": iso_utc(op.decided_at) if op.decided_at else None,
                "reason": op.decision_reason,
                # where the decision was made (store.vocabulary.Entry): the Lark card, or the
                # web; a decision recorded before entries were is the card's
                "entry": op.decision_entry or Entry.LARK.value,
            }
            if op.decided_by
            else None
        ),
        "card": {
            "message_id": op.card_message_id,
            "shows_version": op.card_version,
            "delivery": "failed"
            if op.card_error
            else ("current" if op.card_version == op.version else "pending"),
            "error": op.card_error,
        },
        "execution": {"state": op.execution_state} if op.execution_state else None,
        # the newest outcome; a reconciliation never replaces the original, both are listed
        "outcome": outcome_view(outcomes[-1]) if outcomes else None,
        "outcomes": [outcome_view(outcome) for outcome in outcomes],
    }


Until = Literal["changed", "decided", "final"]
UNTIL: tuple[Until, ...] = ("changed", "decided", "final")
OPEN = frozenset(state.value for state in OPEN_UNCLAIMED)
CLOSED_UNRUN = frozenset(state.value for state in TERMINAL_UNCLAIMED)


def decided(view: Mapping[str, Any]) -> bool:
    return view["state"] not in OPEN


def final(view: Mapping[str, Any]) -> bool:
    if view["state"] in CLOSED_UNRUN:
        return True
    outcome = view.get("outcome")
    return outcome is not None and bool(outcome["final"])


def reached(view: Mapping[str, Any], until: Until) -> bool:
    """Whether `view` already is what `until` waits for ("changed" never is: it needs a change)."""
    if until == "decided":
        return decided(view)
    if until == "final":
        return final(view)
    return False
