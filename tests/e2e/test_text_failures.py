"""The text listener gives up on what no try can answer (issue 30), once, with the reason.

A validly signed text event of a shape Lark never sends, pushed by the sandbox over the long
connection and the signed webhook, is recorded failed once (inbox status failed, its reason)
and logged once; Lark's re-push of it changes nothing. A reply Lark refuses for good (230001:
the message is unknown) is tried once, not max_tries times. Both backends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.ingress.text import INBOX_KIND
from larksandbox import DEFAULT_APP_ID, events
from store import FAILED, Inbox, InboxEntry
from tests.support.stack import Stack
from tests.support.waiting import eventually


def text_event(stack: Stack, message_id: str) -> dict[str, Any]:
    """Lark's im.message.receive_v1 for "@bot help" from Bob in oc_ops, as message_id."""
    state = stack.state
    sent = next(iter(state.messages.values()), None)
    assert sent is not None
    envelope = events.message_received(
        state,
        state.apps[DEFAULT_APP_ID],
        state.chats["oc_ops"],
        state.users["ou_bob"],
        sent,
        "@_user_1 help",
    )
    envelope["event"]["message"]["message_id"] = message_id
    envelope["event"]["message"]["mentions"][0]["id"]["open_id"] = state.apps[
        DEFAULT_APP_ID
    ].bot_open_id
    return envelope


async def push_event(stack: Stack, envelope: dict[str, Any]) -> None:
    status, pushed = await stack.control(
        "POST", f"/apps/{DEFAULT_APP_ID}/push", {"envelope": envelope, "kind": "event"}
    )
    assert status == 200, pushed
    await eventually(lambda: stack.hub.deliveries[pushed["event_id"]].acked, woken_by=stack.state)


async def failed_entry(stack: Stack, key: str) -> InboxEntry:
    inbox = Inbox(stack.store)

    async def failed() -> bool:
        entry = await inbox.get(INBOX_KIND, key)
        return entry is not None and entry.status == FAILED

    await eventually(failed)
    entry = await inbox.get(INBOX_KIND, key)
    assert entry is not None and entry.answer is not None
    return entry


async def answered_marker(stack: Stack) -> None:
    """A "help" said after: once it is answered, the listener went past what came before."""
    status, sent = await stack.control(
        "POST", "/chats/oc_ops/messages", {"sender": "ou_bob", "text": "help", "mention_bot": True}
    )
    assert status == 201

    def answered() -> bool:
        return any(m.parent_id == sent["message_id"] for m in stack.state.messages.values())

    await eventually(answered, woken_by=stack.state)


def failure(entry: InboxEntry) -> str:
    """The reason the entry was recorded failed for."""
    assert entry.answer is not None
    return str(entry.answer["failed"])


def gave_up_lines(caplog: pytest.LogCaptureFixture, key: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "countersign.text" and key in r.getMessage()
    ]


async def test_a_signed_malformed_text_event_is_recorded_failed_once_and_never_retried(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    await answered_marker(stack)  # a message to model the event on
    key = f"om_malformed_{stack.mode}"
    envelope = text_event(stack, key)
    envelope["event"]["message"]["mentions"] = ["@_user_1"]  # Lark's are objects
    await push_event(stack, envelope)

    entry = await failed_entry(stack, key)
    assert entry.tries == 0  # never tried: no try could answer it
    assert failure(entry).startswith("malformed event: event.message.mentions")

    again = json.loads(json.dumps(envelope))
    again["header"]["event_id"] = f"{envelope['header']['event_id']}-repush"
    await push_event(stack, again)  # Lark's at-least-once re-push of it
    await answered_marker(stack)
    await answered_marker(stack)
    assert await failed_entry(stack, key) == entry  # the record is as it was
    [line] = gave_up_lines(caplog, key)  # logged once, never "trying again"
    assert "for good" in line


async def test_an_unstorable_text_event_is_recorded_by_its_id_with_the_reason(
    stack: Stack,
) -> None:
    await answered_marker(stack)
    key = f"om_unstorable_{stack.mode}"
    envelope = text_event(stack, key)
    envelope["event"]["message"]["extra"] = "\x00"  # PostgreSQL stores no NUL
    await push_event(stack, envelope)
    entry = await failed_entry(stack, key)
    assert entry.answer == {
        "failed": "malformed event: a NUL or a lone surrogate at $.event.message.extra"
    }
    assert entry.payload == {"refused": failure(entry)}  # the reason, not the event


async def test_a_reply_lark_refuses_for_good_is_tried_once(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    await answered_marker(stack)
    key = f"om_unknown_to_lark_{stack.mode}"  # the reply to it gets 230001
    await push_event(stack, text_event(stack, key))
    entry = await failed_entry(stack, key)
    assert entry.tries == 1, "a terminal Lark error was tried again"
    assert "230001" in failure(entry)
    assert len(gave_up_lines(caplog, key)) == 1


async def test_a_text_event_whose_message_is_no_object_is_recorded_by_its_event_id(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    await answered_marker(stack)
    envelope = text_event(stack, "om_never_read")
    envelope["event"]["message"] = ["help"]  # no message id to keep it by: its event id
    await push_event(stack, envelope)
    key = envelope["header"]["event_id"]
    entry = await failed_entry(stack, key)
    assert entry.answer == {"failed": "malformed event: event.message is not an object"}
    await answered_marker(stack)
    assert len(gave_up_lines(caplog, key)) == 1
