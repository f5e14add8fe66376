"""Propose, see the card, click: the product's front door, in ws and in webhook mode."""

from __future__ import annotations

import json

from cards.vocabulary import term_label, term_value
from tests.support.cards import fields
from tests.support.factories import order_request
from tests.support.stack import CLAIMED_OR_AFTER, Stack


def texts(card: dict[str, object]) -> str:
    return json.dumps(card, ensure_ascii=False)


async def test_alice_confirms_and_the_card_and_api_agree(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request("happy"))
    card = stack.card(message_id)
    body = texts(card)
    grid = fields(card)
    for term in view["terms"]["terms"]:
        # as every surface writes it ("60,000"); the terms confirmed keep their digits
        assert grid[term_label(term, "en")] == term_value(term, "en"), term
    limit_price = next(t for t in view["terms"]["terms"] if t["name"] == "limit_price")
    assert (limit_price["value"], grid["Limit price"]) == ("60000", "60,000")
    assert "SIMULATED" in body and view["id"] in body and view["confirm_digest"][:12] in body
    assert "sim-venue r1" in body
    _, api_view = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert api_view["state"] == "awaiting_confirmation"
    assert api_view["card"]["message_id"] == message_id

    reply = await stack.click(message_id, "ou_alice")

    assert reply["status"] == "answered" and reply["toast"]["type"] == "success"
    assert reply["card_changed"] is True and "client_error" not in reply
    after = stack.card(message_id)
    assert '"tag": "button"' not in texts(after)
    assert "Confirmed by <at id=ou_alice></at>" in texts(after)
    # "Confirmed — executing", or already the outcome if the executor was quick
    assert after["header"]["template"] in ("wathet", "green")
    _status, api_view = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert api_view["state"] in ("claimed", "outcome_observed")  # the executor may be done
    assert api_view["decision"]["by"] == "ou_alice" and api_view["decision"]["action"] == "confirm"
    assert await stack.store.claim_count(view["id"]) == 1
    op = await stack.store.get(view["id"])
    assert op is not None and op.state in CLAIMED_OR_AFTER


async def test_bob_rejects_and_the_card_says_so(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request("reject-me"))
    reply = await stack.click(message_id, "ou_bob", "reject")
    assert reply["toast"]["type"] == "success" and reply["card_changed"]
    assert "Rejected by <at id=ou_bob></at>" in texts(stack.card(message_id))
    _, api_view = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert api_view["state"] == "rejected" and await stack.store.claim_count(view["id"]) == 0
