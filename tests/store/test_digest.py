"""Principle 2 (docs/architecture.md §1): the confirm digest binds every effect-bearing input."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import timedelta

import pytest

from kernel.canonical import canonical_json
from kernel.reasons import Reason
from store.authority.envelope import (
    Approval,
    Audience,
    CallbackRoute,
    Conversation,
    Envelope,
    confirm_digest,
)
from store.authority.store import Store
from store.claims.decisions import Click, Refused
from store.lifecycle import State
from tests.support.factories import ORDER_PAYLOAD, offered


def _with_payload(env: Envelope, key: str, value: object) -> Envelope:
    payload = json.loads(env.payload)
    payload[key] = value
    return dataclasses.replace(env, payload=canonical_json(payload))


def _payload_variants() -> dict[str, Callable[[Envelope], Envelope]]:
    changed: dict[str, object] = {
        "venue": "other",
        "account": "sim-alt",
        "instrument": "ETH-PERP",
        "side": "sell",
        "quantity": "0.011",
        "order_type": "market",
        "limit_price": "60000.5",
        "time_in_force": "IOC",
        "reduce_only": True,
        "leverage": "3",
        "max_fee": "1.6",
        "fee_currency": "USDT",
        "protective": {"stop_loss": "56000", "take_profit": "65000"},
    }
    assert set(changed) == set(ORDER_PAYLOAD), "every payload field has a variant"
    return {
        f"payload.{key}": (lambda env, key=key, value=value: _with_payload(env, key, value))
        for key, value in changed.items()
    }


def _audience(env: Envelope, **changes: object) -> Envelope:
    return dataclasses.replace(env, audience=dataclasses.replace(env.audience, **changes))


def _approval(env: Envelope, **changes: object) -> Envelope:
    return dataclasses.replace(env, approval=dataclasses.replace(env.approval, **changes))


VARIANTS: dict[str, Callable[[Envelope], Envelope]] = {
    **_payload_variants(),
    "kind": lambda e: dataclasses.replace(e, kind="message.send"),
    "schema_version": lambda e: dataclasses.replace(e, schema_version=2),
    "executor_name": lambda e: dataclasses.replace(e, executor_name="other-venue"),
    "executor_revision": lambda e: dataclasses.replace(e, executor_revision="2"),
    "simulated": lambda e: dataclasses.replace(e, simulated=False),
    "audience.chat_id": lambda e: _audience(e, chat_id="oc_other"),
    "audience.name": lambda e: _audience(e, name="ops2"),
    "audience.operator_removed": lambda e: _audience(e, operators=("ou_alice",)),
    "audience.operator_replaced": lambda e: _audience(e, operators=("ou_alice", "ou_mallory")),
    "audience.operator_added": lambda e: _audience(
        e, operators=("ou_alice", "ou_bob", "ou_mallory")
    ),
    "audience.allow_self_approval": lambda e: _audience(e, allow_self_approval=True),
    "target_ref": lambda e: dataclasses.replace(e, target_ref="account:sim/sim-alt"),
    "expires_at": lambda e: dataclasses.replace(e, expires_at=e.expires_at + timedelta(seconds=1)),
    "projection": lambda e: dataclasses.replace(
        e, projection=canonical_json({**json.loads(e.projection), "title": "BUY 1 BTC-PERP"})
    ),
    "source.requester": lambda e: dataclasses.replace(
        e, source=dataclasses.replace(e.source, requester_open_id="ou_bob")
    ),
    "source.context": lambda e: dataclasses.replace(
        e, source=dataclasses.replace(e.source, context={"why": "other"})
    ),
    "source.reason": lambda e: dataclasses.replace(
        e, source=dataclasses.replace(e.source, reason="rebalance before the close")
    ),
    "source.conversation": lambda e: dataclasses.replace(
        e, source=dataclasses.replace(e.source, conversation=Conversation("oc_ops", "om_other"))
    ),
    "source.callback": lambda e: dataclasses.replace(
        e,
        source=dataclasses.replace(
            e.source, callback=CallbackRoute("https://evil.example/hook", "dev")
        ),
    ),
    "id": lambda e: dataclasses.replace(e, id="01AAAAAAAAAAAAAAAAAAAAAAAA"),
    # the approval policy fixed at filing: how many, who, the rule and why, the policy's digest
    "approval.required": lambda e: _approval(e, required=2),
    "approval.approvers": lambda e: _approval(e, approvers=("ou_alice",)),
    "approval.rule": lambda e: _approval(e, rule="large-orders"),
    "approval.threshold": lambda e: _approval(e, threshold="50,000 USDC"),
    "approval.notional": lambda e: _approval(e, notional="600.00 USDC"),
    "approval.policy": lambda e: _approval(e, policy="0" * 64),
}

TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))
FILED = Approval(
    required=2,
    approvers=("ou_alice", "ou_bob", "ou_carol"),
    rule="large-orders",
    threshold="50,000 USDC",
    notional="60000.00 USDC",
    policy="a" * 64,
)


async def test_the_stored_digest_is_recomputable_from_the_stored_envelope(store: Store) -> None:
    op = await offered(store)
    assert op.confirm_digest == confirm_digest(op.envelope)
    assert len(op.confirm_digest) == 64 and int(op.confirm_digest, 16) >= 0


async def test_an_approval_survives_the_store_as_filed_and_its_digest_with_it(
    store: Store,
) -> None:
    op = await offered(store, audience=TRIO, approval=FILED)
    assert op.envelope.approval == FILED
    assert op.confirm_digest == confirm_digest(op.envelope)


@pytest.mark.parametrize(
    "changes",
    [
        {"required": 3},
        {"approvers": ("ou_alice", "ou_bob")},
        {"rule": "huge-orders"},
        {"threshold": "40,000 USDC"},
        {"notional": "unknown USDC"},
        {"policy": "b" * 64},
    ],
    ids=lambda changes: next(iter(changes)),
)
async def test_a_quorum_cards_digest_changes_with_its_approval_alone(
    store: Store, changes: dict[str, object]
) -> None:
    """Only the approval differs (same terms, audience, expiry): another digest, and a click
    carrying it claims nothing and counts no confirmation."""
    op = await offered(store, audience=TRIO, approval=FILED)
    altered = _approval(op.envelope, **changes)
    assert altered.payload == op.envelope.payload and altered.audience == op.envelope.audience
    altered_digest = confirm_digest(altered)
    assert altered_digest != op.confirm_digest

    result = await store.confirm_and_claim(
        Click(op.id, "confirm", altered_digest, "ou_alice", "oc_ops", op.card_message_id)
    )

    assert isinstance(result, Refused) and result.reason is Reason.DIGEST_MISMATCH
    after = await store.get(op.id)
    assert after == op and after.confirmed_by == ()
    assert await store.claim_count(op.id) == 0


@pytest.mark.parametrize("name", sorted(VARIANTS))
async def test_any_altered_input_changes_the_digest_and_the_old_digest_cannot_claim(
    store: Store, name: str
) -> None:
    op = await offered(store)
    altered = VARIANTS[name](op.envelope)
    assert altered != op.envelope
    altered_digest = confirm_digest(altered)
    assert altered_digest != op.confirm_digest

    result = await store.confirm_and_claim(
        Click(op.id, "confirm", altered_digest, "ou_alice", "oc_ops", op.card_message_id)
    )

    assert isinstance(result, Refused) and result.reason is Reason.DIGEST_MISMATCH
    after = await store.get(op.id)
    assert after == op, "nothing about the operation changed"
    assert await store.claim_count(op.id) == 0
    confirmations = await store.confirmations(op.id)
    assert [(c.accepted, c.reason_code) for c in confirmations] == [(False, "digest_mismatch")]
    audit = await store.audit(op.id)
    assert [a.event for a in audit] == ["proposed", "card_sent", "click_refused"]
    assert audit[-1].from_state == audit[-1].to_state == State.AWAITING_CONFIRMATION
