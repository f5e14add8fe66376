"""The read-only dashboard (/ops) shows the one projection, never changes state, and gates
non-loopback clients."""

from __future__ import annotations

from html import escape

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from bot.api.dashboard import allowed, outcome_text
from tests.e2e.conftest import Stack, StackFactory, eventually
from tests.factories import order_request


async def page(stack: Stack, path: str) -> str:
    async with stack.http.get(f"{stack.bot_url}{path}") as response:
        assert response.status == 200, path
        assert response.content_type == "text/html"
        return await response.text()


async def test_the_dashboard_shows_what_the_api_shows_and_browsing_changes_nothing(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    view, message_id = await stack.offered(order_request("dashboard"))
    await stack.click(message_id, "ou_alice")

    async def filled() -> bool:
        _, fresh = await stack.api("GET", f"/api/v1/operations/{view['id']}")
        return (fresh["outcome"] or {}).get("status") == "filled"

    await eventually(filled)
    _, api = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    before = await stack.store.get(view["id"])

    listing = await page(stack, "/ops")
    assert view["id"] in listing and escape(outcome_text(api)) in listing
    assert "SIMULATED" in listing
    detail = await page(stack, f"/ops/{view['id']}")
    assert f'<span class="state" id="state">{api["state"]}</span>' in detail
    assert f'<span id="outcome">{escape(outcome_text(api))}</span>' in detail
    assert "filled · SIMULATED" in outcome_text(api)
    assert api["confirm_digest"] in detail and f"cs-{view['id']}" in detail
    assert "ou_alice" in detail and "accepted" in detail
    zh = await page(stack, f"/ops/{view['id']}?lang=zh")
    assert "结果（原始与核对）" in zh and "模拟" in zh
    filtered = await page(stack, "/ops?state=rejected")
    assert view["id"] not in filtered

    async with stack.http.get(f"{stack.bot_url}/ops/changes?since=stale") as response:
        assert (await response.json()) == {"changed": True}
    after = await stack.store.get(view["id"])
    assert before is not None and after is not None and after.version == before.version
    async with stack.http.post(f"{stack.bot_url}/ops/{view['id']}") as response:
        assert response.status == 405  # there is nothing to post to


def test_only_loopback_or_the_token_may_browse() -> None:
    class Peer:
        def __init__(self, host: str) -> None:
            self.host = host

        def get_extra_info(self, name: str, default: object = None) -> object:
            return (self.host, 50000) if name == "peername" else default

    def request(host: str, query: str = "", cookie: str = "") -> web.Request:
        headers = {"Cookie": f"countersign_dashboard={cookie}"} if cookie else {}
        return make_mocked_request("GET", f"/ops{query}", headers=headers, transport=Peer(host))

    assert allowed(request("127.0.0.1"), None)
    assert allowed(request("::1"), None)
    assert not allowed(request("10.1.2.3"), None)
    assert not allowed(request("10.1.2.3", "?token=guess"), "the-dashboard-token")
    assert allowed(request("10.1.2.3", "?token=the-dashboard-token"), "the-dashboard-token")
    assert allowed(request("10.1.2.3", cookie="the-dashboard-token"), "the-dashboard-token")
