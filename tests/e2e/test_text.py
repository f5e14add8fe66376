"""The text listener: commands where the bot is mentioned or in p2p; text never confirms.

Commands are scoped: an audience's chat sees that audience's operations, an operator's p2p
chat the audiences they operate; a message destination's chat gets no answer at all, and
anywhere else (another tenant, a chat of no audience, a p2p sender who operates nothing)
one neutral line with no data.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import pytest

from bot.ingress.text import INBOX_KIND
from cards.strings import text
from larksandbox import DEFAULT_APP_ID, events
from store import Inbox
from tests.support.factories import order_request
from tests.support.stack import OPS_AUDIENCE, Stack, StackFactory
from tests.support.waiting import eventually


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
    await eventually(lambda: bool(replies_to(stack, message_id)), woken_by=stack.state)
    [reply] = replies_to(stack, message_id)
    return reply


async def test_commands_are_answered_as_replies(stack: Stack) -> None:
    view, _ = await stack.offered(order_request("listed"))
    assert "pending" in await answer_to(stack, "help")
    assert "pending" in await answer_to(stack, "what can you do?")  # anything else: help
    pending = await answer_to(stack, "pending")
    assert view["id"] in pending and "[SIMULATED]" in pending
    status = await answer_to(stack, f"status {view['id']}")
    # the card's and the dashboard's words for the state, the expiry as the card gives it
    lines = status.splitlines()
    assert (
        lines[1] == "Order to confirm"
        and lines[2].startswith("Expires at ")
        and lines[2].endswith(" UTC")
    ), lines
    assert "No operation" in await answer_to(stack, "status 01NOPE")
    health = await answer_to(stack, "health")
    assert "Overall: ready" in health and "card clicks: " in health
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
    await eventually(lambda: bool(replies_to(stack, marker)), woken_by=stack.state)
    assert replies_to(stack, ignored) == []


async def test_a_re_pushed_message_is_answered_once(stack: Stack) -> None:
    message_id = await say(stack, "help")
    await eventually(lambda: bool(replies_to(stack, message_id)), woken_by=stack.state)
    state = stack.state
    message = state.messages[message_id]
    envelope = events.message_received(
        state,
        state.apps[DEFAULT_APP_ID],
        state.chats["oc_ops"],
        state.users["ou_bob"],
        message,
        "@_user_1 help",
    )  # same message_id, a new event_id: Lark's at-least-once delivery
    status, pushed = await stack.control(
        "POST", f"/apps/{DEFAULT_APP_ID}/push", {"envelope": envelope, "kind": "event"}
    )
    assert status == 200
    await eventually(lambda: stack.hub.deliveries[pushed["event_id"]].acked, woken_by=state)
    marker = await say(stack, "help")
    await eventually(lambda: bool(replies_to(stack, marker)), woken_by=state)
    assert len(replies_to(stack, message_id)) == 1


async def test_a_message_re_pushed_while_its_reply_is_in_flight_is_tried_once(
    stack: Stack,
) -> None:
    # Lark answers the reply after 5 s; the generous app rate limit makes the sandbox note each
    # authorized call as it arrives, so "one call" is visible while it is still in flight.
    status, _ = await stack.control(
        "POST", "/faults", {"latency_ms": 5_000, "app_rate_limit_per_s": 1000}
    )
    assert status == 200
    calls = stack.state.app_call_times.setdefault(DEFAULT_APP_ID, deque())
    message_id = await say(stack, "help")
    inbox = Inbox(stack.store)

    async def reply_in_flight() -> bool:
        entry = await inbox.get(INBOX_KIND, message_id)
        return entry is not None and entry.tries == 1 and len(calls) == 1

    await eventually(reply_in_flight)  # the sandbox publishes no change for a call's arrival
    state = stack.state
    envelope = events.message_received(
        state,
        state.apps[DEFAULT_APP_ID],
        state.chats["oc_ops"],
        state.users["ou_bob"],
        state.messages[message_id],
        "@_user_1 help",
    )  # the same message again while the first answer is on its way (a second worker is free)
    status, pushed = await stack.control(
        "POST", f"/apps/{DEFAULT_APP_ID}/push", {"envelope": envelope, "kind": "event"}
    )
    assert status == 200
    await eventually(lambda: stack.hub.deliveries[pushed["event_id"]].acked, woken_by=state)
    assert not replies_to(stack, message_id)  # the push was taken in while the reply was out

    async def answered() -> bool:
        entry = await inbox.get(INBOX_KIND, message_id)
        return entry is not None and entry.answer is not None

    await eventually(answered, deadline_s=30)
    entry = await inbox.get(INBOX_KIND, message_id)
    assert entry is not None and entry.tries == 1  # one try, not one per delivery
    assert len(replies_to(stack, message_id)) == 1


# -- scope --------------------------------------------------------------------------------------

NEUTRAL = text("text.not_set_up", "en")
DESK = {"name": "desk", "chat_id": "oc_other", "operators": ["ou_alice"]}
COMMANDS = ("pending", "status {id}", "health", "help")


@pytest.fixture
async def desks(make_stack: StackFactory) -> Stack:
    """Two audiences: `ops` (oc_ops: Alice, Bob) and `desk` (oc_other: Alice alone)."""
    made: Stack = await make_stack("ws", audiences=[OPS_AUDIENCE, DESK])
    return made


async def open_p2p(stack: Stack, user: str) -> str:
    chat_id = f"oc_p2p_{user.removeprefix('ou_')}"
    status, _ = await stack.control(
        "POST", "/chats", {"chat_id": chat_id, "name": user, "members": [user], "chat_type": "p2p"}
    )
    assert status == 201
    return chat_id


def shows_nothing_of(reply: str, view: dict[str, Any]) -> bool:
    return view["id"] not in reply and view["terms"]["title"] not in reply


async def test_another_tenants_user_in_the_audience_chat_reads_nothing(stack: Stack) -> None:
    view, _ = await stack.offered(order_request())
    stack.state.chats["oc_ops"].members.append("ou_eve")  # a chat shared with an outsider
    for command in COMMANDS:
        reply = await answer_to(stack, command.format(id=view["id"]), sender="ou_eve")
        assert shows_nothing_of(reply, view), reply
        assert reply == NEUTRAL
    op = await stack.store.get(view["id"])
    assert op is not None and op.state.value == "awaiting_confirmation"
    assert await stack.store.claim_count(view["id"]) == 0


async def test_the_counterparty_chat_gets_no_answer_at_all(stack: Stack) -> None:
    view, _ = await stack.offered(order_request())
    inbox = Inbox(stack.store)
    asked = [
        await say(stack, command.format(id=view["id"]), chat="oc_acme", sender="ou_alice")
        for command in COMMANDS
    ]

    async def all_settled() -> bool:
        entries = [await inbox.get(INBOX_KIND, message_id) for message_id in asked]
        return all(e is not None and e.status == "answered" for e in entries)

    await eventually(all_settled)
    marker = await say(stack, "help")  # the listener has moved past them
    await eventually(lambda: bool(replies_to(stack, marker)), woken_by=stack.state)
    posted = [m for m in stack.state.messages.values() if m.chat_id == "oc_acme"]
    assert [m.content for m in posted if m.sender_type == "app"] == []
    for message_id in asked:  # recorded as handled, so a restart does not answer it either
        entry = await inbox.get(INBOX_KIND, message_id)
        assert entry is not None and entry.tries == 0
        assert entry.answer == {"ignored": "a message destination's chat", "signal": "acme"}
    assert not {e.key for e in await inbox.unanswered(INBOX_KIND)} & set(asked)


async def test_a_p2p_sender_who_operates_nothing_reads_nothing(stack: Stack) -> None:
    view, _ = await stack.offered(order_request())
    mallory = await open_p2p(stack, "ou_mallory")
    for command in COMMANDS:
        reply = await answer_to(
            stack, command.format(id=view["id"]), chat=mallory, sender="ou_mallory", mention=False
        )
        assert shows_nothing_of(reply, view), reply
        assert reply == NEUTRAL
    bob = await open_p2p(stack, "ou_bob")  # an operator of `ops` still reads its operations
    assert view["id"] in await answer_to(stack, "pending", chat=bob, sender="ou_bob", mention=False)


async def test_a_chat_of_no_audience_reads_nothing(stack: Stack) -> None:
    view, _ = await stack.offered(order_request())
    for command in COMMANDS:  # oc_other is no audience's chat here; Alice operates `ops`
        reply = await answer_to(
            stack, command.format(id=view["id"]), chat="oc_other", sender="ou_alice"
        )
        assert shows_nothing_of(reply, view), reply
        assert reply == NEUTRAL


async def test_each_audience_sees_only_its_own_operations(desks: Stack) -> None:
    ops, _ = await desks.offered(order_request())
    desk, _ = await desks.offered(order_request(audience="desk"))

    in_ops = await answer_to(desks, "pending")
    assert ops["id"] in in_ops and desk["id"] not in in_ops
    in_desk = await answer_to(desks, "pending", chat="oc_other", sender="ou_mallory")
    assert desk["id"] in in_desk and ops["id"] not in in_desk

    # in p2p: the audiences the sender operates
    bob = await answer_to(
        desks, "pending", chat=await open_p2p(desks, "ou_bob"), sender="ou_bob", mention=False
    )
    assert ops["id"] in bob and desk["id"] not in bob
    alice = await answer_to(
        desks, "pending", chat=await open_p2p(desks, "ou_alice"), sender="ou_alice", mention=False
    )
    assert ops["id"] in alice and desk["id"] in alice


async def test_status_of_another_audiences_operation_answers_like_an_unknown_id(
    desks: Stack,
) -> None:
    ops, _ = await desks.offered(order_request())
    desk, _ = await desks.offered(order_request(audience="desk"))
    unknown = await answer_to(desks, "status 01NOPE")
    hidden = await answer_to(desks, f"status {desk['id']}")  # Bob in oc_ops: not his audience
    assert hidden == unknown.replace("01NOPE", desk["id"])
    assert "Order to confirm" in await answer_to(desks, f"status {ops['id']}")
    assert "Order to confirm" in await answer_to(  # in its own chat it is known
        desks, f"status {desk['id']}", chat="oc_other", sender="ou_mallory"
    )
