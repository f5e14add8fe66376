"""Every state an operation's card can show, as projections (pure, no store): an order and a
message waiting, part way through a quorum, executing, each kind of outcome, reconciled,
rejected with a reason, expired, cancelled, replaced.

The projections have the shape `store/reads/projection.py` makes (built as its JSON, read as its
model), with terms the domains themselves project; the card, the sandbox UI and the
dashboard tests all read them.
"""

from __future__ import annotations

import copy
from typing import Any

from store import OperationView
from tests.support.factories import MESSAGE_PAYLOAD, ORDER_PAYLOAD
from tests.support.projection import view_of
from workers.domains import DOMAINS, meaning
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.message.schema import MessageSendV1

OPERATORS = ["ou_alice", "ou_bob", "ou_carol"]
PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}
NOW = "2025-03-01T01:30:00Z"
LATER = "2025-03-01T01:31:00Z"


def _base(kind: str, terms: dict[str, Any], simulated: bool, executor: str) -> dict[str, Any]:
    return {
        "projection_version": 1,
        "id": f"01JGALLERY{kind.upper().replace('.', '')}000000",
        "kind": kind,
        "state": "awaiting_confirmation",
        "version": 2,
        "confirm_digest": "9f2c8a1b" * 8,
        "created_at": NOW,
        "updated_at": NOW,
        "expires_at": "2025-03-01T01:45:00Z",
        "simulated": simulated,
        "executor": {"name": executor, "revision": "1"},
        "audience": {"name": "ops", "chat_id": "oc_ops", "operators": OPERATORS},
        "terms": terms,
        "source": {
            "proposer": "dev-agent",
            "request_id": "req-gallery",
            "requester_open_id": None,
            "context": {},
            "reason": "Rebalance before the weekly close",
        },
        "approval": {
            "required": 1,
            "approvers": OPERATORS,
            "rule": None,
            "threshold": None,
            "notional": "600.000 USDC",
            "why": None,
            "confirmed_by": [],
        },
        "decision": None,
        "card": {"message_id": "om_gallery", "shows_version": 2, "delivery": "current"},
        "execution": None,
        "outcome": None,
        "outcomes": [],
    }


def order() -> dict[str, Any]:
    terms = DOMAINS["finance.order"].project(FinanceOrderV1.model_validate(ORDER_PAYLOAD))
    return _base("finance.order", terms, True, "sim-venue")


def message() -> dict[str, Any]:
    model = MessageSendV1.model_validate(MESSAGE_PAYLOAD)
    view = _base("message.send", DOMAINS["message.send"].project(model), False, "lark-message")
    view["approval"]["notional"] = None
    return view


def decided(view: dict[str, Any], state: str, by: str, reason: str | None = None) -> dict[str, Any]:
    view = copy.deepcopy(view)
    view["state"] = state
    action = "reject" if state == "rejected" else "confirm"
    view["decision"] = {"action": action, "by": by, "at": LATER, "reason": reason, "entry": "lark"}
    view["updated_at"] = LATER
    if action == "confirm":
        view["approval"]["confirmed_by"] = [by]
    return view


def concluded(view: dict[str, Any], *outcomes: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """Confirmed by Alice, then these (stage, status, detail) outcomes, oldest first, each
    with what its status says for the view's kind (as the executor stores it)."""
    view = decided(view, "outcome_observed", "ou_alice")
    view["execution"] = {"state": "completed"}
    view["outcomes"] = [
        {
            "stage": stage,
            "status": status,
            "detail": detail,
            "outcome_digest": f"{n:02d}" * 32,
            "reconciles_digest": None,
            "observed_at": f"2025-03-01T01:{31 + n}:00Z",  # a minute apart, after the decision
            "final": (said := meaning(view["kind"], status)).final,
            "tone": said.tone.value,
            "words": said.words.as_json(),
        }
        for n, (stage, status, detail) in enumerate(outcomes)
    ]
    view["outcome"] = view["outcomes"][-1]
    return view


def closed(view: dict[str, Any], state: str) -> dict[str, Any]:
    view = copy.deepcopy(view)
    view["state"] = state
    view["updated_at"] = LATER
    return view


FILL = {"filled_qty": "0.010", "avg_price": "60000", "fees": "0.3"}
PROTECTED = [
    {"role": "stop_loss", "trigger_price": "57000", "status": "accepted", "reason": None},
    {"role": "take_profit", "trigger_price": "65000", "status": "accepted", "reason": None},
]


# what the pre-check and the executor store (workers/domains/finance/preflight.py,
# workers/executor.py): a code and English words, which each surface words in its language
PRICE_OFF_TICK = {
    "code": "price_off_tick",
    "reason": "limit price 60000.25 is not a multiple of the tick 0.5",
    "hint": "propose a new order with corrected terms",
}
STOPPED = {"reason": "the bot stopped while the order was being sent"}
NEVER_RECEIVED = {"client_id": "cs-gallery", "reason": "nobody received this client id"}


def gallery() -> dict[str, OperationView]:
    """Name -> projection, one per state a card shows."""
    return {name: view_of(data) for name, data in gallery_data().items()}


def gallery_data() -> dict[str, dict[str, Any]]:
    """Name -> projection as the API's JSON, one per state a card shows."""
    quorum = order()
    quorum["approval"].update(
        required=2,
        rule="large-orders",
        threshold="50,000 USDC",
        notional="62000.00 USDC",
        why="above 50,000 USDC",
        confirmed_by=["ou_alice"],
    )
    executing = decided(order(), "claimed", "ou_alice")
    executing["execution"] = {"state": "dispatching"}
    return {
        "order-to-confirm": order(),
        "order-part-confirmed": quorum,
        "order-executing": executing,
        "order-filled": concluded(
            order(), ("initial", "filled", {**FILL, "protective": PROTECTED})
        ),
        "order-resting": concluded(order(), ("initial", "resting", {})),
        "order-refused-by-precheck": concluded(
            order(), ("initial", "preflight_rejected", PRICE_OFF_TICK)
        ),
        "order-unknown": concluded(order(), ("initial", "unknown", STOPPED)),
        "order-reconciled": concluded(
            order(),
            ("initial", "unknown", STOPPED),
            ("reconciled", "filled", {**FILL, "fees": None}),
        ),
        "order-unresolved": concluded(
            order(),
            ("initial", "unknown", STOPPED),
            ("reconciled", "unresolved", NEVER_RECEIVED),
        ),
        "order-rejected": decided(order(), "rejected", "ou_bob", "Too large before the close"),
        "order-expired": closed(order(), "expired"),
        "order-cancelled": closed(order(), "cancelled"),
        "message-to-approve": message(),
        "message-sent": concluded(message(), ("initial", "sent", {"message_id": "om_sent"})),
        "message-replaced": closed(message(), "superseded"),
    }
