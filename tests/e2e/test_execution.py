"""After the click: the executor runs the operation once and the original card tells the truth.

The bot runs in-process with the simulated venue in the test's directory; the venue is
opened again here (a second connection to its SQLite file, like `countersign venue orders`)
to see what it really received.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from store import ExecutionLedger
from tests.support.backends import Backend
from tests.support.bot_processes import bot_env, bot_processes, write_config
from tests.support.factories import message_request, order_request
from tests.support.metrics import summarized
from tests.support.processes import cli, free_port
from tests.support.stack import DEV_TOKEN, Stack, StackFactory, card_says, card_text, settled
from tests.support.waiting import eventually
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import VenueOrderState


async def venue_order(tmp_path: Path, operation_id: str) -> VenueOrderState | None:
    async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
        return await venue.lookup(client_id_for(operation_id))


async def test_a_confirmed_order_fills_once_and_the_card_ends_filled_simulated(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack: Stack = await make_stack("ws")
    view, message_id = await stack.offered(order_request("fills"))
    reply = await stack.click(message_id, "ou_alice")
    assert reply["toast"]["type"] == "success"

    await card_says(stack, message_id, "Filled · SIMULATED", "Filled 0.010 at 60,000")
    text = card_text(stack, message_id)
    assert "Stop loss 57,000: armed" in text and "Take profit 65,000: armed" in text
    assert "Fees 0.30 USDC" in text  # 0.01 x 60000 x 0.0005 taker, to the cent
    assert "Confirmed by <at id=ou_alice></at>" in text
    assert stack.card(message_id)["header"]["template"] == "green"

    api_view = await settled(stack, view["id"], "filled")
    outcome = api_view["outcome"]
    assert outcome["stage"] == "initial" and outcome["detail"]["filled_qty"] == "0.010"
    assert Decimal(outcome["detail"]["fees"]) == Decimal("0.3")
    assert [p["status"] for p in outcome["detail"]["protective"]] == ["accepted", "accepted"]
    assert api_view["state"] == "outcome_observed"

    order = await venue_order(tmp_path, view["id"])
    assert order is not None and order.submit_count == 1 and order.status == "filled"
    # the CLI shows the same projection
    client = ("--url", stack.bot_url, "--token", DEV_TOKEN)
    shown = await cli("show", view["id"], *client)
    assert shown.code == 0, shown.err
    assert shown.out.startswith(f"{view['id']}  Filled  SIMULATED")
    assert "outcome:   Filled · SIMULATED" in shown.out  # the card's words
    assert "Filled 0.010 at 60,000" in shown.out and "Fees 0.30 USDC" in shown.out
    assert "Stop loss 57,000: armed" in shown.out
    as_json = await cli("show", view["id"], *client, "--json")
    assert json.loads(as_json.out)["outcomes"] == api_view["outcomes"]
    ledger = ExecutionLedger(stack.store)
    assert await ledger.reservation_state(view["id"]) == "converted"  # the position holds it
    attempt = await ledger.attempt(view["id"])
    assert attempt is not None and attempt.client_id == client_id_for(view["id"])


async def test_a_lost_response_is_reconciled_to_the_venues_truth_never_resubmitted(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack: Stack = await make_stack("ws", sim_faults="lose_response")
    view, message_id = await stack.offered(order_request("lost-response"))
    await stack.click(message_id, "ou_bob")

    await card_says(
        stack,
        message_id,
        "Submission unknown — reconciling · SIMULATED",
        "Reconciled: Filled · SIMULATED",
    )
    api_view = await settled(stack, view["id"], "filled")
    stages = [(o["stage"], o["status"]) for o in api_view["outcomes"]]
    assert stages[0] == ("initial", "unknown") and stages[-1] == ("reconciled", "filled"), stages
    unknown = api_view["outcomes"][0]
    assert api_view["outcome"]["reconciles_digest"] == unknown["outcome_digest"]
    order = await venue_order(tmp_path, view["id"])
    assert order is not None and order.submit_count == 1
    assert api_view["execution"]["state"] == "reconciled"
    await summarized(
        stack.http, stack.bot_url, lambda r: r["components"]["executor"]["unknown_outstanding"] == 0
    )
    _, ready = await stack.api("GET", "/readyz")
    executor = ready["components"]["executor"]
    assert executor["state"] == "running" and executor["passes"] >= 2
    assert executor["unknown_outstanding"] == 0 and executor["failures"] == 0


async def test_a_submission_the_venue_never_got_is_concluded_not_executed(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack: Stack = await make_stack("ws", sim_faults="timeout")
    view, message_id = await stack.offered(order_request("never-arrived"))
    await stack.click(message_id, "ou_alice")

    await card_says(stack, message_id, "Reconciled: Not executed — it was never received")
    api_view = await settled(stack, view["id"], "not_submitted")
    assert [o["status"] for o in api_view["outcomes"]] == ["unknown", "not_submitted"]
    assert await venue_order(tmp_path, view["id"]) is None
    assert await ExecutionLedger(stack.store).reservation_state(view["id"]) == "released"


async def test_an_order_off_the_lot_is_refused_at_filing_and_no_card_is_offered(
    make_stack: StackFactory,
) -> None:
    """Issue 30: the pre-check runs at filing; nothing confirmable can never run."""
    stack: Stack = await make_stack("ws")
    body = order_request("off-lot")
    body["payload"]["quantity"] = "0.0105"
    status, refused = await stack.post("/api/v1/operations", body)
    assert status == 422 and refused["error"]["code"] == "precheck_would_refuse", refused
    [problem] = refused["error"]["fields"]
    assert (
        problem["field"] == "payload.quantity" and "not a multiple of the lot" in problem["reason"]
    )
    assert list((await stack.store.list_operations(limit=10)).items) == []
    assert [m for m in stack.state.messages.values() if m.msg_type == "interactive"] == []


async def test_a_reduce_only_order_larger_than_the_position_is_preflight_rejected_after_the_claim(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    """The position is only known when the order is about to run: this refusal stays after
    the claim, and nothing is sent."""
    stack: Stack = await make_stack("ws")
    body = order_request("reduce-too-much")
    body["payload"].update(side="sell", reduce_only=True)
    body["payload"].pop("protective")
    view, message_id = await stack.offered(body)
    await stack.click(message_id, "ou_alice")

    await card_says(stack, message_id, "Refused by pre-check — nothing sent · SIMULATED")
    api_view = await settled(stack, view["id"], "preflight_rejected")
    assert api_view["outcome"]["detail"]["code"] == "reduce_only_would_increase"
    assert "propose" in api_view["outcome"]["detail"]["hint"]
    assert await venue_order(tmp_path, view["id"]) is None
    assert await ExecutionLedger(stack.store).attempt(view["id"]) is None


async def test_a_resting_order_fills_later_and_the_card_follows(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack: Stack = await make_stack("ws")
    body = order_request("rests")
    body["payload"]["limit_price"] = "59000"
    body["payload"].pop("protective")
    view, message_id = await stack.offered(body)
    await stack.click(message_id, "ou_alice")
    await card_says(stack, message_id, "Resting on the book · SIMULATED")
    assert await ExecutionLedger(stack.store).reservation_state(view["id"]) == "converted"

    async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
        await venue.set_mark("BTC-PERP", Decimal("58900"))
    await card_says(stack, message_id, "Filled · SIMULATED", "Filled 0.010 at 59,000")
    assert "Resting on the book" not in card_text(stack, message_id)  # progress replaces it
    api_view = await settled(stack, view["id"], "filled")
    assert [o["status"] for o in api_view["outcomes"]] == ["resting", "filled"]
    assert api_view["execution"]["state"] == "completed"


async def test_two_orders_that_fit_alone_but_not_together_one_is_refused(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack: Stack = await make_stack("ws")
    offered = [await stack.offered(budget_pair_request(f"budget-{n}")) for n in range(2)]
    replies = [await stack.click(message_id, "ou_alice") for _view, message_id in offered]
    assert all(reply["toast"]["type"] == "success" for reply in replies)

    ids = [view["id"] for view, _message_id in offered]
    statuses = await outcome_statuses(stack, ids)
    assert sorted(statuses) == ["reservation_refused", "resting"], statuses
    refused = ids[statuses.index("reservation_refused")]
    _, fresh = await stack.api("GET", f"/api/v1/operations/{refused}")
    assert "exposure budget of sim-main is 100000" in fresh["outcome"]["detail"]["reason"]
    assert await venue_order(tmp_path, refused) is None
    assert await ExecutionLedger(stack.store).reservation_state(refused) is None


def budget_pair_request(name: str) -> dict[str, Any]:
    """An order that rests and holds 59030 of the 100000 budget: two fit alone, not together."""
    body = order_request(name)
    body["payload"].update(quantity="1", limit_price="59000", max_fee="30")
    body["payload"].pop("protective")
    return body


async def outcome_statuses(stack: Stack, operation_ids: list[str]) -> list[str]:
    statuses = []
    for operation_id in operation_ids:

        async def has_outcome(operation_id: str = operation_id) -> bool:
            _, fresh = await stack.api("GET", f"/api/v1/operations/{operation_id}")
            return fresh["outcome"] is not None

        await eventually(has_outcome, deadline_s=15)
        _, fresh = await stack.api("GET", f"/api/v1/operations/{operation_id}")
        statuses.append(fresh["outcome"]["status"])
    return statuses


async def test_two_replicas_confirm_two_orders_at_once_and_only_one_reserves(
    make_stack: StackFactory, backend: Backend, tmp_path: Path
) -> None:
    stack: Stack = await make_stack("ws")
    app_id = stack.sandbox.app_id
    async with bot_processes() as start:
        # The replica shares the store and the venue file (tmp_path/venue.db) with this bot.
        config = write_config(tmp_path / "replica.toml", backend, stack.sandbox, free_port(), "ws")
        replica = await start(config, bot_env(stack.sandbox))
        await eventually(
            lambda: stack.hub.longconn.connected(app_id) == 2, deadline_s=30, woken_by=stack.state
        )
        offered = [await stack.offered(budget_pair_request(f"race-{n}")) for n in range(2)]

        # Round-robin dispatch (Lark picks at random; the sandbox can take clients in turn):
        # each replica gets one of the two clicks, at the same moment, whichever comes first.
        status, settings = await stack.control("POST", "/dispatch", {"mode": "round_robin"})
        assert status == 200 and settings["dispatch"] == "round_robin", settings
        replies = await asyncio.gather(
            *(stack.click(message_id, "ou_alice") for _view, message_id in offered)
        )
        assert [reply["toast"]["type"] for reply in replies] == ["success", "success"]
        ids = [view["id"] for view, _message_id in offered]
        statuses = await outcome_statuses(stack, ids)
        assert sorted(statuses) == ["reservation_refused", "resting"], statuses

        _, here = await stack.api("GET", "/readyz")
        _, there = await replica.readyz()
        clicks = [r["components"]["callback_consumer"]["events"] for r in (here, there)]
        assert clicks == [1, 1], clicks
        async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
            orders = await venue.orders()
        assert len(orders) == 1 and orders[0].submit_count == 1
        refused = ids[statuses.index("reservation_refused")]
        assert await venue_order(tmp_path, refused) is None
        assert await replica.terminate() == 0


async def test_an_approved_message_goes_to_the_counterparty_once_with_a_receipt_in_ops(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    view, message_id = await stack.offered(message_request("send-once"))
    assert stack.state.messages[message_id].chat_id == "oc_ops"
    assert not [m for m in stack.state.messages.values() if m.chat_id == "oc_acme"]

    await stack.click(message_id, "ou_alice")
    await card_says(stack, message_id, "Sent")
    api_view = await settled(stack, view["id"], "sent")
    sent_id = api_view["outcome"]["detail"]["message_id"]

    in_acme = [m for m in stack.state.messages.values() if m.chat_id == "oc_acme"]
    assert [m.message_id for m in in_acme] == [sent_id]
    assert json.loads(in_acme[0].content)["text"] == "Hello Acme, delivery on Friday."
    assert in_acme[0].uuid == client_id_for(view["id"])

    def receipt() -> bool:
        return any(
            m.chat_id == "oc_ops" and m.msg_type == "text" and sent_id in m.content
            for m in stack.state.messages.values()
        )

    await eventually(receipt, woken_by=stack.state)
    assert not any(view["id"] in m.content for m in in_acme)  # no internals to the counterparty


def messages_in(stack: Stack, chat_id: str) -> list[Any]:
    return [m for m in stack.state.messages.values() if m.chat_id == chat_id]


async def unknown_send(stack: Stack, request_id: str) -> tuple[dict[str, Any], str]:
    """A confirmed message that Lark posts but whose answer is lost; the retries then time out."""
    view, message_id = await stack.offered(message_request(request_id))
    status, _ = await stack.control("POST", "/faults", {"lose_next_create_answers": 1})
    assert status == 200
    await stack.click(message_id, "ou_alice")
    await eventually(lambda: len(messages_in(stack, "oc_acme")) == 1, woken_by=stack.state)
    status, _ = await stack.control("POST", "/faults", {"latency_ms": 3000})  # > 2 s timeout
    assert status == 200
    await settled(stack, view["id"], "unknown")
    return view, message_id


async def test_an_unknown_send_is_reconciled_with_the_same_uuid_and_posts_once(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    view, message_id = await unknown_send(stack, "send-unknown")
    status, _ = await stack.control("POST", "/faults", {"latency_ms": 0})
    assert status == 200

    api_view = await settled(stack, view["id"], "sent")
    assert [(o["stage"], o["status"]) for o in api_view["outcomes"]] == [
        ("initial", "unknown"),
        ("reconciled", "sent"),
    ]
    [posted] = messages_in(stack, "oc_acme")  # the re-send was deduplicated by its uuid
    assert posted.uuid == client_id_for(view["id"])
    assert api_view["outcome"]["detail"]["message_id"] == posted.message_id
    await card_says(stack, message_id, "Reconciled: Sent")


async def test_an_unknown_send_older_than_the_dedupe_window_is_left_to_people(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    view, message_id = await unknown_send(stack, "send-too-late")
    stack.clock.offset = timedelta(hours=2)  # the reconciler only gets to it two hours on
    status, _ = await stack.control("POST", "/faults", {"latency_ms": 0})
    assert status == 200

    api_view = await settled(stack, view["id"], "unresolved")
    assert "one-hour uuid dedupe window" in api_view["outcome"]["detail"]["reason"]
    assert len(messages_in(stack, "oc_acme")) == 1  # never sent again
    await card_says(stack, message_id, "Reconciled: Unresolved — a person must check it")
