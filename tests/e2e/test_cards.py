"""Cards out and back: retried sends never post twice, the original card follows the state."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
from sqlalchemy import text

from store import CardLedger, State
from tests.support.factories import order_request
from tests.support.metrics import summarized
from tests.support.stack import CLAIMED_OR_AFTER, Stack, StackFactory
from tests.support.waiting import eventually


def content(stack: Stack, message_id: str) -> str:
    return stack.state.messages[message_id].content


def cards_for(stack: Stack, operation_id: str) -> list[str]:
    return [
        m.message_id
        for m in stack.state.messages.values()
        if m.msg_type == "interactive" and not m.forwarded_from and operation_id in m.content
    ]


async def test_a_send_whose_answer_was_lost_is_retried_and_posts_one_card(stack: Stack) -> None:
    await stack.control("POST", "/faults", {"lose_next_create_answers": 2})
    view, message_id = await stack.offered(order_request("lost-answers"))
    assert cards_for(stack, view["id"]) == [message_id]
    assert view["state"] == "awaiting_confirmation" and view["card"]["message_id"] == message_id
    history = await CardLedger(stack.store).history(view["id"])
    assert [entry.action for entry in history if entry.ok] == ["send"]


async def test_cancel_and_expiry_patch_the_original_card(stack: Stack) -> None:
    cancelled, cancelled_card = await stack.offered(order_request("to-cancel"))
    expiring, expiring_card = await stack.offered(order_request("to-expire", expires_in_s=30))
    status, _ = await stack.api("POST", f"/api/v1/operations/{cancelled['id']}/cancel")
    assert status == 200
    await eventually(
        lambda: "Cancelled by the proposer" in content(stack, cancelled_card), woken_by=stack.state
    )
    stack.clock.offset += timedelta(seconds=31)
    await eventually(lambda: "Expired at" in content(stack, expiring_card), woken_by=stack.state)
    for message_id in (cancelled_card, expiring_card):
        assert '"tag": "button"' not in json.dumps(stack.card(message_id))
        assert len(stack.state.messages[message_id].history) == 2  # created, then one patch

    async def recorded() -> bool:
        _, view = await stack.api("GET", f"/api/v1/operations/{expiring['id']}")
        return bool(view["state"] == "expired" and view["card"]["delivery"] == "current")

    await eventually(recorded)


async def test_patch_failures_are_retried_and_permanent_ones_are_visible(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request("flaky-patch"))
    await stack.control("POST", "/faults", {"fail_next_patches": 2, "fail_patch_code": 230020})
    await stack.api("POST", f"/api/v1/operations/{view['id']}/cancel")
    await eventually(
        lambda: "Cancelled by the proposer" in content(stack, message_id),
        deadline_s=20,
        woken_by=stack.state,
    )

    doomed, _ = await stack.offered(order_request("doomed-patch"))
    await stack.control("POST", "/faults", {"fail_next_patches": 100, "fail_patch_code": 230031})

    async def failed() -> bool:
        _, current = await stack.api("GET", f"/api/v1/operations/{doomed['id']}")
        return bool(current["card"]["delivery"] == "failed")

    await stack.api("POST", f"/api/v1/operations/{doomed['id']}/cancel")
    await eventually(failed)
    _, current = await stack.api("GET", f"/api/v1/operations/{doomed['id']}")
    assert "230031" in current["card"]["error"]
    await summarized(
        stack.http, stack.bot_url, lambda r: r["components"]["outbox"]["card_delivery_failed"] == 1
    )
    _, ready = await stack.api("GET", "/readyz")
    assert ready["components"]["outbox"]["card_delivery_failed"] == 1
    await stack.control("POST", "/faults", {"fail_next_patches": 0})


async def test_a_slow_commit_answers_processing_or_busy_and_busy_is_never_applied(
    stack: Stack,
) -> None:
    view, message_id = await stack.offered(order_request("slow-commit"))
    hold = asyncio.Event()
    held = asyncio.Event()

    async def hold_the_row() -> None:
        async with stack.store.write() as conn:
            if conn.dialect.name == "postgresql":
                await conn.execute(
                    text("SELECT id FROM operations WHERE id = :id FOR UPDATE"), {"id": view["id"]}
                )
            held.set()  # SQLite: BEGIN IMMEDIATE already holds the write lock
            await hold.wait()

    holder = asyncio.create_task(hold_the_row())
    await held.wait()
    click = asyncio.create_task(stack.click(message_id, "ou_alice"))
    await asyncio.sleep(3)  # longer than the 2 s answer budget: the point of the test
    hold.set()
    await holder
    reply = await click
    assert reply["card_changed"] is False
    if stack.store.engine.dialect.name == "sqlite":
        # SQLite held the whole store: the click was not on record in time, so it was told
        # "busy" (click again). Once its entry lands it is recorded as refused, never applied.
        assert reply["toast"]["content"] == "Busy, please click again in a moment"
        row = await stack.stored_click(view["id"], None)  # waits for the entry to land
        assert row.reason_code == "answered_busy" and not row.accepted
        assert len(await stack.store.confirmations(view["id"])) == 1
        op = await stack.store.get(view["id"])
        assert op is not None and op.state.value == "awaiting_confirmation"
        assert await stack.store.claim_count(op.id) == 0
        # the operator clicks again, as told, and that click decides
        again = await stack.click(message_id, "ou_alice")
        assert again["toast"]["content"].startswith("Confirmed")
    else:
        # PostgreSQL held only the operation's row: the click's entry went in, so "processing"
        # (which promises the click is on record), and the decision lands with the card.
        assert reply["toast"]["content"] == "Received, processing"
    await eventually(
        lambda: "Confirmed by <at id=ou_alice></at>" in content(stack, message_id),
        deadline_s=20,
        woken_by=stack.state,
    )
    op = await stack.store.get(view["id"])
    assert (
        op is not None
        and op.state in CLAIMED_OR_AFTER
        and await stack.store.claim_count(op.id) == 1
    )


# The card worker's safety-net look is an hour away, so within a test only a wake-up (a kick)
# makes it send or patch anything; no patch here fails (a retry would wait for that look).
ONLY_WOKEN = {"poll_s": 3600}


def revisions(stack: Stack, message_id: str) -> list[str]:
    """How the sandbox's message came to be: created, then each patch or callback answer."""
    return [revision.source for revision in stack.state.messages[message_id].history]


async def shown_trail(stack: Stack, operation_id: str, last: str) -> list[tuple[str, int]]:
    """(action, version) of each card delivery, once the last one is `last`."""
    trail: list[tuple[str, int]] = []

    async def recorded() -> bool:
        history = await CardLedger(stack.store).history(operation_id)
        trail[:] = [(entry.action, entry.version) for entry in history if entry.ok]
        return bool(trail) and trail[-1][0] == last

    await eventually(recorded, deadline_s=20)
    return trail


@pytest.mark.parametrize("mode", ["ws", "webhook"])
async def test_a_click_answered_processing_has_its_card_patched_when_the_decision_commits(
    make_stack: StackFactory, mode: str
) -> None:
    # an answer budget nothing can meet
    stack: Stack = await make_stack(mode, cards=ONLY_WOKEN, answer_budget_s=0.001)
    view, message_id = await stack.offered(order_request("late-answer"))
    if stack.store.engine.dialect.name == "sqlite":
        # The click's entry and its decision are one write: once it commits the answer is
        # known, so even this budget gets the definitive answer, card included; it is
        # recorded as shown and never patched.
        reply = await stack.click(message_id, "ou_alice", "reject")
        assert reply["toast"]["content"].startswith("Rejected") and reply["card_changed"]
        op = await stack.store.get(view["id"])
        assert op is not None and op.state is State.REJECTED
        assert await shown_trail(stack, op.id, "callback") == [
            ("send", view["version"]),
            ("callback", op.version),
        ]
        assert revisions(stack, message_id) == ["create", "callback"]
        return
    # PostgreSQL: another transaction holds the operation's row, so the click's write, taken
    # into a batch, waits on it past the answer: "processing", then the decision commits
    # after the answer left, and its own wake-up patches the card (no look is due for an hour)
    hold, held = asyncio.Event(), asyncio.Event()

    async def hold_the_row() -> None:
        async with stack.store.write() as conn:
            await conn.execute(
                text("SELECT id FROM operations WHERE id = :id FOR UPDATE"), {"id": view["id"]}
            )
            held.set()
            await hold.wait()

    holder = asyncio.create_task(hold_the_row())
    await held.wait()
    reply = await stack.click(message_id, "ou_alice", "reject")
    hold.set()
    await holder
    assert reply["toast"]["content"] == "Received, processing"
    assert reply["card_changed"] is False  # the answer showed nothing: the patch must
    await eventually(
        lambda: "Rejected by <at id=ou_alice></at>" in content(stack, message_id),
        deadline_s=20,
        woken_by=stack.state,
    )
    op = await stack.store.get(view["id"])
    assert op is not None and op.state is State.REJECTED
    assert await shown_trail(stack, op.id, "patch") == [
        ("send", view["version"]),
        ("patch", op.version),
    ]
    assert revisions(stack, message_id) == ["create", "patch"]
    assert '"tag": "button"' not in json.dumps(stack.card(message_id))


async def test_a_click_answered_with_its_card_is_not_patched_again(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", cards=ONLY_WOKEN)
    view, message_id = await stack.offered(order_request("answered-in-time"))
    reply = await stack.click(message_id, "ou_alice", "reject")
    assert reply["toast"]["content"].startswith("Rejected") and reply["card_changed"] is True
    op = await stack.store.get(view["id"])
    assert op is not None
    assert await shown_trail(stack, op.id, "callback") == [
        ("send", view["version"]),
        ("callback", op.version),
    ]
    # wake the card worker: the pass that sends the next card has looked at this one too
    await stack.offered(order_request("next-card"))
    history = await CardLedger(stack.store).history(op.id)
    assert [entry.action for entry in history] == ["send", "callback"]
    assert revisions(stack, message_id) == ["create", "callback"]


async def test_readiness_moves_from_unverified_to_verified_with_the_first_click(
    stack: Stack,
) -> None:
    status, ready = await stack.api("GET", "/readyz")
    assert status == 200 and ready["status"] == "ready"
    callbacks = ready["components"]["callback_consumer"]
    assert callbacks["state"] == "listening_unverified" and callbacks["mode"] == stack.mode
    assert ready["components"]["text_listener"]["mode"] == stack.mode
    _, message_id = await stack.offered(order_request("verify-me"))
    await stack.click(message_id, "ou_alice")
    _, ready = await stack.api("GET", "/readyz")
    callbacks = ready["components"]["callback_consumer"]
    assert callbacks["state"] == "verified" and callbacks["events"] == 1
    assert callbacks["ack_latency_ms"]["p50"] is not None
    body = json.dumps(ready)
    for secret in (
        stack.sandbox.app_secret,
        stack.sandbox.encrypt_key,
        stack.sandbox.verification_token,
    ):
        assert secret not in body
