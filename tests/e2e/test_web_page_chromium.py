"""The web decision page reads like a review page (issue 36, deliverable 1), in headless
Chromium against the in-process bot, on SQLite and PostgreSQL: the headline, the terms, the
decision panel, who confirmed where, then the history, at 1280 and 390 px in en and zh, with
nothing scrolling sideways and no button cutting its text; a non-operator told why they may
not decide; sign-in coming back to the operation (and nowhere else); localhost sent to the
public URL's 127.0.0.1; a reason being typed kept while the page refreshes its data; a
reject acknowledged without the green of a confirm; and a 2-of-3 quorum confirmed on the web
and on the card named with both entries on the page, the dashboard and `countersign show`."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
from playwright.async_api import expect

from cards.strings import REFUSALS
from kernel.reasons import Reason
from store import State
from tests.support.browser import UI_TIMEOUT_MS
from tests.support.dashboard import chromium
from tests.support.factories import LARGE_ORDERS_RULE, TRIO_AUDIENCE, big_order, order_request
from tests.support.processes import ENV, cli
from tests.support.signin import browsing
from tests.support.stack import DEV_TOKEN, Stack, StackFactory, settled
from tests.support.web_chromium import PEOPLE, card_shown
from tests.support.web_decide import site
from tests.support.web_page import (
    SECTIONS,
    WIDTHS,
    context_in,
    fits,
    screenshots,
    sections,
    sign_in_from,
)

TRIO_PEOPLE = {**PEOPLE, "ou_carol": "Carol"}
QUORUM = {"audiences": [TRIO_AUDIENCE], "approval_rules": [LARGE_ORDERS_RULE]}


async def test_the_page_reads_in_order_and_fits_a_phone_in_en_and_zh(
    make_stack: StackFactory, backend_name: str, tmp_path: Path
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    view, _message_id = await stack.offered(order_request("page-order"))
    await card_shown(stack, view["id"])
    path = f"/ops/{view['id']}"
    shots = screenshots(tmp_path)
    async with chromium() as browser:
        for lang in ("en", "zh"):
            for user in ("ou_alice", "ou_mallory"):
                context = await context_in(browser, lang)
                page = await context.new_page()
                await sign_in_from(page, stack, path, user)
                for width in WIDTHS:
                    await page.set_viewport_size({"width": width, "height": 900})
                    await page.goto(f"{stack.bot_url}{path}")
                    assert await sections(page) == SECTIONS
                    await fits(page)
                    name = f"web-page-{user}-{lang}-{width}-{backend_name}.png"
                    await page.screenshot(path=str(shots / name), full_page=True)
                    if user == "ou_alice":
                        # the primary action, in this language, then Reject with its reason
                        confirm = page.locator("#confirm")
                        await expect(confirm).to_be_visible()
                        await expect(confirm).to_have_class(re.compile(r"\bprimary\b"))
                        await expect(page.locator("#reason")).to_be_visible()
                        await expect(page.locator("#why-not")).to_have_count(0)
                        continue
                    # Mallory, no operator: no buttons, and why, in plain words
                    await expect(page.locator("#confirm")).to_have_count(0)
                    await expect(page.locator("#reject")).to_have_count(0)
                    why = page.locator("#why-not")
                    await expect(why).to_have_attribute(
                        "data-reason", Reason.OPERATOR_NOT_ALLOWED.value
                    )
                    await expect(why).to_contain_text(REFUSALS[Reason.OPERATOR_NOT_ALLOWED][lang])
                await context.close()
    assert len(list(shots.glob(f"web-page-*-{backend_name}.png"))) == 8
    await unchanged(stack, view["id"])


async def unchanged(stack: Stack, operation_id: str) -> None:
    op = await stack.store.get(operation_id)
    assert op is not None and op.state is State.AWAITING_CONFIRMATION
    assert await stack.store.claim_count(operation_id) == 0


async def test_sign_in_returns_to_the_operation_and_never_elsewhere(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    view, _message_id = await stack.offered(order_request("page-return"))
    await card_shown(stack, view["id"])
    path = f"/ops/{view['id']}"
    async with chromium() as browser:
        context = await context_in(browser, "en")
        page = await context.new_page()
        await sign_in_from(page, stack, path, "ou_alice")
        assert page.url == f"{stack.bot_url}{path}"
        await expect(page.locator("#confirm")).to_be_visible()
        await context.close()
    # a `next` that is not a page of this dashboard lands on /ops: no open redirect
    foreign = [
        "https://evil.example/",
        "//evil.example/ops",
        "/\\evil.example",
        "/ops/auth/callback",
    ]
    async with browsing(site(stack)) as http_browser:
        for asked in [*foreign, "/ops/../../x", "/ops/changes"]:
            sent = await http_browser.get(f"/ops/auth/sign-in?{urlencode({'next': asked})}")
            assert sent.status == 302, sent.html
            landed = await http_browser.get(await http_browser.approve(sent.location, "ou_alice"))
            assert (landed.status, landed.location) == (302, "/ops"), asked
        # and a page of ours, in Chinese, is returned to as asked
        sent = await http_browser.get(f"/ops/auth/sign-in?{urlencode({'next': path + '?lang=zh'})}")
        landed = await http_browser.get(await http_browser.approve(sent.location, "ou_alice"))
        assert (landed.status, landed.location) == (302, f"{path}?lang=zh")


async def test_localhost_is_sent_to_the_public_url_and_errors_say_what_next(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    view, _message_id = await stack.offered(order_request("page-host"))
    await card_shown(stack, view["id"])
    path = f"/ops/{view['id']}"
    port = stack.bot_url.rsplit(":", 1)[1]
    localhost = f"http://localhost:{port}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{localhost}{path}?lang=zh", allow_redirects=False) as moved:
            assert moved.status == 302
            assert moved.headers["Location"] == f"{stack.bot_url}{path}?lang=zh"
        form = {"action": "confirm", "digest": view["confirm_digest"], "csrf": "x"}
        async with http.post(
            f"{localhost}{path}/decide", data=form, allow_redirects=False
        ) as posted:
            page = await posted.text()
            assert posted.status == 421 and stack.bot_url in page
            assert "Nothing was recorded" in page and 'id="next-1"' in page
    shots = screenshots(tmp_path)
    async with chromium() as browser:
        context = await context_in(browser, "en", 390)
        page = await context.new_page()
        # opened at localhost, signed in at 127.0.0.1 (one origin for the cookie and the
        # state), and back on the operation
        await page.goto(f"{localhost}{path}")
        assert page.url == f"{stack.bot_url}{path}"
        await page.locator("#sign-in").click()
        await page.locator("#user").select_option("ou_alice", timeout=UI_TIMEOUT_MS)
        await page.locator("#approve").click()
        await page.wait_for_url(f"{stack.bot_url}{path}", timeout=UI_TIMEOUT_MS)
        await expect(page.locator("#confirm")).to_be_visible()
        # a callback this browser did not start: a page in the dashboard's style that says
        # why and offers to sign in again, back to where it was
        answer = await page.goto(f"{stack.bot_url}/ops/auth/callback?state=forged&code=x")
        assert answer is not None and answer.status == 400
        await expect(page.locator("#error-title")).to_be_visible()
        await expect(page.locator("#error")).to_contain_text("not started in this browser")
        await expect(page.locator("#next-1")).to_have_attribute(
            "href", re.compile(r"^/ops/auth/sign-in")
        )
        await expect(page.locator("header.top .brand")).to_be_visible()
        await fits(page)
        await page.screenshot(path=str(shots / "sign-in-error-390.png"), full_page=True)
        await context.close()
    await unchanged(stack, view["id"])


async def test_a_reason_being_typed_survives_a_refresh_and_a_reject_is_not_green(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    view, _message_id = await stack.offered(order_request("page-typing"))
    await card_shown(stack, view["id"])
    path = f"/ops/{view['id']}"
    async with chromium() as browser:
        context = await context_in(browser, "en")
        page = await context.new_page()
        await sign_in_from(page, stack, path, "ou_bob")
        await page.evaluate("window.stillThisPage = true")  # gone if the page reloads
        reason = page.locator("#reason")
        await reason.fill("too large for a Friday")
        before = await page.evaluate("document.body.dataset.since")
        # another operation changes: the page refreshes its data, in place, to the new mark
        await stack.offered(order_request("page-typing-other"))
        await page.wait_for_function(
            "since => document.body.dataset.since !== since", arg=before, timeout=UI_TIMEOUT_MS
        )
        assert int(await page.evaluate("document.body.dataset.refreshed")) >= 1
        assert await page.evaluate("window.stillThisPage") is True
        await expect(reason).to_have_value("too large for a Friday")
        await page.locator("#reject").click()
        flash = page.locator("#flash")
        await expect(flash).to_have_text("Rejected", timeout=UI_TIMEOUT_MS)
        await expect(flash).to_have_class(re.compile(r"\btone-grey\b"))
        await expect(flash).not_to_have_class(re.compile(r"\btone-green\b"))
        await context.close()
    _, decided = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert decided["state"] == "rejected"
    assert decided["decision"]["reason"] == "too large for a Friday"


async def test_a_quorum_confirmed_on_the_web_and_the_card_names_both_entries_everywhere(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=TRIO_PEOPLE, **QUORUM)
    view, message_id = await stack.offered(big_order("page-quorum"))
    await card_shown(stack, view["id"])
    path = f"/ops/{view['id']}"
    async with chromium() as browser:
        context = await context_in(browser, "en")
        alice = await context.new_page()
        await sign_in_from(alice, stack, path, "ou_alice")
        await alice.locator("#confirm").click()  # the dialog is accepted
        await expect(alice.locator("#flash")).to_contain_text("1 of 2", timeout=UI_TIMEOUT_MS)
        confirmers = alice.locator("#confirmers")
        await expect(confirmers).to_contain_text("Alice on the web at")
        # Bob on the card: Alice's page refreshes in place and names both, in order
        reply = await stack.click(message_id, "ou_bob")
        assert reply["toast"]["type"] == "success", reply
        await expect(confirmers).to_contain_text("Bob on the Lark card at", timeout=UI_TIMEOUT_MS)
        said = await alice.locator("#confirmers li").all_inner_texts()
        assert [line.split(" at ")[0] for line in said] == [
            "Alice on the web",
            "Bob on the Lark card",
        ]
        # the dashboard's list names them too
        await alice.goto(f"{stack.bot_url}/ops/all")
        row = alice.locator(f'tr[data-op="{view["id"]}"] .confirmed-by')
        await expect(row).to_contain_text("Alice on the web at")
        await expect(row).to_contain_text("Bob on the Lark card at")
        await context.close()
    done = await settled(stack, view["id"], "filled")
    assert [(c["by"], c["entry"]) for c in done["approval"]["confirmations"]] == [
        ("ou_alice", "web"),
        ("ou_bob", "lark"),
    ]
    shown = await cli(
        "show", view["id"], "--url", stack.bot_url, "--token", DEV_TOKEN, env={**ENV, "TZ": "UTC"}
    )
    assert shown.code == 0, shown.err
    [line] = [each for each in shown.out.splitlines() if "confirmed by:" in each]
    assert re.fullmatch(
        r"  confirmed by: Alice on the web at \S+ \S+ UTC; Bob on the Lark card at \S+ \S+ UTC",
        line,
    ), shown.out
