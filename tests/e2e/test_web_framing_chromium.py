"""Clickjacking and the one-click Confirm, in headless Chromium against the in-process bot
(issue 30, item 5): a page on another origin (same site: 127.0.0.1 on another port, so
Alice's SameSite=Lax cookie goes along) frames /ops/{id} over a decoy, and the frame shows
nothing to click; on her own tab, Confirm asks the browser's dialog first, and a dismissed
dialog posts nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from aiohttp.test_utils import TestServer
from playwright.async_api import Dialog, Request, expect

from store import State
from tests.support.browser import UI_TIMEOUT_MS
from tests.support.dashboard import chromium
from tests.support.factories import order_request
from tests.support.processes import free_port
from tests.support.stack import Stack, StackFactory
from tests.support.web_chromium import PEOPLE, accept_dialogs, card_shown, signed_in_page

# The attack of the finding: the bot's page in a frame, made invisible, over a decoy button
# placed where Confirm would be; one click on "win" would be a click on Confirm.
DECOY = """<!doctype html><html><body>
<button id="win" style="position:absolute;top:0;left:0;z-index:0">Claim your prize</button>
<iframe id="framed" src="{src}" width="1200" height="800"
        style="position:absolute;top:0;left:0;opacity:0.01;z-index:1"
        onload="document.body.dataset.loaded = '1'"></iframe>
</body></html>"""


async def unchanged(stack: Stack, operation_id: str) -> None:
    op = await stack.store.get(operation_id)
    assert op is not None and op.state is State.AWAITING_CONFIRMATION
    assert await stack.store.claim_count(operation_id) == 0
    assert await stack.store.confirmations(operation_id) == []


@asynccontextmanager
async def decoy_site(target: str) -> AsyncIterator[str]:
    """A real server on another loopback port (Chromium's local-network checks then see one
    local page framing another, as with the attacker's same-site page): its decoy's URL."""

    async def decoy(_request: web.Request) -> web.Response:
        return web.Response(text=DECOY.format(src=target), content_type="text/html")

    app = web.Application()
    app.router.add_get("/decoy", decoy)
    server = TestServer(app, host="127.0.0.1", port=free_port())
    await server.start_server()
    try:
        yield f"http://127.0.0.1:{server.port}/decoy"
    finally:
        await server.close()


async def test_a_framed_operation_page_shows_nothing_clickable(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    view, _message_id = await stack.offered(order_request("chromium-framed"))
    await card_shown(stack, view["id"])
    target = f"{stack.bot_url}/ops/{view['id']}"
    async with chromium() as browser:
        alice = await signed_in_page(browser, stack, "ou_alice")
        # in her own tab the page offers Confirm: what a frame would show, if it were let in
        await alice.goto(target)
        await expect(alice.locator("#confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)

        async with decoy_site(target) as decoy:
            await alice.goto(decoy)
            # the frame's navigation has ended, however it ended
            await expect(alice.locator("body")).to_have_attribute(
                "data-loaded", "1", timeout=UI_TIMEOUT_MS
            )
            [framed] = alice.main_frame.child_frames
            assert not framed.url.startswith(stack.bot_url), framed.url  # blocked, not shown
            for selector in ("#confirm", "#reject", "form", "button", "#lines"):
                assert await framed.locator(selector).count() == 0, selector
            # a click on the decoy's button lands on the decoy, and decides nothing
            await alice.locator("#win").click(force=True)
    await unchanged(stack, view["id"])


async def test_a_web_confirm_asks_first_and_a_dismissed_dialog_confirms_nothing(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", web={}, people=PEOPLE)
    view, _message_id = await stack.offered(order_request("chromium-dialog"))
    await card_shown(stack, view["id"])
    async with chromium() as browser:
        signed_in = await signed_in_page(browser, stack, "ou_alice")
        alice = await signed_in.context.new_page()  # a tab with no dialog handler yet
        await alice.route("**/ops/changes*", lambda route: route.abort())  # hold it still
        posts: list[str] = []

        def on_request(request: Request) -> None:
            if request.method == "POST":
                posts.append(request.url)

        alice.on("request", on_request)
        dismissed: list[str] = []

        async def dismiss(dialog: Dialog) -> None:
            dismissed.append(dialog.message)
            await dialog.dismiss()

        alice.on("dialog", dismiss)
        await alice.goto(f"{stack.bot_url}/ops/{view['id']}")
        await alice.locator("#confirm").click()
        await alice.evaluate("1")  # the click's handlers have all run
        assert len(dismissed) == 1, dismissed
        assert view["terms"]["title"] in dismissed[0]
        assert view["confirm_digest"][:12] in dismissed[0]
        assert posts == [] and alice.url.endswith(f"/ops/{view['id']}")
        await expect(alice.locator("#confirm")).to_be_visible()
        await unchanged(stack, view["id"])

        # accepted, the same button confirms
        alice.remove_listener("dialog", dismiss)
        accepted = accept_dialogs(alice)
        await alice.locator("#confirm").click()
        await expect(alice.locator("#flash")).to_have_text("Confirmed", timeout=UI_TIMEOUT_MS)
        assert len(accepted) == 1 and len(posts) == 1
    assert await stack.store.claim_count(view["id"]) == 1
