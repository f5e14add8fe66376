"""Every state a card shows, as the real card JSON in the sandbox UI in headless Chromium, at
desktop (1400 px) and phone (390 px) width: the header says the state in words and changes
with it, nothing on the card runs past a phone's width, and a screenshot of each card goes
to test-artifacts/cards/.

The cards are `render_card` of the gallery's projections (tests/support/card_gallery.py),
sent through the sandbox's OpenAPI like the bot sends them; nothing here sleeps to
synchronise (Playwright's `expect` waits).
"""

from __future__ import annotations

from datetime import UTC, datetime

from playwright.sync_api import Browser, Page, expect

from cards.render import render_card
from cards.vocabulary import headline
from larksandbox import DEFAULT_APP_ID
from store import OperationView
from tests.support.browser import ARTIFACTS, UI_TIMEOUT_MS, http, watch_console
from tests.support.card_gallery import PEOPLE, gallery
from tests.support.ui_sandbox import send_card

NOW = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)
SHOTS = ARTIFACTS / "cards"
# what sticks out of a card at phone width: any element whose right edge passes the viewport
OVERFLOWING = """(card) => {
  const width = document.documentElement.clientWidth;
  return [card, ...card.querySelectorAll('*')]
    .filter((el) => el.getBoundingClientRect().right > width + 0.5)
    .map((el) => el.className || el.tagName);
}"""


def _post_gallery(sandbox: str) -> dict[str, tuple[str, OperationView]]:
    """Name -> (message id, projection), each card sent to oc_ops."""
    status, apps = http("GET", f"{sandbox}/sandbox/api/apps")
    assert status == 200, apps
    app = next(a for a in apps["items"] if a["app_id"] == DEFAULT_APP_ID)
    sent = {}
    for name, view in gallery().items():
        card = render_card(view, now=NOW, people=PEOPLE)
        sent[name] = (send_card(sandbox, app, card), view)
    return sent


def _open_chat(page: Page, sandbox: str, phone: bool) -> None:
    page.goto(f"{sandbox}/sandbox")
    expect(page.locator("#live")).to_have_attribute("data-state", "live", timeout=UI_TIMEOUT_MS)
    if phone:
        page.locator("#chat-select").select_option("oc_ops")
    else:
        page.locator('#chat-list [data-chat-id="oc_ops"]').click()


def test_every_card_state_reads_at_a_glance_on_desktop_and_phone(
    sandbox_process: str, browser: Browser
) -> None:
    sent = _post_gallery(sandbox_process)
    SHOTS.mkdir(parents=True, exist_ok=True)
    seen: dict[str, str] = {}
    for width, phone in ((1400, False), (390, True)):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        errors = watch_console(page)
        _open_chat(page, sandbox_process, phone)
        for name, (message_id, view) in sent.items():
            said = headline(view, PEOPLE)
            card = page.locator(f'#messages [data-message-id="{message_id}"] .card')
            card.scroll_into_view_if_needed(timeout=UI_TIMEOUT_MS)
            expect(card.locator(".card-title")).to_have_text(said.words("en"))
            expect(card).to_have_attribute("data-template", said.tone)
            seen[name] = said.words("en")
            if phone:
                assert card.evaluate(OVERFLOWING) == [], name
            card.screenshot(path=str(SHOTS / f"{name}-{'phone' if phone else 'desktop'}.png"))
        if phone:
            assert page.evaluate("document.documentElement.scrollWidth") <= width
        # the locale picker shows every card's header in Chinese
        page.locator("#locale").select_option("zh_cn")
        for _name, (message_id, view) in sent.items():
            title = page.locator(f'#messages [data-message-id="{message_id}"] .card .card-title')
            expect(title).to_have_text(headline(view, PEOPLE).words("zh"))
        assert errors == [], errors
        context.close()
    # the header follows the state: an order reads differently in each (a reconciled fill and
    # a straight one both read "Filled")
    orders = [words for name, words in seen.items() if name.startswith("order-")]
    assert len(set(orders)) == len(orders) - 1
    assert seen["order-to-confirm"] == "Order to confirm"
    assert seen["order-rejected"] == "Rejected by Bob: Too large before the close"
