"""A message draft's internal receipts (issue 17, item 2): one line in the destination's
ops chat when it is filed, and a footer (who approved it, the decision id, the draft's
hash) once it is sent; never a word of either to the counterparty, whose chat gets the
approved text byte for byte. A destination without an ops chat hears nothing internal:
the draft is on the dashboard and the API only. Both backends."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from store import DeliveryLedger, claim_id
from tests.support.factories import message_request
from tests.support.stack import ACME_DESTINATION, Stack, StackFactory, settled
from tests.support.waiting import eventually

APPROVED_TEXT = "Hello Acme,\ndelivery on Friday — 10 pallets, dock 3."


def texts_in(stack: Stack, chat_id: str) -> list[str]:
    return [
        json.loads(m.content)["text"]
        for m in stack.state.messages.values()
        if m.chat_id == chat_id and m.msg_type == "text"
    ]


def draft(request_id: str) -> dict[str, Any]:
    body = message_request(request_id)
    body["payload"]["text"] = APPROVED_TEXT
    return body


async def test_the_ops_chat_hears_of_the_filing_and_the_send_and_the_counterparty_only_the_text(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", people={"ou_alice": "Alice Chen"})
    sha = hashlib.sha256(APPROVED_TEXT.encode()).hexdigest()
    view, message_id = await stack.offered(draft("receipt-1"))
    filed = f"Draft to acme-supplier filed for approval (P2, sha {sha[:8]}). Waiting on operator."
    await eventually(lambda: filed in texts_in(stack, "oc_ops"), woken_by=stack.state)
    assert texts_in(stack, "oc_acme") == []

    await stack.click(message_id, "ou_alice")
    sent = await settled(stack, view["id"], "sent")
    decision = await claim_id(stack.store, view["id"])
    assert decision is not None
    footer = f"approved by Alice Chen · receipt {decision} · draft sha256 {sha[:8]}"
    await eventually(
        lambda: any(footer in text for text in texts_in(stack, "oc_ops")), woken_by=stack.state
    )

    # once each, in the ops chat; the counterparty's chat holds the approved text, unaltered
    ops = texts_in(stack, "oc_ops")
    assert ops.count(filed) == 1
    [receipt] = [text for text in ops if footer in text]
    assert sent["outcome"]["detail"]["message_id"] in receipt
    [counterparty] = [m for m in stack.state.messages.values() if m.chat_id == "oc_acme"]
    assert json.loads(counterparty.content)["text"].encode() == APPROVED_TEXT.encode()
    assert sent["outcome"]["detail"]["text_sha256"] == sha

    # the filing receipt went through the outbox, once, to the ops chat
    deliveries = await DeliveryLedger(stack.store).find(operation_id=view["id"])
    assert [(d.channel, d.state) for d in deliveries] == [("ops_chat", "delivered")]


async def test_a_destination_without_an_ops_chat_files_and_sends_without_internal_lines(
    make_stack: StackFactory,
) -> None:
    quiet = {key: value for key, value in ACME_DESTINATION.items() if key != "ops_chat_id"}
    stack: Stack = await make_stack("ws", destinations=[quiet])
    view, message_id = await stack.offered(draft("receipt-quiet"))
    await stack.click(message_id, "ou_alice")
    await settled(stack, view["id"], "sent")

    assert texts_in(stack, "oc_acme") == [APPROVED_TEXT]
    assert texts_in(stack, "oc_ops") == []  # the card is there; no receipt, no footer
    assert await DeliveryLedger(stack.store).find(operation_id=view["id"]) == []
