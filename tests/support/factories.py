"""Builders for proposals used across tests (real objects, nothing mocked)."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from store import (
    Attempt,
    Audience,
    Claimed,
    Click,
    Draft,
    Execution,
    ExecutionLedger,
    Observation,
    Operation,
    ReservationRefused,
    ReservationState,
    Source,
    Stage,
    Store,
    WriterStats,
)
from workers.domains import DOMAINS
from workers.domains.base import STORED
from workers.domains.finance.examples import LIMIT_BUY
from workers.domains.message.domain import MessageDomain
from workers.domains.message.schema import MessageSendV1

_counter = itertools.count()

ORDER_PAYLOAD: dict[str, Any] = {
    **LIMIT_BUY,
    "protective": {"stop_loss": "57000", "take_profit": "65000"},
}

MESSAGE_PAYLOAD: dict[str, Any] = {
    "destination": "acme",
    "counterparty": "acme-supplier",
    "text": "Hello Acme, delivery on Friday.",
    "priority": "P2",
}


def order_request(request_id: str | None = None, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "request_id": request_id or f"req-{next(_counter)}",
        "kind": "finance.order",
        "payload": copy.deepcopy(ORDER_PAYLOAD),
        "audience": "ops",
        "expires_in_s": 900,
    }
    body.update(overrides)
    return body


def message_request(request_id: str | None = None, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "request_id": request_id or f"msg-{next(_counter)}",
        "kind": "message.send",
        "payload": copy.deepcopy(MESSAGE_PAYLOAD),
        "audience": "ops",
    }
    body.update(overrides)
    return body


def message_draft_fields(text: str) -> dict[str, Any]:
    """Draft fields of a message.send, its payload read as stored (the rules of its day)."""
    domain = MessageDomain()
    payload = {**MESSAGE_PAYLOAD, "text": text}
    model = MessageSendV1.model_validate(payload, context=STORED)
    return {
        "kind": domain.kind,
        "executor_name": domain.executor_name,
        "executor_revision": domain.executor_revision,
        "simulated": domain.simulated,
        "payload": payload,
        "projection": DOMAINS[domain.kind].project(model),  # with its words, as filed
        "target_ref": domain.target_ref(model),
    }


def kind_words(kind: str) -> dict[str, dict[str, str]]:
    """A kind's words as a projection filed through its registered domain carries them."""
    words = DOMAINS[kind].words
    return {
        "title": words.title.as_json(),
        "waiting": words.waiting.as_json(),
        "partly": words.partly.as_json(),
    }


def draft(request_id: str | None = None, expires_in_s: int = 900, **overrides: Any) -> Draft:
    """A store-level draft without going through HTTP intake."""
    request_id = request_id or f"draft-{next(_counter)}"
    values: dict[str, Any] = {
        "kind": "finance.order",
        "schema_version": 1,
        "executor_name": "sim-venue",
        "executor_revision": "1",
        "simulated": True,
        "payload": dict(ORDER_PAYLOAD),
        "projection": {
            "title": "BUY 0.010 BTC-PERP",
            "terms": [],
            "simulated": True,
            "words": kind_words("finance.order"),
        },
        "audience": Audience("ops", "oc_ops", ("ou_alice", "ou_bob")),
        "target_ref": "account:sim/sim-main",
        "expires_in_s": expires_in_s,
        "source": Source("dev-agent", request_id),
        "request_content": {"request_id": request_id},
    }
    values.update(overrides)
    return Draft(**values)


async def offered(store: Store, **overrides: Any) -> Operation:
    """An operation whose card has been sent: awaiting_confirmation."""
    proposed = await store.propose(draft(**overrides))
    return await store.mark_card_sent(proposed.operation.id, f"om_{proposed.operation.id}")


async def claimed(store: Store) -> Operation:
    """An offered operation, confirmed and claimed by Alice on its card."""
    op = await offered(store)
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


def refused_by_budget(refused: ReservationRefused) -> Observation:
    """How a test records a budget refusal (the executor words its own)."""
    return Observation(
        Stage.INITIAL,
        "reservation_refused",
        Execution.RESERVATION_REFUSED,
        {"reason": refused.reason},
        settles=ReservationState.RELEASED,
    )


async def dispatching(store: Store, operation_id: str) -> Attempt:
    """Walk a claimed operation through the executor's first three writes (nothing to hold)."""
    ledger = ExecutionLedger(store)
    await ledger.begin_preflight(operation_id)
    await ledger.reserve_and_mark(operation_id, None, refused=refused_by_budget)
    return await ledger.begin_dispatch(operation_id, f"cs-{operation_id}")


def writes(store: Store) -> int:
    """Writes so far: SQLAlchemy write transactions (`write`, `transact`) and hand-written
    group-commit intents (the writer's intents, less the `transact` work among them)."""
    stats = store.writer.stats if store.writer else WriterStats()
    return store.writes + stats.intents - stats.work


# An audience of three operators, and the rule by amount the approval-policy tests use.
TRIO_AUDIENCE: dict[str, Any] = {
    "name": "ops",
    "chat_id": "oc_ops",
    "operators": ["ou_alice", "ou_bob", "ou_carol"],
}
LARGE_ORDERS_RULE: dict[str, Any] = {
    "name": "large-orders",
    "kinds": ["finance.order"],
    "above": "50000",
    "currency": "USDC",
    "required_confirmations": 2,
}


def big_order(request_id: str) -> dict[str, Any]:
    """1 BTC at a 60,000 limit: a 60,000 USDC notional, above LARGE_ORDERS_RULE's 50,000."""
    body = order_request(request_id)
    body["payload"]["quantity"] = "1.000"
    body["payload"]["max_fee"] = "100"
    return body
