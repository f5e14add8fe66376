"""N of M through the sandbox and the unmodified SDK: a rule by amount asks two of three
operators; one person counts once; a veto closes it; replicas racing for the last
confirmation claim once; the card shows the progress and asks a second look."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kernel.reasons import Reason
from store import State
from tests.support.backends import Backend
from tests.support.bot_processes import BotProcess, bot_env, bot_processes, write_config
from tests.support.factories import LARGE_ORDERS_RULE, TRIO_AUDIENCE, big_order, order_request
from tests.support.processes import free_port
from tests.support.stack import Stack, StackFactory, button_value, card_says, settled
from tests.support.waiting import eventually
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue

TRIO = TRIO_AUDIENCE
LARGE = LARGE_ORDERS_RULE
POLICY = {"audiences": [TRIO], "approval_rules": [LARGE]}
# every order of the race needs two: above 500, so that four rounds fit the account's budget
RACE_POLICY = {"audiences": [TRIO], "approval_rules": [{**LARGE, "above": "500"}]}


def toast(reply: dict[str, Any]) -> tuple[str, str]:
    return reply["toast"]["type"], reply["toast"]["content"]


async def test_the_amount_decides_how_many_must_confirm(make_stack: StackFactory) -> None:
    stack = await make_stack("ws", **POLICY)
    small = await stack.propose(order_request("small"))
    big = await stack.propose(big_order("big"))

    assert small["approval"]["required"] == 1 and small["approval"]["rule"] is None
    assert big["approval"] == {
        "required": 2,
        "approvers": ["ou_alice", "ou_bob", "ou_carol"],
        "rule": "large-orders",
        "threshold": "50,000 USDC",
        "notional": "60000.00 USDC",
        "why": "above 50,000 USDC",
        "confirmed_by": [],
        "delegated": {},
    }


async def test_two_of_three_counts_alice_once_then_bob_claims_and_it_runs_once(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack("ws", **POLICY)
    view, message_id = await stack.offered(big_order("two-of-three"))
    await card_says(stack, message_id, "Needs 2 of 3 operators — above 50,000.00 USDC")

    first = await stack.click(message_id, "ou_alice")
    assert first["dialog"]["title"] == "Confirm this operation?"  # the second look
    assert "notional 60,000.00 USDC" in first["dialog"]["text"]
    assert toast(first) == ("success", "Confirmation counted: 1 of 2. Waiting for the others.")
    assert await stack.store.claim_count(view["id"]) == 0
    await card_says(stack, message_id, "1 of 2 confirmed: <at id=ou_alice></at>")

    again = await stack.click(message_id, "ou_alice")
    assert again["toast"]["type"] == "error"
    assert "already confirmed" in again["toast"]["content"]
    assert await stack.store.claim_count(view["id"]) == 0

    last = await stack.click(message_id, "ou_bob")
    assert last["toast"]["type"] == "success", last
    assert await stack.store.claim_count(view["id"]) == 1
    done = await settled(stack, view["id"], "filled")
    assert done["approval"]["confirmed_by"] == ["ou_alice", "ou_bob"]
    assert len(done["outcomes"]) == 1  # executed once
    await card_says(stack, message_id, "Confirmed by <at id=ou_alice></at>, <at id=ou_bob></at>")

    refused = [c.reason_code for c in await stack.store.confirmations(view["id"]) if not c.accepted]
    assert refused == [Reason.ALREADY_CONFIRMED.value]


async def test_a_reject_after_a_confirmation_is_a_veto(make_stack: StackFactory) -> None:
    stack = await make_stack("ws", **POLICY)
    view, message_id = await stack.offered(big_order("veto"))
    await stack.click(message_id, "ou_alice")
    vetoed = await stack.click(message_id, "ou_bob", button="reject")
    assert vetoed["toast"]["type"] == "success"
    assert "dialog" not in vetoed or vetoed["dialog"] is None  # no second look for a veto

    op = await stack.store.get(view["id"])
    assert op is not None and op.state is State.REJECTED
    assert await stack.store.claim_count(view["id"]) == 0
    await card_says(stack, message_id, "Rejected by")


async def confirm_together(stack: Stack, message_id: str, value: dict[str, Any]) -> list[Any]:
    return list(
        await asyncio.gather(
            stack.click(message_id, "ou_bob", value=value),
            stack.click(message_id, "ou_carol", value=value),
        )
    )


async def clicks_received(stack: Stack, replica: BotProcess) -> list[int]:
    """Card clicks each process has taken so far: this one's, then the replica's."""
    _, here = await stack.api("GET", "/readyz")
    _, there = await replica.readyz()
    return [body["components"]["callback_consumer"]["events"] for body in (here, there)]


async def test_two_replicas_racing_for_the_last_confirmation_claim_once(
    make_stack: StackFactory, backend: Backend, tmp_path: Path
) -> None:
    """Bob and Carol confirm at the same moment, one click on each of two bot processes on
    one store: one claim, one execution and one venue order, every round."""
    stack = await make_stack("ws", **RACE_POLICY)
    app_id = stack.sandbox.app_id
    async with bot_processes() as start:
        config = write_config(
            tmp_path / "replica.toml", backend, stack.sandbox, free_port(), "ws", **RACE_POLICY
        )
        replica = await start(config, bot_env(stack.sandbox))
        await eventually(
            lambda: stack.hub.longconn.connected(app_id) == 2, deadline_s=30, woken_by=stack.state
        )
        # Lark hands each push to a connected client at random; the sandbox can take them in
        # turn, so two clicks pushed one after the other always land on different processes.
        status, settings = await stack.control("POST", "/dispatch", {"mode": "round_robin"})
        assert status == 200 and settings["dispatch"] == "round_robin", settings
        operation_ids = []
        for round_ in range(4):
            view, message_id = await stack.offered(order_request(f"race-{round_}"))
            assert view["approval"]["required"] == 2
            operation_ids.append(view["id"])
            value = button_value(stack, message_id)
            await stack.click(message_id, "ou_alice", value=value)
            before = await clicks_received(stack, replica)
            replies = await confirm_together(stack, message_id, value)
            after = await clicks_received(stack, replica)
            # one racing click on each process: the race crossed processes
            assert [b - a for a, b in zip(before, after, strict=True)] == [1, 1], (before, after)

            assert all(reply["status"] == "answered" for reply in replies), replies
            kinds = [reply["toast"]["type"] for reply in replies]
            # one is told it claimed, the other that it is claimed; past the ack budget on a
            # loaded machine either may be answered "processing" instead. Never two claims.
            assert kinds.count("success") <= 1 and set(kinds) <= {"success", "error", "info"}
            assert "error" in kinds or "info" in kinds, replies
            assert await stack.store.claim_count(view["id"]) == 1
            done = await settled(stack, view["id"], "filled")
            assert len(done["outcomes"]) == 1
            assert len(done["approval"]["confirmed_by"]) == 2
        assert await replica.terminate() == 0

    # the venue took one order per operation, submitted once (its protective legs carry
    # client ids of their own)
    async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
        orders = await venue.orders()
    placed = sorted(order.client_id for order in orders if order.role == "order")
    assert placed == sorted(client_id_for(operation_id) for operation_id in operation_ids)
    assert all(order.submit_count == 1 for order in orders), orders
