"""The dashboard in headless Chromium next to the sandbox UI, against the running demo:
Alice confirms the demo's first card in the sandbox UI, the open dashboard page refreshes by
itself and shows the state and outcome the card shows.

The demo runs as `countersign demo` (what the README's `make run` starts) in a subprocess;
screenshots at desktop and phone width go to the `artifacts` directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.support.browser import UI_TIMEOUT_MS, http, watch_console
from tests.support.cli_process import running_cli
from tests.support.processes import free_port

READY = "countersign demo is ready"
FILLS = "    fills "  # the row of the sample that fills, in the demo's list of operations
OUTCOME_TIMEOUT_MS = 20_000


@pytest.fixture
def running_demo(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """`countersign demo` on free ports: (bot URL, sandbox URL, the "fills" operation's id)."""
    port, sandbox_port = free_port(), free_port()
    args = ("demo", "--data-dir", str(tmp_path / "data"), "--port", str(port))
    with running_cli(
        *args, "--sandbox-port", str(sandbox_port), ready=lambda line: line.startswith(FILLS)
    ) as seen:
        assert any(line.startswith(READY) for line in seen), seen
        operation_id = seen[-1].split()[-1]
        yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{sandbox_port}", operation_id


def test_confirm_in_the_sandbox_ui_and_the_dashboard_shows_what_the_card_shows(
    running_demo: tuple[str, str, str],
    browser: Browser,
    artifacts: Path,
) -> None:
    bot, sandbox, operation_id = running_demo
    _, offered = http("GET", f"{bot}/api/v1/operations/{operation_id}", token="dev-token")
    message_id = offered["card"]["message_id"]

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    dashboard = context.new_page()
    errors = watch_console(dashboard)
    dashboard.goto(f"{bot}/ops/{operation_id}")
    expect(dashboard.locator("#headline")).to_have_text("Order to confirm")

    lark = context.new_page()
    lark.goto(f"{sandbox}/sandbox")
    expect(lark.locator("#live")).to_have_attribute("data-state", "live", timeout=UI_TIMEOUT_MS)
    lark.locator('#chat-list [data-chat-id="oc_ops"]').click()
    lark.locator("#click-as").select_option(label="Alice")
    # The README's step: type `pending` in the composer, whose @bot box is ticked by default.
    expect(lark.locator("#composer-mention")).to_be_checked()
    lark.locator("#composer-sender").select_option(label="Alice")
    lark.locator("#composer-text").fill("pending")
    lark.locator("#composer-send").click()
    expect(lark.locator("#messages .msg-text .bubble").last).to_contain_text(
        "waiting for a decision:", timeout=OUTCOME_TIMEOUT_MS
    )
    expect(lark.locator("#messages .msg-text .bubble").last).to_contain_text(operation_id)
    card = lark.locator(f'#messages [data-message-id="{message_id}"] .card')
    card.locator('[data-element-id="confirm"]').click()
    expect(card).to_contain_text("Filled · SIMULATED", timeout=OUTCOME_TIMEOUT_MS)

    # The dashboard page was not touched: its long poll reloads it.
    expect(dashboard.locator("#outcome")).to_contain_text(
        "Filled · SIMULATED", timeout=OUTCOME_TIMEOUT_MS
    )
    _, api = http("GET", f"{bot}/api/v1/operations/{operation_id}", token="dev-token")
    expect(dashboard.locator("#headline")).to_have_text("Filled")
    assert api["outcome"]["status"] == "filled"
    assert "Confirmed by" in card.inner_text()
    expect(dashboard.locator("#lines")).to_contain_text("Confirmed by Alice at")
    dashboard.screenshot(path=str(artifacts / "demo-dashboard-desktop.png"), full_page=True)

    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    small = phone.new_page()
    small.goto(f"{bot}/ops?lang=zh")
    row = small.locator(f'#recent tr[data-op="{operation_id}"]')
    expect(row).to_contain_text("已成交")
    expect(row).to_contain_text("模拟")
    expect(small.locator("h1")).to_have_text("需要处理")
    width = small.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the list scrolls sideways on a phone ({width} px)"
    small.screenshot(path=str(artifacts / "demo-dashboard-phone.png"), full_page=True)
    assert not errors, errors
    phone.close()
    context.close()
