"""The sandbox web UI in headless Chromium: a card click round trip, live updates, phone width.

The sandbox runs as a real subprocess (`python -m bot.cli sandbox`); the bot side is played by
plain HTTP calls to the sandbox OpenAPI plus a webhook receiver that runs the UNMODIFIED
lark-oapi `EventDispatcherHandler` (docs/lark-reference.md §3.2) in a thread (both in
tests/support/ui_sandbox.py). Playwright's sync API drives Debian's Chromium (`apt-get install
-y chromium`); nothing here sleeps to synchronise: the browser side waits with Playwright's
auto-waiting `expect`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import lark_oapi as lark  # type: ignore[import-untyped]
from playwright.sync_api import Browser, expect

from larksandbox.state import DEFAULT_APP_ID
from tests.support.browser import ARTIFACTS, UI_TIMEOUT_MS, http, watch_console
from tests.support.ui_sandbox import StartReceiver, send_card

TITLE = "Deploy api v1.2.3"
CARD: dict[str, Any] = {
    "schema": "2.0",
    "config": {"summary": {"content": "Confirm deploy?"}},
    "header": {
        "template": "orange",
        "title": {
            "tag": "plain_text",
            "content": TITLE,
            "i18n_content": {"zh_cn": "发布 api v1.2.3"},
        },
    },
    "body": {
        "elements": [
            {
                "tag": "markdown",
                "content": "**Service** api\n**Version** `v1.2.3` — see [runbook](https://example.com/rb)",
                "i18n_content": {"zh_cn": "**服务** api\n**版本** `v1.2.3`"},
            },
            {
                "tag": "column_set",
                "columns": [
                    {
                        "tag": "column",
                        "width": "auto",
                        "elements": [
                            {
                                "tag": "button",
                                "element_id": "confirm",
                                "type": "primary_filled",
                                "text": {"tag": "plain_text", "content": "Confirm"},
                                "behaviors": [{"type": "callback", "value": {"action": "confirm"}}],
                            }
                        ],
                    },
                    {
                        "tag": "column",
                        "width": "auto",
                        "elements": [
                            {
                                "tag": "button",
                                "element_id": "reject",
                                "type": "danger",
                                "text": {"tag": "plain_text", "content": "Reject"},
                                "behaviors": [{"type": "callback", "value": {"action": "reject"}}],
                            }
                        ],
                    },
                ],
            },
        ]
    },
}


def confirmed_card(by: str) -> dict[str, Any]:
    """The same card, green, with the buttons replaced by a markdown line."""
    card = copy.deepcopy(CARD)
    card["header"]["template"] = "green"
    card["body"]["elements"][1] = {"tag": "markdown", "content": f"Confirmed by {by}"}
    return card


# -- the bot's webhook receiver (unmodified lark-oapi SDK) -------------------------------------


@dataclass
class Receiver:
    encrypt_key: str
    verification_token: str
    names: dict[str, str]
    clicks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.handler: Any = (
            lark.EventDispatcherHandler.builder(self.encrypt_key, self.verification_token)
            .register_p2_card_action_trigger(self.on_card)
            .build()
        )

    def on_card(self, data: Any) -> dict[str, Any]:
        operator = str(data.event.operator.open_id)
        value = dict(data.event.action.value or {})
        self.clicks.append((operator, value))
        name = self.names.get(operator, operator)
        return {
            "toast": {"type": "success", "content": f"Confirmed by {name}"},
            "card": {"type": "raw", "data": confirmed_card(name)},
        }


# -- the test ---------------------------------------------------------------------------------


def test_click_confirm_in_the_browser_updates_the_card_live(
    sandbox_process: str, receiver_factory: StartReceiver, browser: Browser
) -> None:
    sandbox = sandbox_process
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    status, apps = http("GET", f"{sandbox}/sandbox/api/apps")
    assert status == 200, apps
    app = next(a for a in apps["items"] if a["app_id"] == DEFAULT_APP_ID)
    _, users = http("GET", f"{sandbox}/sandbox/api/users")
    receiver = Receiver(
        app["encrypt_key"],
        app["verification_token"],
        {u["open_id"]: u["name"] for u in users["items"]},
    )
    card_url = receiver_factory(receiver)
    # saving the URL makes the sandbox run the url_verification challenge; the SDK answers it
    status, patched = http(
        "PATCH", f"{sandbox}/sandbox/api/apps/{DEFAULT_APP_ID}", {"card_url": card_url}
    )
    assert status == 200 and patched["card_url"] == card_url, patched
    message_id = send_card(sandbox, app, CARD)

    # -- desktop -----------------------------------------------------------------------------
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = watch_console(page)
    message_fetches: list[str] = []
    page.on(
        "request",
        lambda r: (
            message_fetches.append(r.url)
            if r.method == "GET" and r.url.endswith("/sandbox/api/chats/oc_ops/messages")
            else None
        ),
    )
    page.goto(f"{sandbox}/sandbox")
    expect(page.locator("#live")).to_have_attribute("data-state", "live", timeout=UI_TIMEOUT_MS)
    page.locator('#chat-list [data-chat-id="oc_ops"]').click()
    expect(page.locator("#chat-title")).to_have_text("Ops")
    page.locator("#click-as").select_option(label="Alice")

    message = page.locator(f'#messages [data-message-id="{message_id}"]')
    card = message.locator(".card")
    expect(card).to_have_attribute("data-template", "orange", timeout=UI_TIMEOUT_MS)
    expect(card.locator(".card-header")).to_have_text(TITLE)
    expect(card.locator(".el-markdown strong").first).to_have_text("Service")
    expect(card.locator(".el-markdown code")).to_have_text("v1.2.3")
    expect(card.locator(".el-markdown a")).to_have_attribute("href", "https://example.com/rb")
    confirm = card.locator('[data-element-id="confirm"]')
    reject = card.locator('[data-element-id="reject"]')
    expect(confirm).to_have_text("Confirm")
    expect(reject).to_have_text("Reject")
    # the column_set puts its columns side by side
    confirm_box, reject_box = confirm.bounding_box(), reject.bounding_box()
    assert confirm_box is not None and reject_box is not None
    assert reject_box["x"] > confirm_box["x"] + confirm_box["width"] - 1
    assert abs(reject_box["y"] - confirm_box["y"]) < 4

    # the locale picker switches i18n_content
    page.locator("#locale").select_option("zh_cn")
    expect(card.locator(".card-header")).to_have_text("发布 api v1.2.3")
    page.locator("#locale").select_option("en_us")
    expect(card.locator(".card-header")).to_have_text(TITLE)

    confirm.click()
    toast = page.locator("#toast")
    expect(toast).to_have_text("Confirmed by Alice", timeout=UI_TIMEOUT_MS)
    expect(toast).to_have_attribute("role", "status")
    expect(toast).to_have_attribute("data-type", "success")
    # the new card arrives through the SSE stream (the UI re-fetches only on stream events)
    expect(confirm).to_have_count(0, timeout=UI_TIMEOUT_MS)
    expect(reject).to_have_count(0)
    expect(card.locator(".el-markdown").last).to_have_text("Confirmed by Alice")
    expect(card).to_have_attribute("data-template", "green")
    expect(message.locator(".updated-marker")).to_have_attribute("data-revisions", "2")
    assert receiver.clicks == [("ou_alice", {"action": "confirm"})]

    # the history panel shows both revisions
    message.locator(".updated-marker").click()
    expect(message.locator(".history .revision")).to_have_count(2)
    expect(
        message.locator(".history .revision").first.locator("[data-element-id=confirm]")
    ).to_be_disabled()

    # a new message of the bot and one from the composer also arrive live
    second = send_card(sandbox, app, CARD)
    expect(page.locator(f'#messages [data-message-id="{second}"] .card')).to_be_visible(
        timeout=UI_TIMEOUT_MS
    )
    page.locator("#composer-sender").select_option(label="Bob")
    page.locator("#composer-text").fill("ship it")
    page.locator("#composer-send").click()
    bubble = page.locator("#messages .msg-text .bubble").last
    expect(bubble).to_have_text("ship it", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#messages .msg-text .sender").last).to_have_text("Bob")
    expect(page.locator("#composer-text")).to_have_value("")
    # no timer polling: every fetch followed a selection or a stream event (a handful in all)
    assert 1 <= len(message_fetches) <= 8, message_fetches
    page.screenshot(path=str(ARTIFACTS / "sandbox-ui-desktop.png"), full_page=True)
    assert errors == [], errors
    context.close()

    # -- phone -------------------------------------------------------------------------------
    phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2)
    page = phone.new_page()
    errors = watch_console(page)
    page.goto(f"{sandbox}/sandbox")
    expect(page.locator("#chat-list")).to_be_hidden()
    chat_select = page.locator("#chat-select")
    expect(chat_select).to_be_visible()
    chat_select.select_option("oc_ops")
    card = page.locator(f'#messages [data-message-id="{message_id}"] .card')
    card.scroll_into_view_if_needed(timeout=UI_TIMEOUT_MS)
    expect(card).to_be_visible()
    expect(card).to_contain_text("Confirmed by Alice")
    expect(page.locator("#messages")).to_be_visible()
    expect(page.locator("#composer-text")).to_be_visible()
    box = card.bounding_box()
    assert box is not None and box["width"] >= 390 - 2 * 24, box  # full width, less the gutters
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling
    page.screenshot(path=str(ARTIFACTS / "sandbox-ui-phone.png"), full_page=True)
    assert errors == [], errors
    phone.close()
