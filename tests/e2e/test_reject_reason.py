"""Reject with a reason: the operator types it in the card's form; it is kept with the
decision, cleaned to one readable line, shown on the card, the dashboard and the API, and
returned to the proposer in its reply and its signed webhook (`detail.reason`)."""

from __future__ import annotations

from typing import Any

from store import State
from tests.support.factories import TRIO_AUDIENCE, order_request
from tests.support.proposer_routes import Receiver, conversation, replies_to, with_routes
from tests.support.stack import CALLBACK_SECRET, Stack, StackFactory, card_says
from tests.support.waiting import eventually
from workers.webhook_signature import verify

TRIO = TRIO_AUDIENCE
TWO_ALWAYS = {"name": "two", "kinds": ["finance.order"], "required_confirmations": 2}
TYPED = "Price moved 2%\u200b since the proposal;\nwait for the\x07 auction"
KEPT = "Price moved 2% since the proposal; wait for the auction"


async def dashboard(stack: Stack, operation_id: str) -> str:
    async with stack.http.get(f"{stack.bot_url}/ops/{operation_id}") as response:
        assert response.status == 200
        return await response.text()


async def routed_offer(stack: Stack, receiver: Receiver, key: str) -> tuple[Any, str, str]:
    thread = await conversation(stack)
    body = with_routes(order_request(key), conversation_id=thread, url=receiver.url)
    view, message_id = await stack.offered(body)
    return view, message_id, thread


async def test_a_veto_with_a_reason_reaches_every_surface_and_the_proposer(
    make_stack: StackFactory, receiver: Receiver
) -> None:
    stack = await make_stack("ws", audiences=[TRIO], approval_rules=[TWO_ALWAYS])
    view, message_id, thread = await routed_offer(stack, receiver, "veto-with-reason")
    await stack.click(message_id, "ou_alice")  # 1 of 2

    reply = await stack.click(message_id, "ou_bob", "reject", form={"reason": TYPED})
    assert reply["form_value"] == {"reason": TYPED}  # what Lark sent, as typed
    assert reply["toast"]["type"] == "success"

    op = await stack.store.get(view["id"])
    assert op is not None and op.state is State.REJECTED
    assert op.decision_reason == KEPT
    assert await stack.store.claim_count(view["id"]) == 0
    await card_says(stack, message_id, f"Reason: {KEPT}")

    _, api_view = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert api_view["decision"] == {
        "action": "reject",
        "by": "ou_bob",
        "at": api_view["decision"]["at"],
        "reason": KEPT,
        "entry": "lark",
    }
    assert KEPT in await dashboard(stack, view["id"])

    await eventually(lambda: bool(receiver.accepted), deadline_s=30)
    (hook,) = receiver.accepted
    assert verify(CALLBACK_SECRET, hook.headers, hook.body)
    assert hook.json["outcome"] == "declined"
    assert hook.json["detail"]["reason"] == KEPT
    await eventually(lambda: bool(replies_to(stack, thread)), deadline_s=30, woken_by=stack.state)
    (text,) = replies_to(stack, thread)
    assert "Rejected by ou_bob" in text and f"Reason: {KEPT}" in text


async def test_a_reject_with_the_reason_left_empty_has_none(
    make_stack: StackFactory, receiver: Receiver
) -> None:
    stack = await make_stack("ws")
    view, message_id, _ = await routed_offer(stack, receiver, "no-reason")

    reply = await stack.click(message_id, "ou_bob", "reject")  # the field left as it was
    assert reply["form_value"] == {"reason": ""}

    op = await stack.store.get(view["id"])
    assert op is not None and op.state is State.REJECTED and op.decision_reason is None
    await eventually(lambda: bool(receiver.accepted), deadline_s=30)
    assert "reason" not in receiver.accepted[0].json["detail"]
    assert "Reason:" not in str(stack.card(message_id))


async def test_a_reason_longer_than_the_form_allows_is_refused_by_lark_and_nothing_changes(
    make_stack: StackFactory, receiver: Receiver
) -> None:
    stack = await make_stack("ws")
    view, message_id, _ = await routed_offer(stack, receiver, "too-long")
    status, refused = await stack.control(
        "POST",
        f"/messages/{message_id}/click",
        {"operator": "ou_bob", "button": "reject", "form": {"reason": "x" * 301}},
    )
    assert status == 422 and refused["error"]["code"] == "value_too_long"
    op = await stack.store.get(view["id"])
    assert op is not None and op.state is State.AWAITING_CONFIRMATION


async def test_reject_without_reason_keeps_none_even_if_something_was_typed(
    make_stack: StackFactory, receiver: Receiver
) -> None:
    stack = await make_stack("ws")
    view, message_id, _ = await routed_offer(stack, receiver, "on-purpose")
    reply = await stack.click(
        message_id, "ou_bob", "reject_no_reason", form={"reason": "half a thought"}
    )
    assert reply["toast"]["type"] == "success"
    op = await stack.store.get(view["id"])
    assert op is not None and op.state is State.REJECTED and op.decision_reason is None
    await eventually(lambda: bool(receiver.accepted), deadline_s=30)
    assert "reason" not in receiver.accepted[0].json["detail"]
