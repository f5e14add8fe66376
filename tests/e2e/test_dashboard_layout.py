"""Every dashboard page in Chromium, at phone (390 px) and desktop (1400 px) width, in every
state the demo takes an operation through (and the ones a person can add to it from the
sandbox and the CLI: a reject with a reason, a cancel, an expiry): nothing is wider than the
screen, ids, times and state chips stay on one line, and the header's words follow the state.
Each page's screenshots are kept (tests/support/dashboard.py says where).

One browser and two pages (one per width) for the whole module: the walk is one test. The
open page is looked at for an order and a message; the other open pages are the same page,
and only their words are read.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from cards.vocabulary import headline
from store import OperationView
from tests.support.dashboard import counts, screens, text_of
from tests.support.demo_samples import demo_samples
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory
from tests.support.waiting import eventually
from workers.domains.finance.demo import RESTING_MARK
from workers.domains.finance.sim.venue import SimVenue

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob"}
REASON = "Price moved 2% since the proposal; wait for the auction"
MARK = Decimal("60000")  # the simulated venue's BTC-PERP mark: the resting buy stays resting
# what each operation's header says, state by state
STORY = {
    "fills": ["Order to confirm", "Filled"],
    "rests then fills in parts": [
        "Order to confirm",
        "Resting on the book",
        "Partially filled",
        "Filled",
    ],
    "preflight refuses": ["Order to confirm", "Refused by pre-check — nothing sent"],
    "message draft": ["Message to approve", "Sent"],
    "rejected": ["Order to confirm", f"Rejected by Bob: {REASON}"],
    "cancelled": ["Order to confirm", "Cancelled by the proposer — nothing executed"],
    "expired": ["Order to confirm", "Expired — nothing executed"],
}


async def view_when(stack: Stack, operation_id: str, **wanted: str) -> dict[str, Any]:
    """The API's view once its state or newest outcome is as `wanted` (state=, outcome=)."""
    found: dict[str, Any] = {}

    async def there() -> bool:
        _, view = await stack.api("GET", f"/api/v1/operations/{operation_id}")
        found.update(view)
        status = (view.get("outcome") or {}).get("status")
        return wanted.get("state", view["state"]) == view["state"] and (
            wanted.get("outcome", status) == status
        )

    await eventually(there, deadline_s=60, what=f"{operation_id} {wanted}")
    return found


async def first_fill(venue_path: Path, operation_id: str) -> None:
    """Until the venue has filled part of the operation's order (one tick of a crossed mark)."""

    async def filled_some() -> bool:
        async with await SimVenue.open(venue_path, create=False) as venue:
            orders = [o for o in await venue.orders() if o.client_id == f"cs-{operation_id}"]
        return bool(orders) and orders[0].filled_qty > 0

    await eventually(filled_some, what="a first partial fill")


async def html(stack: Stack, path: str) -> str:
    async with stack.http.get(stack.bot_url + path) as response:
        return await response.text()


async def test_every_page_fits_a_phone_and_a_desktop_in_every_state(
    make_stack: StackFactory, artifacts: Path, tmp_path: Path
) -> None:
    # the demo's venue: crossed resting orders fill 30% per tick
    stack: Stack = await make_stack(
        "ws", sim_faults="partial_fill=0.3", execution={"venue_tick_s": 1.0}, people=PEOPLE
    )
    offered: dict[str, tuple[dict[str, Any], str]] = {}
    for sample in demo_samples(tmp_path):
        body = {"request_id": f"layout-{sample.name.replace(' ', '-')}", "kind": sample.kind}
        body.update(payload=sample.payload, audience="ops", expires_in_s=3600)
        offered[sample.name] = await stack.offered(body)
    for name, expires_in_s in (("rejected", 3600), ("cancelled", 3600), ("expired", 300)):
        offered[name] = await stack.offered(
            order_request(f"layout-{name}", expires_in_s=expires_in_s)
        )
    said: dict[str, list[str]] = {name: [] for name in offered}

    async def mark(price: Decimal) -> None:
        async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
            await venue.set_mark("BTC-PERP", price)

    async with screens(stack.bot_url, artifacts) as look:

        async def detail(name: str, step: str, **wanted: str) -> None:
            view = await view_when(stack, offered[name][0]["id"], **wanted)
            shown = await look.look(f"/ops/{view['id']}", f"detail-{name.replace(' ', '-')}-{step}")
            words = headline(OperationView.model_validate(view), PEOPLE).words("en")
            assert shown == {"phone": words, "desktop": words}, (name, step)
            said[name].append(words)

        assert counts(await html(stack, "/ops"))["awaiting"] == len(offered)
        await look.look("/ops", "attention-all-awaiting")
        await look.look("/ops/all", "all-awaiting")
        for name in ("fills", "message draft"):  # an order and a message, open
            await detail(name, "open", state="awaiting_confirmation")
        for name in offered.keys() - {"fills", "message draft"}:  # the same page: its words
            view = await view_when(stack, offered[name][0]["id"], state="awaiting_confirmation")
            said[name].append(text_of(await html(stack, f"/ops/{view['id']}"), "headline"))

        for name, outcome in (("fills", "filled"), ("preflight refuses", "preflight_rejected")):
            await stack.click(offered[name][1], "ou_alice")
            await detail(name, outcome, outcome=outcome)
        await stack.click(offered["message draft"][1], "ou_alice")
        await detail("message draft", "sent", outcome="sent")

        resting = "rests then fills in parts"
        await stack.click(offered[resting][1], "ou_alice")
        await detail(resting, "resting", outcome="resting")
        await mark(RESTING_MARK)
        await first_fill(tmp_path / "venue.db", offered[resting][0]["id"])
        await mark(MARK)  # held partly filled, whenever the executor looks next
        await detail(resting, "partially-filled", outcome="partially_filled")
        await mark(RESTING_MARK)
        await detail(resting, "filled", outcome="filled")

        await stack.click(offered["rejected"][1], "ou_bob", "reject", form={"reason": REASON})
        await detail("rejected", "rejected", state="rejected")
        await stack.api("POST", f"/api/v1/operations/{offered['cancelled'][0]['id']}/cancel")
        await detail("cancelled", "cancelled", state="cancelled")
        stack.clock.offset += timedelta(seconds=301)  # nothing else is open by now
        await detail("expired", "expired", state="expired")

        assert await look.look("/ops", "attention-calm") == dict.fromkeys(
            ("phone", "desktop"), "Needs attention"
        )
        await look.look("/ops/all", "all-settled")
        await look.look("/ops/all?outcome=filled", "all-filled")
        await look.look("/ops/all?q=acme-supplier", "all-search")
        await look.look("/ops?lang=zh", "attention-zh")
        await look.look("/ops/all?lang=zh", "all-zh")
        zh = await look.look(f"/ops/{offered['fills'][0]['id']}?lang=zh", "detail-fills-zh")
        assert zh == {"phone": "已成交", "desktop": "已成交"}
        await look.look("/ops/01NOSUCHOPERATION000000000", "not-found")
        assert await look.look("/ops/policy", "policy") == dict.fromkeys(
            ("phone", "desktop"), "Policy history"
        )
        await look.look("/ops/policy?lang=zh", "policy-zh")
        assert await look.look("/ops/delegations", "delegations") == dict.fromkeys(
            ("phone", "desktop"), "Delegations"
        )

    assert said == STORY
    # each look at both widths: two operations open, 9 steps after, 13 lists and pages
    assert look.shots == 2 * (2 + 9 + 13)
