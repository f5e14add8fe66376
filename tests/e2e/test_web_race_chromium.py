"""Issue 15's race in headless Chromium: Bob clicks Confirm on the card in the sandbox while
Alice presses Confirm on /ops/{id}, at the same moment, 20 rounds in each order of starting
them. Each round: one claim, one accepted confirmation, and the loser told on its own surface
(the page's message with its reason, or the card's error toast). Afterwards every operation
was executed once: filled, and one order at the venue with one submission. Counts, never
durations: whichever write the database takes first wins."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from cards.strings import REFUSALS
from kernel.reasons import Reason
from tests.support.browser import UI_TIMEOUT_MS
from tests.support.dashboard import chromium
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory, settled
from tests.support.web_chromium import PEOPLE, card_shown, signed_in_page
from workers.domains.execution import CLIENT_ID_PREFIX, client_id_for
from workers.domains.finance.sim.venue import SimVenue

ROUNDS = 20
LOST = REFUSALS[Reason.ALREADY_CLAIMED]["en"]


@pytest.mark.parametrize("card_first", [True, False], ids=["card-first", "web-first"])
async def test_bob_on_the_card_and_alice_in_chromium_at_once_claim_and_execute_once(
    make_stack: StackFactory, tmp_path: Path, card_first: bool
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    offered = [
        await stack.offered(order_request(f"chromium-race-{card_first}-{n}")) for n in range(ROUNDS)
    ]
    winners: dict[str, str] = {}
    async with chromium() as browser:
        # the page's long poll would reload it once a click lands: hold it still
        alice = await signed_in_page(browser, stack, "ou_alice", held_still=True)
        for view, message_id in offered:
            await card_shown(stack, view["id"])
            await alice.goto(f"{stack.bot_url}/ops/{view['id']}")
            confirm = alice.locator("#confirm")
            await expect(confirm).to_be_visible(timeout=UI_TIMEOUT_MS)
            card = stack.click(message_id, "ou_bob")
            web = confirm.click()
            results: list[Any] = list(
                await asyncio.gather(*((card, web) if card_first else (web, card)))
            )
            reply = results[0] if card_first else results[1]
            flash = alice.locator("#flash")
            if reply["toast"]["type"] == "success":  # the card's write came first
                await expect(flash).to_have_text(LOST, timeout=UI_TIMEOUT_MS)
                assert await flash.get_attribute("data-reason") == Reason.ALREADY_CLAIMED.value
                winners[view["id"]] = "lark"
            else:
                await expect(flash).to_have_text("Confirmed", timeout=UI_TIMEOUT_MS)
                toast = reply["toast"]  # with its i18n, which Lark's client shows by locale
                assert (toast["type"], toast["content"]) == ("error", LOST), reply
                winners[view["id"]] = "web"
            assert await stack.store.claim_count(view["id"]) == 1
    for operation_id, entry in winners.items():
        done = await settled(stack, operation_id, "filled")
        assert done["decision"]["entry"] == entry
        assert await stack.store.claim_count(operation_id) == 1
        confirmations = await stack.store.confirmations(operation_id)
        assert sorted(c.accepted for c in confirmations) == [False, True], confirmations
    async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
        orders = await venue.orders()
    main = sorted(o.client_id for o in orders if o.client_id.startswith(CLIENT_ID_PREFIX))
    # one order per operation (its protective legs carry their own suffixes), sent once
    assert [c for c in main if ":" not in c] == sorted(client_id_for(op) for op in winners)
    assert all(order.submit_count == 1 for order in orders), orders
