"""The web entry in headless Chromium against the in-process bot, on SQLite and PostgreSQL
(issue 15's acceptance): Alice signs in on the sandbox's authorize page and confirms on
/ops/{id}; the card in the sandbox says "on the web" and then the fill. Mallory, signed in
but no operator, sees the page and no buttons. When Bob's card click has already claimed,
Alice's Confirm on the page she had open is told so on that page."""

from __future__ import annotations

from playwright.async_api import Browser, Page, expect

from cards.strings import REFUSALS
from store.reasons import Reason
from tests.support.browser import ARTIFACTS, UI_TIMEOUT_MS
from tests.support.dashboard import chromium
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory, card_says, settled
from tests.support.waiting import eventually

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_mallory": "Mallory"}


async def card_shown(stack: Stack, operation_id: str) -> None:
    """Until the card is marked shown: a page opened after it has nothing to reload for."""

    async def current() -> bool:
        _, view = await stack.api("GET", f"/api/v1/operations/{operation_id}")
        return bool(view["card"]["delivery"] == "current")

    await eventually(current)


async def signed_in_page(browser: Browser, stack: Stack, user: str) -> Page:
    """A page of a new browser context in which `user` signed in through Lark's page."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    await page.goto(f"{stack.bot_url}/ops")
    await page.locator("#sign-in").click()
    await page.locator("#user").select_option(user, timeout=UI_TIMEOUT_MS)
    await page.locator("#approve").click()
    await page.wait_for_url(f"{stack.bot_url}/ops", timeout=UI_TIMEOUT_MS)
    await expect(page.locator("#who")).to_have_text(PEOPLE[user])
    return page


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
    await card_says(stack, message_id, "Confirmed by ", " on the web at")
    done = await settled(stack, view["id"], "filled")
    assert (done["decision"]["by"], done["decision"]["entry"]) == ("ou_alice", "web")
    await card_says(stack, message_id, "Filled")
    assert await stack.store.claim_count(view["id"]) == 1


async def test_a_confirm_after_a_card_claim_is_told_on_the_page_and_changes_nothing(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    view, message_id = await stack.offered(order_request("chromium-web-loses"))
    await card_shown(stack, view["id"])
    async with chromium() as browser:
        alice = await signed_in_page(browser, stack, "ou_alice")
        # the page's long poll would reload it once Bob's click lands: hold it still
        await alice.route("**/ops/changes*", lambda route: route.abort())
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
