"""The read-only dashboard (/ops) shows the one projection, never changes state, and gates
non-loopback clients."""

from __future__ import annotations

import re
from html import escape, unescape
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from bot.api.dashboard import allowed
from bot.api.dashboard_html import outcome_text
from bot.demo import RESTING_MARK, SAMPLES
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory
from tests.support.waiting import eventually
from workers.domains.finance.sim.venue import SimVenue


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
    assert "Filled · SIMULATED" in outcome_text(api)
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
    # With a token configured, loopback shows it too: a same-host proxy adding no forwarding
    # header (nginx's plain proxy_pass) would otherwise open the dashboard to the internet.
    assert not allowed(request("127.0.0.1"), "the-dashboard-token")
    assert allowed(request("127.0.0.1", "?token=the-dashboard-token"), "the-dashboard-token")


def card_outcomes(card: dict[str, Any]) -> list[str]:
    """The card's outcome titles, in order ("**Filled · SIMULATED**" lines)."""
    titles = []
    for element in card["body"]["elements"]:
        if element.get("tag") != "markdown" or element.get("element_id"):
            continue  # the SIMULATED banner and the status line have element ids
        content = element.get("content", "")
        if content.startswith("**") and content.endswith("**"):
            titles.append(content.strip("*"))
    return titles


def dashboard_outcomes(html: str) -> list[str]:
    found = re.search(r'<span id="outcome">(.*?)</span>', html)
    assert found is not None
    text = unescape(found[1])
    return [re.sub(r" \(.*\)$", "", part) for part in text.split(" → ")] if text else []


async def test_the_dashboard_and_the_card_agree_in_every_state_the_demo_reaches(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    # the demo's venue: crossed resting orders fill 30% per (slow) tick
    stack: Stack = await make_stack(
        "ws", sim_faults="partial_fill=0.3", execution={"venue_tick_s": 1.5}
    )
    seen: set[str] = set()

    async def agree(operation_id: str, message_id: str, phrase: str) -> None:
        async def same() -> bool:
            card = card_outcomes(stack.card(message_id))
            shown = dashboard_outcomes(await page(stack, f"/ops/{operation_id}"))
            if card == shown and card and phrase in card[-1]:
                seen.add(card[-1])
                return True
            return False

        await eventually(same, deadline_s=20)

    for sample in SAMPLES:
        name = sample.name.replace(" ", "-")
        body = {"request_id": f"agree-{name}", "kind": sample.kind, "audience": "ops"}
        body["payload"] = sample.payload
        view, message_id = await stack.offered(body)
        assert card_outcomes(stack.card(message_id)) == []
        assert dashboard_outcomes(await page(stack, f"/ops/{view['id']}")) == []
        await stack.click(message_id, "ou_alice")
        for phrase in sample.expect:
            if phrase.startswith("Partially filled"):
                async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
                    await venue.set_mark("BTC-PERP", RESTING_MARK)
            await agree(view["id"], message_id, phrase)
    assert seen == {phrase for sample in SAMPLES for phrase in sample.expect}, seen
