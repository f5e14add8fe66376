"""`payload.reply_to` is honoured (issue 30, item 6), through the sandbox and the unmodified
SDK: the approved text goes out as Lark's reply to that message in the destination's chat,
with the operation's client id as the reply's idempotency uuid; an unknown reply is
reconciled with the same uuid (posted once); and a reply_to that Lark places in any other
chat is refused before anything is sent, since a reply lands in its parent's chat. Both
backends."""

from __future__ import annotations

from typing import Any

from tests.support.factories import message_request
from tests.support.stack import Stack, StackFactory, settled
from tests.support.waiting import eventually
from workers.domains.execution import client_id_for

ANSWER = "Delivery is on Friday, dock 3."


async def written_in(stack: Stack, chat_id: str, text: str) -> str:
    """A person writes `text` in `chat_id`; its message id."""
    status, sent = await stack.control(
        "POST", f"/chats/{chat_id}/messages", {"sender": "ou_alice", "text": text}
    )
    assert status == 201, sent
    message_id: str = sent["message_id"]
    return message_id


def replying(request_id: str, reply_to: str) -> dict[str, Any]:
    body = message_request(request_id)
    body["payload"].update(reply_to=reply_to, text=ANSWER)
    return body


def sent_by_the_bot(stack: Stack, chat_id: str) -> list[Any]:
    return [
        m
        for m in stack.state.messages.values()
        if m.chat_id == chat_id and m.sender_type == "app" and m.msg_type == "text"
    ]


async def test_the_draft_goes_out_as_a_reply_to_that_message(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack("ws")
    question = await written_in(stack, "oc_acme", "When is the delivery?")
    view, card = await stack.offered(replying("reply-1", question))
    await stack.click(card, "ou_alice")
    sent = await settled(stack, view["id"], "sent")

    [posted] = sent_by_the_bot(stack, "oc_acme")
    assert (posted.parent_id, posted.uuid) == (question, client_id_for(view["id"]))
    assert ANSWER in posted.content
    assert sent["outcome"]["detail"]["message_id"] == posted.message_id
    assert sent["outcome"]["detail"]["reply_to"] == question


async def test_an_unknown_reply_is_reconciled_with_the_same_uuid_and_posts_once(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    question = await written_in(stack, "oc_acme", "When is the delivery?")
    view, card = await stack.offered(replying("reply-unknown", question))
    status, _ = await stack.control("POST", "/faults", {"lose_next_create_answers": 1})
    assert status == 200
    await stack.click(card, "ou_alice")
    await eventually(lambda: len(sent_by_the_bot(stack, "oc_acme")) == 1, woken_by=stack.state)
    status, _ = await stack.control("POST", "/faults", {"latency_ms": 3000})  # > 2 s timeout
    assert status == 200
    await settled(stack, view["id"], "unknown")
    status, _ = await stack.control("POST", "/faults", {"latency_ms": 0})
    assert status == 200

    reconciled = await settled(stack, view["id"], "sent")
    assert [(o["stage"], o["status"]) for o in reconciled["outcomes"]] == [
        ("initial", "unknown"),
        ("reconciled", "sent"),
    ]
    [posted] = sent_by_the_bot(stack, "oc_acme")  # the re-sent reply was deduplicated
    assert (posted.parent_id, posted.uuid) == (question, client_id_for(view["id"]))
    assert reconciled["outcome"]["detail"]["message_id"] == posted.message_id


async def test_a_reply_to_a_message_in_another_chat_is_refused_and_nothing_is_sent(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    elsewhere = await written_in(stack, "oc_other", "an internal note")
    view, card = await stack.offered(replying("reply-elsewhere", elsewhere))
    await stack.click(card, "ou_alice")

    async def refused() -> bool:
        _, found = await stack.api("GET", f"/api/v1/operations/{view['id']}")
        detail = (found.get("outcome") or {}).get("detail") or {}
        return bool(detail.get("code") == "reply_to_elsewhere")

    await eventually(refused)
    assert sent_by_the_bot(stack, "oc_other") == []
    assert sent_by_the_bot(stack, "oc_acme") == []
    _, found = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert "oc_other" not in str(found["outcome"])  # where it really is is not said
