"""Issue 15's refusals as a browser meets them, in headless Chromium on SQLite and PostgreSQL:
a form replayed by the browser records one decision; the same form submitted from a page of
another origin (with Alice's cookie and CSRF token) is refused; a form left open in a tab after
signing out in another is refused; Confirm after the expiry is refused `expired`; a restart of
the bot between the sign-in and the click keeps Alice signed in and decides once, entry web.
Each refusal changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

from playwright.async_api import Page, expect

from kernel.reasons import Reason
from store import State
from tests.support.browser import UI_TIMEOUT_MS
from tests.support.dashboard import chromium
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory, card_says, settled
from tests.support.web_chromium import (
    CONFIRMED_ON_THE_WEB,
    PEOPLE,
    card_shown,
    signed_in_page,
)

# put a copy of a form (as HTML) into the page and submit it, as a page's script can
SUBMIT_COPY = """([html, action]) => {
  const box = document.createElement("div");
  box.innerHTML = html;
  document.body.appendChild(box);
  const form = box.querySelector("form");
  if (action) form.setAttribute("action", action);  // form.action is its "action" input
  form.submit();
}"""


async def confirm_form(page: Page) -> tuple[str, str]:
    """The page's Confirm form (its HTML) and the absolute URL it posts to."""
    form = page.locator("form.decide:has(#confirm)")
    html = await form.evaluate("f => f.outerHTML")
    action = await form.evaluate("f => new URL(f.getAttribute('action'), location.href).href")
    return str(html), str(action)


async def submit_copy(page: Page, html: str, action: str | None = None) -> str:
    """Submit a copy of a form from `page`; the text of the page the browser lands on."""
    async with page.expect_navigation(timeout=UI_TIMEOUT_MS):
        await page.evaluate(SUBMIT_COPY, [html, action])
    return await page.locator("body").inner_text()


async def unchanged(stack: Stack, operation_id: str) -> None:
    op = await stack.store.get(operation_id)
    assert op is not None and op.state is State.AWAITING_CONFIRMATION
    assert await stack.store.claim_count(operation_id) == 0


async def offered_on_page(
    stack: Stack, page: Page, request_id: str, **changes: int
) -> tuple[str, str]:
    """The operation's id and its card's message id, its page open in `page`."""
    view, message_id = await stack.offered(order_request(request_id, **changes))
    await card_shown(stack, view["id"])
    await page.goto(f"{stack.bot_url}/ops/{view['id']}")
    await expect(page.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    return str(view["id"]), message_id


@asynccontextmanager
async def alice_in_chromium(stack: Stack) -> AsyncIterator[Page]:
    """Alice's page, signed in; held still (its long poll would reload it after a click)."""
    async with chromium() as browser:
        yield await signed_in_page(browser, stack, "ou_alice", held_still=True)


async def test_replays_other_origins_signed_out_tabs_and_late_clicks_decide_nothing_more(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    async with alice_in_chromium(stack) as alice:
        # another origin (the sandbox's port) submits Alice's form: her cookie goes along
        # (same site, SameSite=Lax), the Origin header tells
        op_id, message_id = await offered_on_page(stack, alice, "chromium-origin")
        html, action = await confirm_form(alice)
        elsewhere = await alice.context.new_page()
        await elsewhere.goto(f"{stack.sandbox.base_url}/")
        shown = await submit_copy(elsewhere, html, action)
        assert "not posted from this dashboard" in shown and "Nothing was recorded" in shown
        await elsewhere.close()
        await unchanged(stack, op_id)

        # the browser replays the form it posted: one decision on record
        await alice.locator("#confirm").click()
        await expect(alice.locator("#flash")).to_have_text("Confirmed", timeout=UI_TIMEOUT_MS)
        await submit_copy(alice, html)
        assert await stack.store.claim_count(op_id) == 1
        [confirmation] = await stack.store.confirmations(op_id)
        assert (confirmation.operator_open_id, confirmation.entry) == ("ou_alice", "web")
        await card_says(stack, message_id, CONFIRMED_ON_THE_WEB)  # its buttons are gone

        # past the expiry, Confirm on the page she had open is refused `expired`
        expiring, _ = await offered_on_page(stack, alice, "chromium-expiry", expires_in_s=120)
        stack.clock.offset += timedelta(seconds=121)
        await alice.locator("#confirm").click()
        flash = alice.locator("#flash")
        await expect(flash).to_have_attribute("data-reason", Reason.EXPIRED.value)
        assert await stack.store.claim_count(expiring) == 0

        # signed out in another tab, the form left open in this one is refused
        stack.clock.offset = timedelta()
        open_id, _ = await offered_on_page(stack, alice, "chromium-signed-out")
        other_tab = await alice.context.new_page()
        await other_tab.goto(f"{stack.bot_url}/ops")
        await other_tab.locator("#sign-out").click()
        await expect(other_tab.locator("#sign-in")).to_be_visible(timeout=UI_TIMEOUT_MS)
        async with alice.expect_navigation(timeout=UI_TIMEOUT_MS):
            await alice.locator("#confirm").click()
        shown = await alice.locator("body").inner_text()
        assert "session has ended" in shown and "Nothing was recorded" in shown
        await unchanged(stack, open_id)


async def test_a_restart_between_sign_in_and_the_click_keeps_alice_signed_in(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    async with alice_in_chromium(stack) as alice:
        op_id, message_id = await offered_on_page(stack, alice, "chromium-restart")
        await stack.restart()  # the same store, port and sandbox; a new process state
        await alice.locator("#confirm").click()  # the form the run before rendered
        await expect(alice.locator("#flash")).to_have_text("Confirmed", timeout=UI_TIMEOUT_MS)
        await expect(alice.locator("#who")).to_have_text("Alice")
    done = await settled(stack, op_id, "filled")
    assert (done["decision"]["by"], done["decision"]["entry"]) == ("ou_alice", "web")
    assert await stack.store.claim_count(op_id) == 1
    await card_says(stack, message_id, CONFIRMED_ON_THE_WEB)
    await card_says(stack, message_id, "Filled")
