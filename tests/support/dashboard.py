"""Reading the dashboard's pages in tests: an element's text, the "Needs attention" counts, the
rows of a section; and in Chromium (Playwright's async API, on the test's own loop next to the
in-process stack): a phone and a desktop page, the check that nothing is wider than the
screen, and screenshots kept as artifacts.

Screenshots go to ARTIFACTS/dashboard (tests/support/browser.py: $COUNTERSIGN_ARTIFACTS, else
test-artifacts/; the `artifacts` fixture, exposed by tests/e2e/conftest.py).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, async_playwright

from tests.support.browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

HAVE_CHROMIUM = Path(CHROMIUM).exists()
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 900}


def text_of(html: str, element_id: str) -> str:
    """The text of the element with this id (its first text run), unescaped."""
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</', html, re.S)
    assert found is not None, element_id
    return unescape(found[1])


def counts(html: str) -> dict[str, int]:
    """The "Needs attention" counts at the top of /ops, by group."""
    return {
        group: int(count) for group, count in re.findall(r'data-group="(\w+)"><b>(\d+)</b>', html)
    }


def rows(html: str, section: str) -> list[str]:
    """The operation ids listed in one section of a list page, in order."""
    found = re.search(rf'<section class="list" id="{section}".*?</section>', html, re.S)
    assert found is not None, section
    return re.findall(r'<tr data-op="(\w+)">', found[0])


@pytest.fixture
def artifacts() -> Path:
    where = ARTIFACTS / "dashboard"
    where.mkdir(parents=True, exist_ok=True)
    return where


# What overflows the screen: the document's own width, and every laid-out element whose
# box reaches past either edge. Ids, times and chips must also stay on one line.
FITS_JS = """
() => {
  const width = window.innerWidth;
  const wide = [];
  const wrapped = [];
  for (const el of document.querySelectorAll("body *")) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    if (box.right > width + 0.5 || box.left < -0.5) {
      wide.push(`${el.tagName}.${el.className}#${el.id} ${Math.round(box.left)}..${Math.round(box.right)}`);
    }
    if (el.matches(".id, time, .chip:not(.headline)")) {
      const css = getComputedStyle(el);
      const size = parseFloat(css.fontSize);
      const line = css.lineHeight === "normal" ? size * 1.25 : parseFloat(css.lineHeight);
      const edges = ["paddingTop", "paddingBottom", "borderTopWidth", "borderBottomWidth"]
        .reduce((sum, name) => sum + parseFloat(css[name]), 0);
      if (box.height > line * 1.5 + edges) wrapped.push(`${el.tagName}.${el.className}: ${el.textContent}`);
    }
  }
  return {scroll: document.documentElement.scrollWidth, width, wide, wrapped};
}
"""


@dataclass
class Screens:
    """One phone page and one desktop page in one browser; each look visits a path on both."""

    base_url: str
    pages: dict[str, Page]
    artifacts: Path
    shots: int = 0

    async def look(self, path: str, name: str) -> dict[str, str]:
        """Visit `path` at both widths, check the layout, keep a screenshot of each; the
        page's headline (or title) per width."""
        said = {}
        for width, page in self.pages.items():
            response = await page.goto(self.base_url + path)
            assert response is not None and response.status in (200, 404), (path, width)
            layout: dict[str, Any] = await page.evaluate(FITS_JS)
            assert layout["scroll"] <= layout["width"], (path, width, layout)
            assert layout["wide"] == [], (path, width, layout["wide"])
            assert layout["wrapped"] == [], (path, width, layout["wrapped"])
            self.shots += 1
            await page.screenshot(path=str(self.artifacts / f"{name}-{width}.png"), full_page=True)
            headline = page.locator("#headline")
            said[width] = await (
                headline if await headline.count() else page.locator("h1")
            ).inner_text()
        return said


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Headless Chromium through Playwright's async API (skips where there is none)."""
    if not HAVE_CHROMIUM:
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def screens(base_url: str, artifacts: Path) -> AsyncIterator[Screens]:
    """Chromium with a phone page (390 px, touch) and a desktop page (1400 px). Their long
    polls are refused: a page reloading itself mid-check would measure a page being built."""
    async with chromium() as browser:
        phone = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
        desktop = await browser.new_context(viewport=DESKTOP)
        pages = {"phone": await phone.new_page(), "desktop": await desktop.new_page()}
        for page in pages.values():
            await page.route("**/ops/changes*", lambda route: route.abort())
        yield Screens(base_url, pages, artifacts)
