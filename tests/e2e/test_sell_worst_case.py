"""Issue 30's high finding, end to end through the sandbox and the unmodified SDK, both
backends: `SELL 3 @ 0.5` at a 60,000 mark fills at 60,000, so it is weighed at 180,000
everywhere: it needs the large-order quorum and a fresh web sign-in, its reservation holds
more than 180,000 and the 100,000 budget refuses it, nothing reaches the venue; and a fee
cap below the fee at the mark (90) is a 422 at filing, with no card."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from store import ExecutionLedger
from tests.support.factories import LARGE_ORDERS_RULE, TRIO_AUDIENCE, order_request
from tests.support.stack import Stack, StackFactory, card_says, settled
from tests.support.web_decide import forms, signed_in
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}
REAUTH = {"reauth_above": "100000", "reauth_currency": "USDC"}


def sell_3_at_half(request_id: str, max_fee: str) -> dict[str, Any]:
    body = order_request(request_id)
    body["payload"].pop("protective")
    body["payload"].update(side="sell", quantity="3.000", limit_price="0.5", max_fee=max_fee)
    return body


async def sell_stack(make_stack: StackFactory) -> Stack:
    stack: Stack = await make_stack(
        "ws",
        audiences=[TRIO_AUDIENCE],
        approval_rules=[LARGE_ORDERS_RULE],
        web=REAUTH,
        people=PEOPLE,
    )
    return stack


async def test_a_fee_cap_below_the_fee_at_the_mark_is_refused_at_filing(
    make_stack: StackFactory,
) -> None:
    stack = await sell_stack(make_stack)
    body = sell_3_at_half("sell-cheap-cap", max_fee="0.01")
    for path in ("/api/v1/operations", "/api/v1/operations/check"):
        status, answer = await stack.post(path, body)
        assert status == 422 and answer["error"]["code"] == "precheck_would_refuse", answer
        [problem] = answer["error"]["fields"]
        assert problem["field"] == "payload.max_fee", problem
        assert "the fee could reach 90" in problem["reason"] and "max_fee" in problem["fix"]
    assert list((await stack.store.list_operations(limit=10)).items) == []
    assert [m for m in stack.state.messages.values() if m.msg_type == "interactive"] == []


async def test_a_sell_far_below_the_mark_is_weighed_at_the_mark_and_refused_by_the_budget(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack = await sell_stack(make_stack)
    view, message_id = await stack.offered(sell_3_at_half("sell-at-half", max_fee="100"))
    op_id = view["id"]

    # the approval amount is the mark's: the large-order quorum applies
    approval = view["approval"]
    assert approval["notional"] == "180000.00 USDC", approval
    assert (approval["required"], approval["rule"]) == (2, "large-orders")
    await card_says(stack, message_id, "Needs 2 of 3 operators — above 50,000.00 USDC")

    # and the web asks a sign-in younger than 5 minutes before Confirm (above 100,000)
    async with signed_in(stack, "ou_alice") as alice:
        assert "confirm" in forms((await alice.get(f"/ops/{op_id}")).html)
        stack.clock.offset += timedelta(seconds=301)
        page = await alice.get(f"/ops/{op_id}")
        assert 'id="reauth"' in page.html and "confirm" not in forms(page.html)

    first = await stack.click(message_id, "ou_alice")
    assert first["toast"]["type"] == "success", first
    assert "notional 180,000.00 USDC" in first["dialog"]["text"]
    assert await stack.store.claim_count(op_id) == 0  # one confirmation is not enough
    last = await stack.click(message_id, "ou_bob")
    assert last["toast"]["type"] == "success", last

    # the reservation holds the worst case (180,000 + the 100 fee cap): over the budget
    await card_says(stack, message_id, "Over the exposure budget — nothing sent")
    done = await settled(stack, op_id, "reservation_refused")
    reason = done["outcome"]["detail"]["reason"]
    held = re.search(r"this order ([0-9.]+) exceed", reason)
    assert held is not None, reason
    assert Decimal(held[1]) >= Decimal(180000), reason
    assert "exposure budget of sim-main is 100000" in reason
    assert done["approval"]["confirmed_by"] == ["ou_alice", "ou_bob"]
    # nothing reached the venue
    assert await ExecutionLedger(stack.store).attempt(op_id) is None
    async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
        assert await venue.lookup(client_id_for(op_id)) is None
        assert await venue.orders("sim-main") == []
