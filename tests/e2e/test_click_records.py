"""Clicks the store cannot keep as sent are still refused and on record; secrets never are.

- An envelope with a float, deep nesting, a NUL or over-long ids is answered with the
  malformed refusal (never "busy") and recorded with bounded, truncated fields; nothing
  else is stored (no inbox entry), nothing claimed.
- A valid click with a long event id (longer than the inbox key column) is claimed
  normally, and a replay of it gets its first answer.
- The stored envelope of a webhook click and of a webhook text event holds neither the
  verification token nor the card's update token.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select

from bot.ingress.callbacks import INBOX_KIND
from bot.ingress.envelope_shape import MAX_ID_CHARS
from bot.ingress.text import INBOX_KIND as TEXT_KIND
from cards.strings import REFUSALS
from kernel.reasons import Reason
from store import ANSWERED, AuditRow, ConfirmationRow, Inbox, InboxRow, State, stored_key
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory, button_value, envelope_for, push
from tests.support.waiting import eventually


def deep(depth: int) -> Any:
    node: Any = "leaf"
    for _ in range(depth):
        node = [node]
    return node


Change = Callable[[dict[str, Any]], None]
UNSTORABLE: list[Any] = [
    pytest.param(lambda e: e["event"]["action"]["value"].update(v=1.5), id="float-in-value"),
    pytest.param(lambda e: e["header"].update(create_time=1.5e9), id="float-in-header"),
    pytest.param(lambda e: e["event"]["action"].update(form_value=deep(500)), id="deep"),
    pytest.param(
        lambda e: e["event"]["operator"].update(open_id="ou_" + "x" * 5000), id="long-open-id"
    ),
    pytest.param(
        lambda e: e["event"]["context"].update(open_message_id="om_" + "m" * 5000),
        id="long-message-id",
    ),
    pytest.param(lambda e: e["header"].update(event_id="e" * 5000), id="long-event-id"),
    pytest.param(lambda e: e["event"]["context"].update(open_chat_id="oc_ops\x00"), id="nul"),
]


@pytest.mark.parametrize("change", UNSTORABLE)
async def test_an_unstorable_click_is_refused_as_malformed_and_recorded_bounded(
    stack: Stack, change: Change
) -> None:
    view, message_id = await stack.offered(order_request())
    envelope = envelope_for(stack, message_id, "ou_alice", button_value(stack, message_id))
    change(envelope)
    reply = await push(stack, envelope)

    assert reply["status"] == "answered", reply
    toast = reply["answer"]["toast"]
    assert toast["type"] == "error"
    assert toast["content"] == REFUSALS[Reason.MALFORMED_ENVELOPE]["en"], toast  # not "busy"
    [record] = await stack.store.confirmations(view["id"])
    assert not record.accepted and record.reason_code == Reason.MALFORMED_ENVELOPE.value
    for value in (record.operator_open_id, record.chat_id, record.message_id, record.event_id):
        assert value is not None and len(value) <= 128 and "\x00" not in value
    assert await Inbox(stack.store).count(INBOX_KIND) == 0  # nothing else stored
    assert await stack.store.claim_count(view["id"]) == 0
    op = await stack.store.get(view["id"])
    assert op is not None and op.state is State.AWAITING_CONFIRMATION


async def test_a_valid_click_with_a_long_event_id_is_claimed_and_replays_its_answer(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    view, message_id = await stack.offered(order_request())
    envelope = envelope_for(stack, message_id, "ou_alice", button_value(stack, message_id))
    long_id = "ev" + "0123456789abcdef" * 15  # 242 characters: longer than the inbox key
    assert 128 < len(long_id) <= MAX_ID_CHARS
    envelope["header"]["event_id"] = long_id

    first = await push(stack, envelope)
    assert first["answer"]["toast"]["type"] == "success", first
    assert await stack.store.claim_count(view["id"]) == 1
    [record] = await stack.store.confirmations(view["id"])
    assert record.accepted and record.event_id == stored_key(long_id)

    inbox = Inbox(stack.store)

    async def answer_stored() -> bool:
        entry = await inbox.get(INBOX_KIND, long_id)
        return entry is not None and entry.status == ANSWERED

    await eventually(answer_stored)
    again = await push(stack, envelope)  # Lark re-sends the same event
    assert again["answer"]["toast"] == first["answer"]["toast"]
    assert len(await stack.store.confirmations(view["id"])) == 1
    assert await stack.store.claim_count(view["id"]) == 1


async def test_stored_envelopes_of_a_webhook_click_and_event_hold_no_token(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("webhook")
    token = stack.sandbox.verification_token
    view, message_id = await stack.offered(order_request())
    reply = await stack.click(message_id, "ou_alice")
    assert reply["toast"]["type"] == "success" and reply["transport"] == "webhook", reply
    status, sent = await stack.control(
        "POST",
        "/chats/oc_ops/messages",
        {"sender": "ou_bob", "text": "help", "mention_bot": True},
    )
    assert status == 201, sent
    inbox = Inbox(stack.store)

    async def both_answered() -> bool:
        click = await inbox.get(INBOX_KIND, reply["event_id"])
        text = await inbox.get(TEXT_KIND, sent["message_id"])
        return all(entry is not None and entry.status == ANSWERED for entry in (click, text))

    await eventually(both_answered)
    async with stack.store.read() as conn:
        rows = {
            table.name: (await conn.execute(select(table))).all()
            for table in (InboxRow.__table__, ConfirmationRow.__table__, AuditRow.__table__)
        }
    assert len(rows["inbox"]) == 2 and rows["confirmations"]
    for table, found in rows.items():
        for row in found:
            assert token not in json.dumps([str(value) for value in row]), table
    for row in rows["inbox"]:
        payload = json.loads(row.payload)
        assert "token" not in payload and "encrypt" not in payload
        assert "token" not in payload["header"] and "token" not in payload["event"]
    assert view["id"] in {row.operation_id for row in rows["confirmations"]}
