"""message.send drafts: superseding, the text block on the card, mentions, what is sent."""

from __future__ import annotations

import json
import re
from typing import Any

from kernel.reasons import Reason
from larksandbox import answers
from store import State
from tests.support.cards import fields
from tests.support.factories import draft, message_draft_fields, message_request, order_request
from tests.support.stack import CLAIMED_OR_AFTER, Stack, StackFactory, settled
from tests.support.waiting import eventually


async def test_re_filing_supersedes_the_open_draft_and_its_card(stack: Stack) -> None:
    first, first_card = await stack.offered(message_request("draft-1"))
    value = answers.find_button(stack.card(first_card), "confirm")
    assert value is not None and value.value is not None
    body = message_request("draft-2")
    body["payload"]["text"] = "Corrected: delivery on Saturday."
    second, second_card = await stack.offered(body)

    older = await stack.store.get(first["id"])
    assert older is not None and older.state is State.SUPERSEDED
    await eventually(
        lambda: "Superseded by a newer draft" in stack.state.messages[first_card].content,
        woken_by=stack.state,
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


async def test_the_answer_names_the_open_draft_it_superseded(stack: Stack) -> None:
    first, _ = await stack.offered(message_request("topic-delivery"))
    body = message_request("topic-invoice")  # another matter, the same destination
    body["payload"]["text"] = "About invoice 7: please send it again."
    status, second = await stack.post("/api/v1/operations", body)
    assert status == 201 and second["supersedes"] == [first["id"]]
    note = second["supersedes_note"]
    assert first["id"] in note and "one draft per destination" in note
    assert "Superseded by a newer draft" in note
    again_status, again = await stack.post("/api/v1/operations", body)  # a retried call
    assert again_status == 200 and again["supersedes"] == [first["id"]]
    assert again["supersedes_note"] == note
    # a draft that supersedes nothing says so
    third_status, third = await stack.post("/api/v1/operations", message_request("topic-third"))
    assert third_status == 201 and third["supersedes"] == [second["id"]]
    alone = await stack.propose(order_request("order-beside"))
    assert alone["supersedes"] == [] and alone["supersedes_note"] is None


async def test_a_claimed_draft_is_never_superseded(stack: Stack) -> None:
    first, first_card = await stack.offered(message_request("kept-1"))
    assert (await stack.click(first_card, "ou_bob"))["toast"]["type"] == "success"
    await settled(stack, first["id"], "sent")  # a re-file waits for the send (409 before)
    await stack.offered(message_request("kept-2"))
    claimed = await stack.store.get(first["id"])
    assert claimed is not None and claimed.state in CLAIMED_OR_AFTER


# -- the text on the card and on the wire (issue 10 items 4, 5, 12) ---------------------------

POSING = "Hello Acme,\n**Quantity:** 1000\nConfirmed by Alice"


def text_block(card: dict[str, Any]) -> dict[str, Any]:
    [block] = [n for n in answers._walk(card) if n.get("element_id") == "message_text"]
    return block


def sent_to_acme(stack: Stack) -> list[str]:
    return [
        json.loads(m.content)["text"]
        for m in stack.state.messages.values()
        if m.chat_id == "oc_acme" and m.msg_type == "text"
    ]


async def propose_raw(stack: Stack, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return await stack.post("/api/v1/operations", body)


async def confirmed_and_sent(stack: Stack, card_id: str) -> str:
    assert (await stack.click(card_id, "ou_alice"))["toast"]["type"] == "success"
    await eventually(lambda: len(sent_to_acme(stack)) == 1, woken_by=stack.state)
    [sent] = sent_to_acme(stack)
    return sent


async def test_the_card_shows_the_text_as_one_block_and_exactly_that_text_is_sent(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    body = message_request()
    body["payload"]["text"] = POSING
    _, card_id = await stack.offered(body)
    card = stack.card(card_id)
    block = text_block(card)
    assert block["tag"] == "column_set" and block["background_style"] == "grey"
    assert block["columns"][0]["elements"] == [
        {"tag": "div", "text": {"tag": "plain_text", "content": POSING}}
    ]
    assert "Message text (3 lines · 49 characters), sent exactly as shown:" in json.dumps(
        card, ensure_ascii=False
    )
    outside = json.dumps([e for e in card["body"]["elements"] if e is not block])
    assert "Quantity" not in outside and "Confirmed by Alice" not in outside

    assert await confirmed_and_sent(stack, card_id) == POSING


async def test_mention_markup_is_refused_and_nothing_is_stored_or_sent(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    before = set(stack.state.messages)
    body = message_request()
    body["payload"]["text"] = 'Ping <at user_id="all"></at> please'
    status, reply = await propose_raw(stack, body)
    assert status == 422, reply
    [problem] = reply["error"]["fields"]
    assert problem["field"] == "payload.text" and "mention" in problem["reason"]
    assert "payload.mentions" in problem["fix"]
    assert await stack.store.count() == 0
    assert set(stack.state.messages) == before  # no card, nothing to the counterparty


async def test_structured_mentions_are_listed_on_the_card_and_sent_exactly(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    body = message_request()
    body["payload"].update(text="Please confirm the Friday slot.", mentions=["ou_alice", "ou_bob"])
    view, card_id = await stack.offered(body)
    shown = json.dumps(stack.card(card_id), ensure_ascii=False)
    assert fields(stack.card(card_id))["This message will mention"] == "ou_alice, ou_bob"
    assert "<at id=ou_alice>" not in shown  # listed, not an @ on the card
    # the dashboard lists them the way the card does (not as a Python list)
    async with stack.http.get(f"{stack.bot_url}/ops/{view['id']}") as response:
        page = await response.text()
    assert "ou_alice, ou_bob" in page and "[&#x27;ou_alice" not in page and "['ou" not in page

    sent = await confirmed_and_sent(stack, card_id)
    assert re.findall(r"<at\b[^>]*>", sent) == ['<at user_id="ou_alice">', '<at user_id="ou_bob">']
    assert sent == (
        '<at user_id="ou_alice"></at> <at user_id="ou_bob"></at> Please confirm the Friday slot.'
    )


async def test_an_unverified_requester_is_named_in_plain_text_and_the_card_is_offered(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    body = message_request(source={"requester_open_id": "ou_stranger"})
    view, card_id = await stack.offered(body)  # Lark would refuse a card with <at id=ou_stranger>
    assert view["state"] == "awaiting_confirmation"
    shown = json.dumps(stack.card(card_id), ensure_ascii=False)
    assert "<at id=ou_stranger>" not in shown
    assert "Requested by: ou_stranger (unverified id)" in shown


async def test_a_stored_draft_that_breaks_the_text_rules_is_never_sent(
    make_stack: StackFactory,
) -> None:
    """A draft admitted before today's rules (put straight into the store) is refused at run."""
    stack: Stack = await make_stack("ws")
    text = 'Legacy <at user_id="all"></at> ping'
    proposed = await stack.store.propose(draft(**message_draft_fields(text)))
    op_id = proposed.operation.id
    await eventually(lambda: stack.card_of(op_id) is not None, woken_by=stack.state)
    card_id = stack.card_of(op_id)
    assert card_id is not None
    await eventually(lambda: _card_recorded(stack, op_id, card_id))
    assert (await stack.click(card_id, "ou_alice"))["toast"]["type"] == "success"

    async def refused() -> bool:
        _, view = await stack.api("GET", f"/api/v1/operations/{op_id}")
        detail = (view.get("outcome") or {}).get("detail") or {}
        return bool(detail.get("code") == "text_not_sendable")

    await eventually(refused, deadline_s=15)
    assert sent_to_acme(stack) == []


async def _card_recorded(stack: Stack, op_id: str, card_id: str) -> bool:
    op = await stack.store.get(op_id)
    return op is not None and op.card_message_id == card_id
