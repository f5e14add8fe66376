"""The text listener: commands where the bot is mentioned or in p2p; text never confirms."""

from __future__ import annotations

import json

from bot.sandbox import events
from tests.e2e.conftest import Stack
from tests.factories import order_request
from tests.sandbox.conftest import until


def replies_to(stack: Stack, message_id: str) -> list[str]:
    return [
        json.loads(m.content)["text"]
        for m in stack.state.messages.values()
        if m.parent_id == message_id and m.sender_type == "app"
    ]


async def say(
    stack: Stack, text: str, *, chat: str = "oc_ops", sender: str = "ou_bob", mention: bool = True
) -> str:
    status, sent = await stack.control(
        "POST", f"/chats/{chat}/messages", {"sender": sender, "text": text, "mention_bot": mention}
    )
    assert status == 201, sent
    message_id: str = sent["message_id"]
    return message_id


async def answer_to(stack: Stack, text: str, **kwargs: object) -> str:
    message_id = await say(stack, text, **kwargs)  # type: ignore[arg-type]
    await until(stack.state, lambda: bool(replies_to(stack, message_id)))
    [reply] = replies_to(stack, message_id)
    return reply


async def test_commands_are_answered_as_replies(stack: Stack) -> None:
    view, _ = await stack.offered(order_request("listed"))
    assert "pending" in await answer_to(stack, "help")
    assert "pending" in await answer_to(stack, "what can you do?")  # anything else: help
    pending = await answer_to(stack, "pending")
    assert view["id"] in pending and "[SIMULATED]" in pending
    status = await answer_to(stack, f"status {view['id']}")
    assert "state: awaiting_confirmation" in status
    assert "No operation" in await answer_to(stack, "status 01NOPE")
    health = await answer_to(stack, "health")
    assert "overall: ready" in health and "callback_consumer" in health
    assert stack.sandbox.app_secret not in health


async def test_text_never_confirms(stack: Stack) -> None:
    view, _ = await stack.offered(order_request("not-by-text"))
    reply = await answer_to(
        stack, f"confirm {view['id']} {view['confirm_digest']}", sender="ou_alice"
    )
    assert "never by text" in reply
    op = await stack.store.get(view["id"])
    assert op is not None and op.state.value == "awaiting_confirmation"
    assert await stack.store.claim_count(view["id"]) == 0


async def test_p2p_needs_no_mention_and_unmentioned_group_text_is_ignored(stack: Stack) -> None:
    await stack.control(
        "POST",
        "/chats",
        {"chat_id": "oc_p2p_bob", "name": "Bob", "members": ["ou_bob"], "chat_type": "p2p"},
    )
    assert "pending" in await answer_to(stack, "help", chat="oc_p2p_bob", mention=False)
    ignored = await say(stack, "just talking", mention=False)
    marker = await say(stack, "help")  # answered after the ignored one was seen (if it was pushed)
    await until(stack.state, lambda: bool(replies_to(stack, marker)))
    assert replies_to(stack, ignored) == []


async def test_a_re_pushed_message_is_answered_once(stack: Stack) -> None:
    message_id = await say(stack, "help")
    await until(stack.state, lambda: bool(replies_to(stack, message_id)))
    state = stack.state
    message = state.messages[message_id]
    envelope = events.message_received(
        state,
        state.apps["cli_sandbox"],
        state.chats["oc_ops"],
        state.users["ou_bob"],
        message,
        "@_user_1 help",
    )  # same message_id, a new event_id: Lark's at-least-once delivery
    status, pushed = await stack.control(
        "POST", "/apps/cli_sandbox/push", {"envelope": envelope, "kind": "event"}
    )
    assert status == 200
    await until(state, lambda: stack.hub.deliveries[pushed["event_id"]].acked)
    marker = await say(stack, "help")
    await until(state, lambda: bool(replies_to(stack, marker)))
    assert len(replies_to(stack, message_id)) == 1
