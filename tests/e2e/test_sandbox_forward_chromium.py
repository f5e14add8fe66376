"""Forwarding a card in the sandbox UI, in headless Chromium, against a real
`countersign run --sandbox` (README, "Try it"): Alice forwards the bot's card from Ops to
Other with the message's Forward button. As on Lark, a click on the copy sends nothing while
the card does not enable forward interaction; with the sandbox's switch ticked in the same
dialog the click reaches the bot, which refuses it (wrong chat) with its own toast."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from cards.strings import REFUSALS
from kernel.reasons import Reason
from tests.support.browser import UI_TIMEOUT_MS, http, watch_console
from tests.support.cli_process import running_cli
from tests.support.factories import order_request
from tests.support.processes import free_port

LISTENING = "countersign API listening on "
DEV = "dev-token"  # the embedded defaults' proposer token


@pytest.fixture
def bot_and_sandbox(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`countersign run --sandbox` on free ports: (the bot's URL, the sandbox's)."""
    port, sandbox_port = free_port(), free_port()
    args = ("run", "--sandbox", "--data-dir", str(tmp_path / "data"), "--port", str(port))
    with running_cli(
        *args, "--sandbox-port", str(sandbox_port), ready=lambda line: line.startswith(LISTENING)
    ):
        yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{sandbox_port}"


def forward_to_other(page: Page, card: str, *, interactive: bool) -> None:
    page.locator(f'{card} [data-action="forward"]').click()
    expect(page.locator("#forward-dialog")).to_be_visible()
    page.locator("#forward-chat").select_option("oc_other")
    page.locator("#forward-interactive").set_checked(interactive)
    page.locator("#forward-accept").click()
    expect(page.locator("#toast")).to_contain_text("Forwarded to Other as Alice")


def confirm_on_the_newest_copy(page: Page) -> None:
    copy = page.locator("article.msg-interactive").last
    expect(copy.locator(".chip-forwarded")).to_be_visible(timeout=UI_TIMEOUT_MS)
    copy.get_by_role("button", name="Confirm", exact=True).click()
    if page.locator("#confirm-dialog").is_visible():  # the card's own confirm dialog
        page.locator("#confirm-accept").click()


def test_a_card_forwarded_in_the_ui_is_refused_by_the_bot_in_the_other_chat(
    bot_and_sandbox: tuple[str, str], browser: Browser, artifacts: Path
) -> None:
    bot, sandbox = bot_and_sandbox
    status, view = http("POST", f"{bot}/api/v1/operations", order_request("ui-forward"), DEV)
    assert status == 201, view
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = watch_console(page)
    page.goto(f"{sandbox}/sandbox#oc_ops")
    page.locator("#click-as").select_option(label="Alice")
    original = "article.msg-interactive.msg-app"
    expect(page.locator(original)).to_contain_text("Order to confirm", timeout=UI_TIMEOUT_MS)

    forward_to_other(page, original, interactive=False)
    page.locator('.chat-entry[data-chat-id="oc_other"]').click()
    confirm_on_the_newest_copy(page)
    # Lark's default: a forwarded copy of a card without enable_forward_interaction sends nothing
    expect(page.locator("#toast")).to_contain_text("enable_forward_interaction")

    page.locator('.chat-entry[data-chat-id="oc_ops"]').click()
    forward_to_other(page, original, interactive=True)
    page.locator('.chat-entry[data-chat-id="oc_other"]').click()
    expect(page.locator("article.msg-interactive")).to_have_count(2, timeout=UI_TIMEOUT_MS)
    confirm_on_the_newest_copy(page)
    toast = page.locator("#toast")
    expect(toast).to_have_text(REFUSALS[Reason.CHAT_MISMATCH]["en"], timeout=UI_TIMEOUT_MS)
    expect(toast).to_have_attribute("data-type", "error")
    page.screenshot(path=str(artifacts / "sandbox-forwarded-refused.png"), full_page=True)

    status, after = http("GET", f"{bot}/api/v1/operations/{view['id']}", token=DEV)
    assert status == 200 and after["state"] == "awaiting_confirmation", after
    assert after["approval"]["confirmed_by"] == []
    status, other = http("GET", f"{sandbox}/sandbox/api/chats/oc_other/messages")
    assert status == 200
    copies = [m for m in other["items"] if m["msg_type"] == "interactive"]
    # each copy is a new message in Other, sent by Alice, of the original's content
    assert len(copies) == 2 and all(m["sender_id"] == "ou_alice" for m in copies)
    assert {m["forwarded_from"] for m in copies} == {after["card"]["message_id"]}
    assert copies[0]["clicks"] == [] and len(copies[1]["clicks"]) == 1  # the first sent nothing
    # the only failed request: the click Lark would not send (409 forwarded_card_not_interactive)
    assert [e for e in errors if not e.startswith("409 ") and "409" not in e] == [], errors
    context.close()
