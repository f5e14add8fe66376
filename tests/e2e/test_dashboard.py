"""The read-only dashboard (/ops) shows the one projection in the card's words, never changes
state, and gates non-loopback clients."""

from __future__ import annotations

import json
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from bot.api.dashboard import allowed
from bot.api.dashboard_view import outcome_text
from cards.vocabulary import headline
from store import OperationView
from tests.support.dashboard import text_of
from tests.support.demo_samples import demo_samples
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory, settled
from tests.support.waiting import eventually
from workers.domains.finance.demo import RESTING_MARK
from workers.domains.finance.sim.venue import SimVenue

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob"}


async def page(stack: Stack, path: str) -> str:
    async with stack.http.get(f"{stack.bot_url}{path}") as response:
        assert response.status == 200, path
        assert response.content_type == "text/html"
        return await response.text()


async def test_the_dashboard_shows_what_the_api_shows_and_browsing_changes_nothing(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", people=PEOPLE)
    view, message_id = await stack.offered(order_request("dashboard"))
    await stack.click(message_id, "ou_alice")
    api = await settled(stack, view["id"], "filled")
    before = await stack.store.get(view["id"])

    listing = await page(stack, "/ops/all")
    assert f'<tr data-op="{view["id"]}">' in listing and ">Filled</span>" in listing
    assert "SIMULATED" in listing
    detail = await page(stack, f"/ops/{view['id']}")
    assert (
        text_of(detail, "headline")
        == headline(OperationView.model_validate(api), PEOPLE).words("en")
        == "Filled"
    )
    assert (
        text_of(detail, "outcome")
        == outcome_text(OperationView.model_validate(api))
        == "Filled · SIMULATED"
    )
    assert api["confirm_digest"] in detail and f"cs-{view['id']}" in detail
    assert "Confirmed by Alice at " in detail and "ou_alice" not in detail  # people by name
    zh = await page(stack, f"/ops/{view['id']}?lang=zh")
    assert text_of(zh, "headline") == "已成交" and "模拟" in zh and "由 Alice 于" in zh
    assert view["id"] not in await page(stack, "/ops/all?state=rejected")
    assert view["id"] in await page(stack, "/ops/all?outcome=filled&q=btc-perp")
    async with stack.http.get(f"{stack.bot_url}/", allow_redirects=False) as response:
        assert response.status == 302 and response.headers["Location"] == "/ops"

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


# each sample's outcomes, in the order the card and the dashboard show them
STATUSES = {
    "fills": ("filled",),
    "rests then fills in parts": ("resting", "partially_filled", "filled"),
    "preflight refuses": ("preflight_rejected",),
    "message draft": ("sent",),
}


async def test_the_dashboard_and_the_card_agree_in_every_state_the_demo_reaches(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    # the demo's venue: crossed resting orders fill 30% per (slow) tick
    stack: Stack = await make_stack(
        "ws", sim_faults="partial_fill=0.3", execution={"venue_tick_s": 1.5}, people=PEOPLE
    )
    seen: list[str] = []

    async def agree(operation_id: str, message_id: str, status: str | None) -> None:
        """The dashboard's header and outcome titles are on the card, as the API has it."""

        async def same() -> bool:
            _, api = await stack.api("GET", f"/api/v1/operations/{operation_id}")
            if (api["outcome"] or {}).get("status") != status:
                return False
            shown = await page(stack, f"/ops/{operation_id}")
            card = json.dumps(stack.card(message_id), ensure_ascii=False)
            words = text_of(shown, "headline")
            titles = [t for t in text_of(shown, "outcome").split(" → ") if t]
            if (
                words != headline(OperationView.model_validate(api), PEOPLE).words("en")
                or words not in card
            ):
                return False
            if titles != [
                t for t in outcome_text(OperationView.model_validate(api)).split(" → ") if t
            ]:
                return False
            if all(title in card for title in titles):
                seen.append(words)
                return True
            return False

        await eventually(same, deadline_s=20, what=f"{operation_id} at {status}")

    for sample in demo_samples(tmp_path):
        name = sample.name.replace(" ", "-")
        body = {"request_id": f"agree-{name}", "kind": sample.kind, "audience": "ops"}
        body["payload"] = sample.payload
        view, message_id = await stack.offered(body)
        await agree(view["id"], message_id, None)
        await stack.click(message_id, "ou_alice")
        for status in STATUSES[sample.name]:
            if status == "partially_filled":
                async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
                    await venue.set_mark("BTC-PERP", RESTING_MARK)
            await agree(view["id"], message_id, status)
    assert seen == [
        *("Order to confirm", "Filled"),
        *("Order to confirm", "Resting on the book", "Partially filled", "Filled"),
        *("Order to confirm", "Refused by pre-check — nothing sent"),
        *("Message to approve", "Sent"),
    ]
