"""At a phone's width (390 px) the order card's and the message card's buttons are whole, in
English and in Chinese: their rows flow (column_set flex_mode "flow", as Lark documents it: a
column that does not fit goes to the next line) instead of being squeezed until "Request
changes" reads "Request c…". Measured in headless Chromium on the sandbox's chat view: no
sideways scrolling, and no button whose text is wider than the button.

The same card with Lark's default flex_mode ("none": columns squeezed in proportion) is cut
there, which is what the newcomer saw: the measurement catches it.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from cards.render import render_card
from larksandbox import DEFAULT_APP_ID
from tests.support.browser import ARTIFACTS, UI_TIMEOUT_MS, http, watch_console
from tests.support.card_gallery import gallery
from tests.support.ui_sandbox import send_card

NOW = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)
PHONE = {"width": 390, "height": 844}
# every card button whose text does not fit it (the browser cuts it with an ellipsis)
CUT = """(card) => [...card.querySelectorAll('button.card-btn')]
  .filter((b) => b.scrollWidth > b.clientWidth + 0.5)
  .map((b) => b.textContent)"""
BUTTONS = "(card) => [...card.querySelectorAll('button.card-btn')].map((b) => b.textContent)"


def squeezed(card: dict[str, Any]) -> dict[str, Any]:
    """The card as it was: its button rows at Lark's default flex_mode (none)."""
    old = copy.deepcopy(card)
    for form in (e for e in old["body"]["elements"] if e.get("tag") == "form"):
        for row in form["elements"]:
            row.pop("flex_mode", None)
    return old


def open_chat(page: Page, sandbox: str, locale: str) -> None:
    page.goto(f"{sandbox}/sandbox")
    expect(page.locator("#live")).to_have_attribute("data-state", "live", timeout=UI_TIMEOUT_MS)
    page.locator("#chat-select").select_option("oc_ops")
    page.locator("#locale").select_option(locale)


@pytest.mark.parametrize("locale", ["en_us", "zh_cn"])
def test_no_button_is_cut_at_phone_width(
    sandbox_process: str, browser: Browser, locale: str
) -> None:
    status, apps = http("GET", f"{sandbox_process}/sandbox/api/apps")
    assert status == 200, apps
    app = next(a for a in apps["items"] if a["app_id"] == DEFAULT_APP_ID)
    views = gallery()
    cards = {
        name: render_card(views[name], now=NOW)
        for name in ("order-to-confirm", "message-to-approve")
    }
    sent = {name: send_card(sandbox_process, app, card) for name, card in cards.items()}
    control = send_card(sandbox_process, app, squeezed(cards["message-to-approve"]))

    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    errors = watch_console(page)
    open_chat(page, sandbox_process, locale)
    for name, message_id in sent.items():
        card = page.locator(f'#messages [data-message-id="{message_id}"] .card')
        card.scroll_into_view_if_needed(timeout=UI_TIMEOUT_MS)
        shown = card.evaluate(BUTTONS)
        assert len(shown) >= 3, (name, shown)  # Confirm, and the reject form's buttons
        assert card.evaluate(CUT) == [], (name, locale)
        card.screenshot(path=str(ARTIFACTS / f"card-buttons-{name}-{locale}.png"))
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    messages = page.locator("#messages")
    assert messages.evaluate("(m) => m.scrollWidth <= m.clientWidth"), "sideways scrolling"

    # the control: Lark's default squeezes the same row until its words are cut
    old = page.locator(f'#messages [data-message-id="{control}"] .card')
    old.scroll_into_view_if_needed(timeout=UI_TIMEOUT_MS)
    assert old.evaluate(CUT) != [], "the squeezed row should be cut: the measure measures"
    assert errors == [], errors
    context.close()
