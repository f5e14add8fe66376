"""An operation's projection and an outcome, as the conclusion reply reads them (the parts
cards/conclusion.py uses, the rest filled in: tests/support/projection.py), for the pure
tests of what goes back to the proposer."""

from __future__ import annotations

from typing import Any

from store import CHANGES_REQUESTED, DECLINED, EXPIRED, OperationView, OutcomeView
from tests.support.projection import outcome_view_of, view_of
from workers.domains import meaning

# conclusions of operations that never ran: shaped like an outcome, with no row (no meaning)
CLOSING = frozenset({DECLINED, EXPIRED, CHANGES_REQUESTED})


def projection(**overrides: Any) -> OperationView:
    view: dict[str, Any] = {
        "id": "01OPERATION",
        "kind": "finance.order",
        "confirm_digest": "c" * 64,
        "simulated": True,
        "terms": {"title": "BUY 0.010 BTC-PERP"},
        "decision": {"action": "confirm", "by": "ou_alice", "at": "2026-12-03T04:00:00Z"},
        "card": {"message_id": "om_card"},
    }
    view.update(overrides)
    return view_of(view)


def outcome(**overrides: Any) -> OutcomeView:
    found: dict[str, Any] = {
        "stage": "initial",
        "status": "filled",
        "detail": {"filled_qty": "0.010", "avg_price": "60000", "fees": None},
        "outcome_digest": "o" * 64,
        "reconciles_digest": None,
    }
    found.update(overrides)
    if found["status"] not in CLOSING:  # a row's: what its status says, stored with it
        said = meaning("finance.order", found["status"])
        found.setdefault("final", said.final)
        found.setdefault("tone", said.tone.value)
        found.setdefault("words", said.words.as_json())
    return outcome_view_of(found)
