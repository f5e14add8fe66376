"""Sign in with Lark in headless Chromium: `countersign run --sandbox` (sign-in on, the
sandbox as Lark, its redirect URL registered at start) in a subprocess; Alice presses "Sign in
with Lark" on /ops, picks herself on the sandbox's authorize page, approves, and lands back on
/ops signed in by name; then she confirms an operation on its page (issue 15, item 3)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.browser import UI_TIMEOUT_MS, http, watch_console
from tests.support.cli_process import running_cli
from tests.support.factories import order_request
from tests.support.processes import free_port

LISTENING = "countersign API listening on "
DEV = "dev-token"  # the embedded defaults' proposer token


@pytest.fixture
def running_bot(tmp_path: Path) -> Iterator[str]:
    """`countersign run --sandbox` on free ports; the bot's URL once it listens."""
    port, sandbox_port = free_port(), free_port()
    args = ("run", "--sandbox", "--data-dir", str(tmp_path / "data"), "--port", str(port))
    with running_cli(
        *args, "--sandbox-port", str(sandbox_port), ready=lambda line: line.startswith(LISTENING)
    ):
        yield f"http://127.0.0.1:{port}"


def test_alice_signs_in_through_the_sandbox_and_lands_on_ops_by_name(
    running_bot: str, browser: Browser
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors = watch_console(page)
    page.goto(f"{running_bot}/ops")
    expect(page.locator("#sign-in")).to_have_text("Sign in with Lark")
    page.locator("#sign-in").click()

    page.locator("#user").select_option("ou_alice", timeout=UI_TIMEOUT_MS)
    page.locator("#approve").click()

    page.wait_for_url(f"{running_bot}/ops", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#who")).to_have_text("Alice")
    expect(page.locator("#sign-out")).to_be_visible()
    expect(page.locator("#sign-in")).to_have_count(0)
    cookies = {c["name"]: c for c in context.cookies(f"{running_bot}/ops")}
    session = cookies["countersign_session"]
    assert session["httpOnly"] and session["sameSite"] == "Lax" and session["path"] == "/ops"

    page.locator("#sign-out").click()
    expect(page.locator("#sign-in")).to_be_visible()  # loopback still reads, signed out
    assert not errors, errors
    context.close()


def sign_in_as_alice(page: Page, bot: str) -> None:
    page.on("dialog", lambda dialog: dialog.accept())  # she accepts the Confirm dialog
    page.goto(f"{bot}/ops")
    page.locator("#sign-in").click()
    page.locator("#user").select_option("ou_alice", timeout=UI_TIMEOUT_MS)
    page.locator("#approve").click()
    page.wait_for_url(f"{bot}/ops", timeout=UI_TIMEOUT_MS)


def card_posted(bot: str, operation_id: str) -> None:
    """Until the card is in the chat and marked shown: the page opened after it has nothing
    left to reload for before the click."""
    deadline = time.monotonic() + 30
    while True:
        status, view = http("GET", f"{bot}/api/v1/operations/{operation_id}", token=DEV)
        assert status == 200, view
        if view["state"] == "awaiting_confirmation" and view["card"]["delivery"] == "current":
            return
        assert time.monotonic() < deadline, view
        time.sleep(0.1)


def test_alice_confirms_on_the_operation_page_and_the_page_shows_the_decision(
    running_bot: str, browser: Browser, artifacts: Path
) -> None:
    status, view = http(
        "POST", f"{running_bot}/api/v1/operations", order_request("ui-web-confirm"), DEV
    )
    assert status == 201, view
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = watch_console(page)
    sign_in_as_alice(page, running_bot)
    card_posted(running_bot, view["id"])
    page.goto(f"{running_bot}/ops/{view['id']}")
    expect(page.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.locator("#decide-digest")).to_contain_text(view["confirm_digest"][:12])
    page.screenshot(path=str(artifacts / "web-decide-before.png"), full_page=True)
    page.locator("#confirm").click()
    expect(page.locator("#flash")).to_have_text("Confirmed", timeout=UI_TIMEOUT_MS)
    expect(page.locator("#lines")).to_contain_text("the web")
    expect(page.locator("#confirm")).to_have_count(0)
    page.screenshot(path=str(artifacts / "web-decide-after.png"), full_page=True)
    assert not errors, errors
    context.close()


def card_content(sandbox: str, message_id: str) -> str:
    status, message = http("GET", f"{sandbox}/sandbox/api/messages/{message_id}")
    assert status == 200, message
    return json.dumps(message, ensure_ascii=False)


def test_a_restart_between_sign_in_and_the_decision_keeps_alice_signed_in_and_decides_once(
    tmp_path: Path, browser: Browser
) -> None:
    """Sessions live in the store: the bot (and its sandbox) stop and start again on the same
    data directory between Alice's sign-in and her click; the page she opened before the
    restart posts to the new run, which decides once, entry web, and patches the card."""
    port, sandbox_port = free_port(), free_port()
    bot, sandbox = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{sandbox_port}"
    args = ("run", "--sandbox", "--data-dir", str(tmp_path / "data"), "--port", str(port))
    args += ("--sandbox-port", str(sandbox_port))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    with running_cli(*args, ready=lambda line: line.startswith(LISTENING)):
        status, view = http("POST", f"{bot}/api/v1/operations", order_request("ui-restart"), DEV)
        assert status == 201, view
        sign_in_as_alice(page, bot)
        card_posted(bot, view["id"])
        page.goto(f"{bot}/ops/{view['id']}")
        expect(page.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    # the bot is gone: nothing answers the page's long poll until the next run listens
    with running_cli(*args, ready=lambda line: line.startswith(LISTENING)):
        errors = watch_console(page)
        page.locator("#confirm").click()  # the form rendered by the run before
        expect(page.locator("#flash")).to_have_text("Confirmed", timeout=UI_TIMEOUT_MS)
        expect(page.locator("#who")).to_have_text("Alice")
        status, done = http(
            "GET", f"{bot}/api/v1/operations/{view['id']}?wait_s=30&until=final", token=DEV
        )
        assert status == 200 and done["state"] == "outcome_observed", done
        decision = done["decision"]
        assert (decision["by"], decision["entry"], decision["action"]) == (
            "ou_alice",
            "web",
            "confirm",
        )
        assert done["outcome"]["status"] == "filled", done["outcome"]
        message_id = done["card"]["message_id"]
        deadline = time.monotonic() + 30
        while "Filled" not in (shown := card_content(sandbox, message_id)):
            assert time.monotonic() < deadline, shown
            time.sleep(0.2)
        assert "the web" in shown and "Alice" in shown
        assert not errors, errors
    context.close()
