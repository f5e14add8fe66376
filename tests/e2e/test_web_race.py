"""Bob confirms on the card while Alice confirms on the web, at the same moment, round after
round and in both orders: one claim and one execution each time, and the loser is told on its
own surface (the card's error toast, the page's message). Counts, never durations: whichever
write the database takes first wins, and the other is refused `already_claimed`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cards.strings import REFUSALS
from kernel.reasons import Reason
from store import ExecutionLedger
from tests.support.factories import order_request
from tests.support.signin import Answer, Browser
from tests.support.stack import Stack, StackFactory, settled
from tests.support.web_decide import flash, forms, post, signed_in

ROUNDS = 20
LOST = REFUSALS[Reason.ALREADY_CLAIMED]["en"]


async def one_round(stack: Stack, alice: Browser, n: int, card_first: bool) -> tuple[str, str]:
    """(operation id, who won: "card" or "web")."""
    view, message_id = await stack.offered(order_request(f"race-{card_first}-{n}"))
    form = forms((await alice.get(f"/ops/{view['id']}")).html)["confirm"]
    card = stack.click(message_id, "ou_bob")
    web = post(alice, form["_to"], form)
    results: list[Any] = list(await asyncio.gather(*((card, web) if card_first else (web, card))))
    reply, answer = results if card_first else results[::-1]
    assert isinstance(answer, Answer) and answer.status == 303, answer.html
    page = await alice.get(answer.location)
    card_won = reply["toast"]["type"] == "success"
    web_won = flash(page.html) == ("tone-green", "")
    assert card_won != web_won, (reply, flash(page.html))
    if card_won:
        assert flash(page.html) == ("tone-red", Reason.ALREADY_CLAIMED.value)
        assert LOST in page.html
    else:
        assert reply["toast"]["type"] == "error" and reply["toast"]["content"] == LOST, reply
    assert await stack.store.claim_count(view["id"]) == 1
    return view["id"], "card" if card_won else "web"


@pytest.mark.parametrize("card_first", [True, False], ids=["card-first", "web-first"])
async def test_a_card_click_and_a_web_confirm_at_once_claim_once(
    make_stack: StackFactory, card_first: bool
) -> None:
    stack: Stack = await make_stack("ws", web={})
    winners: dict[str, str] = {}
    async with signed_in(stack, "ou_alice") as alice:
        for n in range(ROUNDS):
            operation_id, winner = await one_round(stack, alice, n, card_first)
            winners[operation_id] = winner
    ledger = ExecutionLedger(stack.store)
    for operation_id, winner in winners.items():
        done = await settled(stack, operation_id, "filled")  # executed, once: one attempt
        assert done["decision"]["entry"] == ("lark" if winner == "card" else "web")
        assert await ledger.attempt(operation_id) is not None
        assert await stack.store.claim_count(operation_id) == 1
        accepted = [c for c in await stack.store.confirmations(operation_id) if c.accepted]
        assert len(accepted) == 1
