"""Projections a test shapes by hand, as the store's typed model (`store.OperationView`).

A pure test writes only the parts its reader uses, as the API's JSON; `view_of` fills the
rest from one complete operation and validates it, so every reader gets the model the store
makes. `edited` changes a view the store made (the model is frozen) the same way.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from store import OperationView, OutcomeView

OPERATORS = ["ou_alice", "ou_bob"]

# One complete projection. `world` is left out on purpose: a view without it is read as one
# that predates it (cards/world.py), as the hand-made views of these tests always were.
COMPLETE: dict[str, Any] = {
    "projection_version": 1,
    "id": "01OPERATION",
    "kind": "finance.order",
    "schema_version": 1,
    "state": "awaiting_confirmation",
    "version": 1,
    "confirm_digest": "c" * 64,
    "created_at": "2025-03-01T01:30:00Z",
    "updated_at": "2025-03-01T01:30:00Z",
    "expires_at": "2025-03-01T01:45:00Z",
    "auto_send_at": None,
    "simulated": True,
    "executor": {"name": "sim-venue", "revision": "1"},
    "audience": {
        "name": "ops",
        "chat_id": "oc_ops",
        "operators": OPERATORS,
        "allow_self_approval": False,
    },
    "target": "sim",
    "terms": {},
    "payload": {},
    "payload_digest": "p" * 64,
    "projection_digest": "j" * 64,
    "source": {
        "proposer": "dev-agent",
        "request_id": "r1",
        "requester_open_id": None,
        "context": {},
    },
    "approval": {
        "required": 1,
        "approvers": OPERATORS,
        "rule": None,
        "threshold": None,
        "notional": None,
        "why": None,
        "confirmed_by": [],
    },
    "decision": None,
    "card": {"message_id": None, "shows_version": None, "delivery": "pending", "error": None},
    "execution": None,
    "outcome": None,
    "outcomes": [],
}
# what a decision or an outcome written in part leaves to these
DECISION: dict[str, Any] = {"action": "confirm", "by": None, "at": None, "reason": None}
DECISION_ENTRY = {"entry": "lark"}
OUTCOME: dict[str, Any] = {
    "stage": "initial",
    "detail": {},
    "outcome_digest": "o" * 64,
    "reconciles_digest": None,
    "final": True,
    "tone": "warn",
    "words": {},
}
# the parts that are objects: a part given is merged into the complete one
MERGED = ("executor", "audience", "source", "approval", "card")


def outcome_data(given: Mapping[str, Any]) -> dict[str, Any]:
    return {**OUTCOME, **given}


def outcome_view_of(given: Mapping[str, Any]) -> OutcomeView:
    return OutcomeView.model_validate(outcome_data(given))


def view_of(given: Mapping[str, Any]) -> OperationView:
    """`given` (the API's JSON, whole or in part) as the store's model, the rest filled in."""
    data = copy.deepcopy(COMPLETE)
    for key, value in copy.deepcopy(dict(given)).items():
        if key in MERGED and isinstance(value, Mapping):
            data[key] = {**data[key], **value}
        elif key == "decision" and isinstance(value, Mapping):
            data[key] = {**DECISION, **DECISION_ENTRY, **value}
        elif key == "outcome" and isinstance(value, Mapping):
            data[key] = outcome_data(value)
        elif key == "outcomes":
            data[key] = [outcome_data(each) for each in value]
        else:
            data[key] = value
    return OperationView.model_validate(data)


def data_of(view: OperationView) -> dict[str, Any]:
    """The view as the API's JSON: what a test edits before `view_of` again."""
    return view.model_dump(mode="json", exclude_unset=True)


def edited(view: OperationView, **changes: Any) -> OperationView:
    """`view` with these top-level parts changed (a part that is an object is merged into
    the view's own)."""
    data = data_of(view)
    for key, value in changes.items():
        merged = key in MERGED and isinstance(value, Mapping)
        data[key] = {**data[key], **value} if merged else value
    return view_of(data)
