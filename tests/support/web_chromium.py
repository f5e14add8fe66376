"""The web entry in headless Chromium against a stack: people signed in through the sandbox's
authorize page, and waiting until a card is shown (so a page opened after it stays still)."""

from __future__ import annotations

from playwright.async_api import Browser, Dialog, Page, expect

from tests.support.browser import UI_TIMEOUT_MS
from tests.support.stack import Stack
from tests.support.waiting import eventually

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_mallory": "Mallory"}
CONFIRMED_ON_THE_WEB = "Confirmed by Alice on the web at"


async def card_shown(stack: Stack, operation_id: str) -> None:
    """Until the card is marked shown: a page opened after it has nothing to reload for."""

    async def current() -> bool:
        _, view = await stack.api("GET", f"/api/v1/operations/{operation_id}")
        return bool(view["card"]["delivery"] == "current")

    await eventually(current)


def accept_dialogs(page: Page) -> list[str]:
    """The person reads the dialog a web Confirm asks and accepts it (Playwright would dismiss
    it); the messages shown, in order."""
    shown: list[str] = []

    async def accept(dialog: Dialog) -> None:
        shown.append(dialog.message)
        await dialog.accept()

    page.on("dialog", accept)
    return shown


async def signed_in_page(
    browser: Browser, stack: Stack, user: str, *, held_still: bool = False
) -> Page:
    """A page of a new browser context in which `user` signed in through Lark's page; it
    accepts the Confirm dialog (`accept_dialogs`). `held_still`: no page of the context runs
    the live long poll, so no change reloads a page under the test (a reload racing a
    `goto` aborts it). The route is set before the first page loads: one set after the
    sign-in would miss the poll that page already has in flight."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    if held_still:
        await context.route("**/ops/changes*", lambda route: route.abort())
    page = await context.new_page()
    accept_dialogs(page)
    await page.goto(f"{stack.bot_url}/ops")
    await page.locator("#sign-in").click()
    await page.locator("#user").select_option(user, timeout=UI_TIMEOUT_MS)
    await page.locator("#approve").click()
    await page.wait_for_url(f"{stack.bot_url}/ops", timeout=UI_TIMEOUT_MS)
    await expect(page.locator("#who")).to_have_text(PEOPLE[user])
    return page
