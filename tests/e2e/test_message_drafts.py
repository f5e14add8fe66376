"""message.send drafts: re-filing for the same destination supersedes the open draft."""

from __future__ import annotations

import json

from bot.sandbox import answers
from store.lifecycle import State
from store.reasons import Reason
from tests.e2e.conftest import CLAIMED_OR_AFTER, Stack
from tests.factories import message_request
from tests.sandbox.conftest import until


async def test_re_filing_supersedes_the_open_draft_and_its_card(stack: Stack) -> None:
    first, first_card = await stack.offered(message_request("draft-1"))
    value = answers.find_button(stack.card(first_card), "confirm")
    assert value is not None and value.value is not None
    body = message_request("draft-2")
    body["payload"]["text"] = "Corrected: delivery on Saturday."
    second, second_card = await stack.offered(body)

    older = await stack.store.get(first["id"])
    assert older is not None and older.state is State.SUPERSEDED
    await until(
        stack.state,
        lambda: "Superseded by a newer draft" in stack.state.messages[first_card].content,
    )
    assert '"tag": "button"' not in json.dumps(stack.card(first_card))

    reply = await stack.click(first_card, "ou_alice", value=value.value)
    assert reply["toast"]["type"] == "error"
    refusal = await stack.stored_click(first["id"], reply["event_id"])
    assert len(await stack.store.confirmations(first["id"])) == 1
    assert refusal.reason_code == Reason.SUPERSEDED.value and not refusal.accepted

    assert second["state"] == "awaiting_confirmation"
    assert (await stack.click(second_card, "ou_alice"))["toast"]["type"] == "success"
    # the card went to the audience chat, never to the counterparty's
    assert all(m.chat_id != "oc_acme" for m in stack.state.messages.values())


async def test_a_claimed_draft_is_never_superseded(stack: Stack) -> None:
    first, first_card = await stack.offered(message_request("kept-1"))
    assert (await stack.click(first_card, "ou_bob"))["toast"]["type"] == "success"
    await stack.offered(message_request("kept-2"))
    claimed = await stack.store.get(first["id"])
    assert claimed is not None and claimed.state in CLAIMED_OR_AFTER
