"""The web decision page in Chromium, as a reviewer meets it: a browser context per language
(zh through Accept-Language, as a Chinese browser asks), sign-in from the page itself, the
order of the page's sections, whether it fits the screen, and screenshots kept.

Screenshots go to $COUNTERSIGN_SCREENSHOTS when set, else to the test's tmp_path (never into
the repository).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Browser, BrowserContext, Page, expect

from tests.support.browser import UI_TIMEOUT_MS
from tests.support.stack import Stack
from tests.support.web_chromium import PEOPLE, accept_dialogs

WIDTHS = (1280, 390)
LOCALES = {"en": "en-US", "zh": "zh-CN"}
# the page's parts, in the order a reviewer reads them
SECTIONS = ["head", "terms", "decision-panel", "confirmers", "history"]
ORDER_JS = """(ids) => [...document.querySelectorAll(ids.map(id => "#" + id).join(","))]
  .map(el => el.id)"""
# sideways scroll, and buttons whose text does not fit them
FIT_JS = """() => {
  const doc = document.scrollingElement;
  const cut = [...document.querySelectorAll("button, a.button, a.step")]
    .filter(b => b.getClientRects().length)
    .filter(b => b.scrollWidth > b.clientWidth)
    .map(b => `${b.id || b.className}: ${b.textContent} ${b.scrollWidth}>${b.clientWidth}`);
  return {scroll: doc.scrollWidth, client: doc.clientWidth, cut};
}"""


def screenshots(tmp_path: Path) -> Path:
    where = Path(os.environ.get("COUNTERSIGN_SCREENSHOTS") or tmp_path / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    return where


async def context_in(browser: Browser, lang: str, width: int = WIDTHS[0]) -> BrowserContext:
    """A browser whose language is `lang` (its Accept-Language), at `width` px."""
    return await browser.new_context(viewport={"width": width, "height": 900}, locale=LOCALES[lang])


async def sign_in_from(page: Page, stack: Stack, path: str, user: str) -> None:
    """Open `path`, press "Sign in with Lark", pick `user` on Lark's page and approve; until
    the browser is back on `path`, signed in."""
    accept_dialogs(page)
    await page.goto(f"{stack.bot_url}{path}")
    await page.locator("#sign-in").click()
    await page.locator("#user").select_option(user, timeout=UI_TIMEOUT_MS)
    await page.locator("#approve").click()
    await page.wait_for_url(
        lambda url: urlsplit(url).path == path and url.startswith(stack.bot_url),
        timeout=UI_TIMEOUT_MS,
    )
    await expect(page.locator("#who")).to_have_text(PEOPLE[user])


async def fits(page: Page) -> dict[str, Any]:
    """Nothing scrolls sideways and no button cuts its text (the measures, for the message)."""
    measured: dict[str, Any] = await page.evaluate(FIT_JS)
    assert measured["scroll"] <= measured["client"], measured
    assert measured["cut"] == [], measured
    return measured


async def sections(page: Page) -> list[str]:
    found: list[str] = await page.evaluate(ORDER_JS, SECTIONS)
    return found
