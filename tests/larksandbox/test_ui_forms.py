"""The sandbox web UI in headless Chromium: a card form (typing a reason, a required input left
empty, a reset) and a button's confirm dialog (Cancel sends nothing, Confirm sends).

Same set-up as test_ui.py (tests/support/ui_sandbox.py): the sandbox as a subprocess, the bot
played by a webhook receiver running the UNMODIFIED lark-oapi SDK. Nothing sleeps: the browser
side waits with Playwright's `expect`, the receiver side on a queue.
"""

from __future__ import annotations

import json
import queue
from dataclasses import dataclass, field
from typing import Any

import lark_oapi as lark  # type: ignore[import-untyped]
from playwright.sync_api import Browser, Request, expect

from larksandbox.state import DEFAULT_APP_ID
from tests.support.browser import ARTIFACTS, UI_TIMEOUT_MS, http, watch_console
from tests.support.sandbox import form_card
from tests.support.ui_sandbox import StartReceiver, send_card


@dataclass
class FormReceiver:
    encrypt_key: str
    verification_token: str
    clicks: queue.Queue[Any] = field(default_factory=queue.Queue)  # P2CardActionTrigger

    def __post_init__(self) -> None:
        self.handler: Any = (
            lark.EventDispatcherHandler.builder(self.encrypt_key, self.verification_token)
            .register_p2_card_action_trigger(self.on_card)
            .build()
        )

    def on_card(self, data: Any) -> dict[str, Any]:
        self.clicks.put(data)
        action = data.event.action
        said = f" ({action.form_value['reason']})" if action.form_value else ""
        return {"toast": {"type": "info", "content": f"got {action.value['action']}{said}"}}


def test_a_form_and_a_confirm_dialog_in_the_browser(
    sandbox_process: str, receiver_factory: StartReceiver, browser: Browser
) -> None:
    base = sandbox_process
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _, apps = http("GET", f"{base}/sandbox/api/apps")
    app = next(a for a in apps["items"] if a["app_id"] == DEFAULT_APP_ID)
    receiver = FormReceiver(app["encrypt_key"], app["verification_token"])
    card_url = receiver_factory(receiver)
    status, patched = http(
        "PATCH", f"{base}/sandbox/api/apps/{DEFAULT_APP_ID}", {"card_url": card_url}
    )
    assert status == 200, patched
    message_id = send_card(base, app, form_card(required=True))

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = watch_console(page)
    clicks: list[dict[str, Any]] = []

    def on_request(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/click"):
            clicks.append(json.loads(request.post_data or "{}"))

    page.on("request", on_request)
    page.goto(f"{base}/sandbox")
    expect(page.locator("#live")).to_have_attribute("data-state", "live", timeout=UI_TIMEOUT_MS)
    page.locator('#chat-list [data-chat-id="oc_ops"]').click()
    page.locator("#click-as").select_option(label="Alice")
    card = page.locator(f'#messages [data-message-id="{message_id}"] .card')
    expect(card).to_be_visible(timeout=UI_TIMEOUT_MS)

    # the inputs of the form, as the card declares them
    reason = card.locator('[data-form-name="reject_form"] input[data-field-name="reason"]')
    ticket = card.locator('input[data-field-name="ticket"]')
    expect(reason).to_have_attribute("placeholder", "Why reject?")
    expect(reason).to_have_attribute("maxlength", "200")
    expect(reason).to_have_attribute("required", "")
    expect(reason).to_have_value("")
    expect(ticket).to_have_value("T-1")
    submit = card.locator('[data-name="reject_submit"]')
    toast = page.locator("#toast")

    # a required input left empty: refused, nothing reaches the app
    submit.click()
    expect(toast).to_contain_text("有必填项未填写", timeout=UI_TIMEOUT_MS)
    expect(toast).to_have_attribute("data-type", "error")
    assert receiver.clicks.empty()

    # typing a reason and submitting sends it as form_value, with the button's name
    reason.fill("price moved")
    submit.click()
    expect(toast).to_have_text("got reject (price moved)", timeout=UI_TIMEOUT_MS)
    action = receiver.clicks.get(timeout=UI_TIMEOUT_MS / 1000).event.action
    assert action.name == "reject_submit" and action.value == {"action": "reject", "req": "42"}
    assert action.form_value == {"reason": "price moved", "ticket": "T-1"}
    assert clicks[-1]["form"] == {"reason": "price moved", "ticket": "T-1"}

    # the reset button puts the inputs back without sending anything
    reason.fill("draft")
    ticket.fill("T-9")
    card.locator('[data-name="clear"]').click()
    expect(reason).to_have_value("")
    expect(ticket).to_have_value("T-1")
    assert len(clicks) == 2

    # the confirm dialog: Cancel sends nothing, Confirm sends the click
    confirm = card.locator('[data-element-id="confirm"]')
    dialog = page.locator("#confirm-dialog")
    confirm.click()
    expect(dialog).to_be_visible()
    expect(page.locator("#confirm-title")).to_have_text("Confirm the order?")
    expect(page.locator("#confirm-text")).to_have_text("Buy 0.01 BTC at market")
    page.screenshot(path=str(ARTIFACTS / "sandbox-ui-confirm-dialog.png"))
    page.locator("#confirm-cancel").click()
    expect(dialog).to_be_hidden()
    confirm.click()
    expect(dialog).to_be_visible()
    page.locator("#confirm-accept").click()
    expect(toast).to_have_text("got confirm", timeout=UI_TIMEOUT_MS)
    assert (
        receiver.clicks.get(timeout=UI_TIMEOUT_MS / 1000).event.action.value["action"] == "confirm"
    )
    # the cancelled dialog sent nothing: three requests in all, the last one accepted
    assert len(clicks) == 3 and clicks[-1] == {
        "operator": "ou_alice",
        "button": "confirm",
        "dialog": "accept",
    }
    assert receiver.clicks.empty()
    page.screenshot(path=str(ARTIFACTS / "sandbox-ui-form.png"), full_page=True)
    # the refused submit answered 422 (the network log and the console say so); nothing else
    assert [e for e in errors if "422" not in e] == [], errors
    context.close()
