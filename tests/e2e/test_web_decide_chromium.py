"""The web entry in headless Chromium against the in-process bot, on SQLite and PostgreSQL
(issue 15's acceptance): Alice signs in on the sandbox's authorize page and confirms on
/ops/{id}; the card in the sandbox says "on the web" and then the fill. Mallory, signed in
but no operator, sees the page and no buttons. When Bob's card click has already claimed,
Alice's Confirm on the page she had open is told so on that page."""

from __future__ import annotations

from playwright.async_api import expect

from cards.strings import REFUSALS
from kernel.reasons import Reason
from tests.support.browser import ARTIFACTS, UI_TIMEOUT_MS
from tests.support.dashboard import chromium
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory, card_says, settled
from tests.support.web_chromium import CONFIRMED_ON_THE_WEB, PEOPLE, card_shown, signed_in_page


async def test_alice_confirms_in_chromium_and_the_card_says_web_then_filled(
    make_stack: StackFactory, backend_name: str
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    view, message_id = await stack.offered(order_request("chromium-web-confirm"))
    await card_shown(stack, view["id"])
    async with chromium() as browser:
        mallory = await signed_in_page(browser, stack, "ou_mallory")
        await mallory.goto(f"{stack.bot_url}/ops/{view['id']}")
        await expect(mallory.locator("#lines")).to_be_visible()
        await expect(mallory.locator("#confirm")).to_have_count(0)
        await expect(mallory.locator("#reject")).to_have_count(0)

        alice = await signed_in_page(browser, stack, "ou_alice")
        await alice.goto(f"{stack.bot_url}/ops/{view['id']}")
        digest = alice.locator("#decide-digest")
        await expect(digest).to_contain_text(view["confirm_digest"][:12])
        await alice.locator("#confirm").click()
        await expect(alice.locator("#flash")).to_have_text("Confirmed", timeout=UI_TIMEOUT_MS)
        await expect(alice.locator("#confirm")).to_have_count(0)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / f"web-decide-chromium-{backend_name}.png"
        await alice.screenshot(path=str(shot), full_page=True)
    await card_says(stack, message_id, CONFIRMED_ON_THE_WEB)
    done = await settled(stack, view["id"], "filled")
    assert (done["decision"]["by"], done["decision"]["entry"]) == ("ou_alice", "web")
    assert done["approval"]["confirmed_by"] == ["ou_alice"]  # the API's view: one claim
    await card_says(stack, message_id, "Filled")
    # From the first patch after her decision on, the card names Alice on the web: the
    # Confirmed card, or (when the fill came before the card worker's patch) the Filled card,
    # which keeps that line under its Filled header. Filled never shows without it.
    shown = [revision.content for revision in stack.state.messages[message_id].history]
    confirmed = [n for n, card in enumerate(shown) if CONFIRMED_ON_THE_WEB in card]
    filled = [n for n, card in enumerate(shown) if "Filled" in card]
    assert confirmed and filled and confirmed[0] <= filled[0], shown
    assert set(filled) <= set(confirmed) and confirmed == list(range(confirmed[0], len(shown)))
    assert await stack.store.claim_count(view["id"]) == 1


async def test_a_confirm_after_a_card_claim_is_told_on_the_page_and_changes_nothing(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    view, message_id = await stack.offered(order_request("chromium-web-loses"))
    await card_shown(stack, view["id"])
    async with chromium() as browser:
        # the page's long poll would reload it once Bob's click lands: hold it still
        alice = await signed_in_page(browser, stack, "ou_alice", held_still=True)
        await alice.goto(f"{stack.bot_url}/ops/{view['id']}")
        await expect(alice.locator("#confirm")).to_be_visible()
        reply = await stack.click(message_id, "ou_bob")
        assert reply["toast"]["type"] == "success", reply
        await alice.locator("#confirm").click()
        flash = alice.locator("#flash")
        await expect(flash).to_have_text(
            REFUSALS[Reason.ALREADY_CLAIMED]["en"], timeout=UI_TIMEOUT_MS
        )
        assert await flash.get_attribute("data-reason") == Reason.ALREADY_CLAIMED.value
    assert await stack.store.claim_count(view["id"]) == 1
    [bob, refused] = await stack.store.confirmations(view["id"])
    assert (bob.operator_open_id, bob.entry, bob.accepted) == ("ou_bob", "lark", True)
    assert (refused.operator_open_id, refused.entry, refused.reason_code) == (
        "ou_alice",
        "web",
        Reason.ALREADY_CLAIMED.value,
    )
