"""Issue 32's acceptance: an order confirmed on a Lark card, executed on the local Hyperliquid.

The bot runs in-process (tests/support/stack.py) against larksandbox through the unmodified
lark-oapi SDK, with one finance account on Hyperliquid: the hlsandbox this test serves
(tests/support/venue_harness.py), reached by the adapter through the unmodified
hyperliquid SDK's wire format. The card is the original one, patched as outcomes arrive; the
sandbox's own counts say how many requests named the order's cloid and how many landed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory, card_says, card_text, settled
from tests.support.venue_harness import HL_KEY_ENV, VenueHarness, open_harness
from workers.domains.execution import client_id_for

# the bot and the sandbox share this test's event loop: a first order's reads (the agent's
# role, meta) must not be cut short by a busy loop, or a plain fill starts as "unknown"
REQUEST_TIMEOUT_S = 3.0
# the executor waits longer than the adapter's own request timeout, so the adapter decides
# what an unanswered request means (and an order that is not found is never taken for a
# request still in flight)
EXECUTION = {"submit_timeout_s": 2 * REQUEST_TIMEOUT_S, "not_found_after_s": 3 * REQUEST_TIMEOUT_S}


@pytest.fixture
async def hl(tmp_path: Path) -> AsyncIterator[VenueHarness]:
    """The hlsandbox with its funded account and approved agent (requested before the
    stack, so it is stopped after the bot)."""
    async with open_harness("hyperliquid", tmp_path) as harness:
        yield harness


async def hl_stack(make_stack: StackFactory, hl: VenueHarness) -> Stack:
    """The bot with its finance table naming the Hyperliquid account (network emulator) and
    the agent key in the environment its config is resolved with (never in the table)."""
    table = hl.finance_table()
    table["hyperliquid"]["request_timeout_s"] = REQUEST_TIMEOUT_S
    assert hl.environ()[HL_KEY_ENV] not in str(table)  # the key: named, never written
    stack: Stack = await make_stack(
        "ws", domains={"finance": table}, environ=hl.environ(), execution=EXECUTION
    )
    return stack


async def confirmed(stack: Stack, hl: VenueHarness, request_id: str) -> tuple[Any, str]:
    """An order proposed through the API and confirmed on its card by Alice."""
    view, message_id = await stack.offered(order_request(request_id, payload=hl.payload()))
    assert view["world"] == "emulator", view["world"]
    reply = await stack.click(message_id, "ou_alice")
    assert reply["toast"]["type"] == "success", reply
    return view, message_id


async def test_a_confirmed_order_fills_on_the_emulator_and_the_card_says_so(
    hl: VenueHarness, make_stack: StackFactory
) -> None:
    stack = await hl_stack(make_stack, hl)
    view, message_id = await confirmed(stack, hl, "hl-fills")

    await card_says(
        stack, message_id, "Filled · EMULATOR", "Filled 0.001 at 60,000", "Fees 0.027 USDC"
    )
    api_view = await settled(stack, view["id"], "filled")
    # a first answer slower than the adapter's request timeout (a busy machine) is unknown and
    # reconciled to the same one fill: either way one order, filled, and the card says so
    assert [(o["stage"], o["status"]) for o in api_view["outcomes"]] in (
        [("initial", "filled")],
        [("initial", "unknown"), ("reconciled", "filled")],
    )
    detail = api_view["outcome"]["detail"]
    assert (detail["venue"], detail["world"]) == ("hyperliquid", "emulator")
    client_id = client_id_for(view["id"])
    assert (await hl.seen(client_id), await hl.placed(client_id)) == (1, 1)
    key = hl.environ()[HL_KEY_ENV].removeprefix("0x")
    assert key not in card_text(stack, message_id) and key not in str(api_view)


async def test_a_dropped_answer_ends_reconciled_with_one_order(
    hl: VenueHarness, make_stack: StackFactory
) -> None:
    stack = await hl_stack(make_stack, hl)
    await hl.inject("answer_lost_after_commit")  # the order lands; its answer never comes
    view, message_id = await confirmed(stack, hl, "hl-dropped")

    await card_says(stack, message_id, "Reconciled: Filled · EMULATOR", "Fees 0.027 USDC")
    api_view = await settled(stack, view["id"], "filled")
    assert [(o["stage"], o["status"]) for o in api_view["outcomes"]] == [
        ("initial", "unknown"),
        ("reconciled", "filled"),
    ]
    client_id = client_id_for(view["id"])
    assert (await hl.seen(client_id), await hl.placed(client_id)) == (1, 1)


async def fenced(stack: Stack, hl: VenueHarness, request_id: str) -> str:
    """An order whose request is held in flight until the adapter fences its nonce: the
    card's message id once the operation ended not_submitted."""
    await hl.inject("never_landed")
    view, message_id = await confirmed(stack, hl, request_id)
    await card_says(stack, message_id, "Reconciled: Not executed", "fenced")
    api_view = await settled(stack, view["id"], "not_submitted")
    assert [(o["stage"], o["status"]) for o in api_view["outcomes"]] == [
        ("initial", "unknown"),
        ("reconciled", "not_submitted"),
    ]
    await hl.settle()  # the held request arrives late: its nonce is used, it cannot land
    client_id = client_id_for(view["id"])
    assert (await hl.seen(client_id), await hl.placed(client_id)) == (1, 0)
    return message_id


async def test_a_fenced_timeout_ends_not_submitted_and_asks_for_a_new_confirmation(
    hl: VenueHarness, make_stack: StackFactory
) -> None:
    stack = await hl_stack(make_stack, hl)
    message_id = await fenced(stack, hl, "hl-fenced")
    text = card_text(stack, message_id)
    assert "Not executed — it was never received · EMULATOR" in text
    assert "new confirmation" in text, text
