"""What people type reaches Lark as text, never markup (issue 30, item 4; the finding
"Markup from people reaches Lark"), through the real bot, the sandbox and the unmodified SDK,
on both backends.

The attacks as the outside test made them: a reject reason and a request-changes note
carrying `<at user_id="all">` (which would mention the proposer's whole chat) and a link
that shows a label instead of its address; `status` with a link, a right-to-left override
and 5,000 characters. Whether Lark would make a mention or a link of a message is the
sandbox's reading of it (larksandbox/textmarkup.py), the way Lark parses text content.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.factories import message_request, order_request
from tests.support.proposer_routes import conversation, with_routes
from tests.support.stack import Stack, StackFactory
from tests.support.waiting import eventually

EVERYONE = '<at user_id="all"></at>'
LINK = "[the invoice](https://evil.example/pay)"
RLO = "\u202e"


async def reading_of_replies(stack: Stack, parent_id: str) -> list[dict[str, Any]]:
    """The app's replies under `parent_id`, each as Lark shows it (text, mentions, links)."""
    found = []
    for message in list(stack.state.messages.values()):
        if message.parent_id == parent_id and message.sender_type == "app":
            status, view = await stack.control("GET", f"/messages/{message.message_id}")
            assert status == 200, view
            found.append(view["text_reading"])
    return found


async def one_reply(stack: Stack, parent_id: str) -> dict[str, Any]:
    await eventually(
        lambda: any(m.parent_id == parent_id for m in stack.state.messages.values()),
        woken_by=stack.state,
        deadline_s=30,
    )
    [reading] = await reading_of_replies(stack, parent_id)
    return reading


async def test_a_reject_reason_reaches_the_proposers_chat_as_text_not_a_mention(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    thread = await conversation(stack)
    _, card = await stack.offered(with_routes(order_request(), conversation_id=thread))
    typed = f"{EVERYONE} please read {LINK}"
    answer = await stack.click(card, "ou_bob", "reject", form={"reason": typed})
    assert answer["toast"]["type"] == "success", answer

    reply = await one_reply(stack, thread)
    assert reply["mentions"] == [] and reply["links"] == []  # nobody pinged, nothing hidden
    # the reason is there to read, character for character but for the disarmed brackets
    assert 'user_id="all"' in reply["shown"] and "https://evil.example/pay" in reply["shown"]
    assert "Rejected" in reply["shown"]
    # the card says the same, as plain text
    card_json = json.dumps(stack.card(card), ensure_ascii=False)
    assert EVERYONE not in card_json and 'user_id=\\"all\\"' in card_json


async def test_a_request_changes_note_reaches_the_proposers_chat_as_text(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    thread = await conversation(stack)
    _, card = await stack.offered(with_routes(message_request(), conversation_id=thread))
    note = f"{EVERYONE} {LINK} say Saturday"
    answer = await stack.click(card, "ou_bob", "request_changes", form={"reason": note})
    assert answer["toast"]["type"] == "success", answer

    reply = await one_reply(stack, thread)
    assert reply["mentions"] == [] and reply["links"] == []
    assert "say Saturday" in reply["shown"] and 'user_id="all"' in reply["shown"]


async def _status_reply(stack: Stack, argument: str) -> dict[str, Any]:
    status, sent = await stack.control(
        "POST",
        "/chats/oc_ops/messages",
        {"sender": "ou_bob", "text": f"status {argument}", "mention_bot": True},
    )
    assert status == 201, sent
    return await one_reply(stack, sent["message_id"])


async def test_status_never_echoes_markup_bidi_or_length(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack("ws")
    for argument in (
        # one word each (more words get the help text): a link, an override, 5,000 characters
        f"{LINK.replace(' ', '_')}{RLO}{'A' * 5000}",
        "<b>URGENT</b><i>pay</i>",
        f"{EVERYONE.replace(' ', '')}",  # no space: still one word, not a mention
    ):
        reply = await _status_reply(stack, argument)
        assert reply["mentions"] == [] and reply["links"] == [], argument
        shown = reply["shown"]
        assert RLO not in shown and "evil.example" not in shown and "URGENT" not in shown
        assert len(shown) < 200, len(shown)
        assert "not an operation id" in shown


async def test_status_still_answers_an_operation_id_in_either_case(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    view, _ = await stack.offered(order_request())
    for argument in (view["id"], view["id"].lower()):
        reply = await _status_reply(stack, argument)
        assert reply["shown"].startswith(f"{view['id']}: BUY"), reply
