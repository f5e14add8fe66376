"""Issue 30, "confirmed and stuck forever", through the real bot, the sandbox and the SDK: an
order every executor pass fails on ends `unresolved` after `max_failed_passes`, and says so on
its card, under "Needs attention", in `/readyz` (still ready: a restart cannot help) and in
`/metrics`."""

from __future__ import annotations

from sqlalchemy import select

from store import OperationRow, State
from tests.support.dashboard import counts, rows
from tests.support.factories import draft
from tests.support.metrics import samples, summarized
from tests.support.stack import Stack, StackFactory, card_says, settled
from tests.support.stuck import STUCK
from tests.support.waiting import eventually

BUDGET = 3


async def test_a_stuck_order_ends_unresolved_on_the_card_dashboard_readyz_and_metrics(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", execution={"max_failed_passes": BUDGET})
    before = await samples(stack.http, stack.bot_url)
    operation_id, message_id = await confirmed_stuck(stack, "stuck-e2e")

    view = await settled(stack, operation_id, "unresolved")
    assert [(o["stage"], o["status"]) for o in view["outcomes"]] == [("initial", "unresolved")]
    assert view["outcome"]["detail"]["failed_passes"] == BUDGET
    await card_says(
        stack,
        message_id,
        "Unresolved — a person must check it",
        f"Execution failed {BUDGET} times in a row",
        "Nothing was sent",
        "执行连续失败",  # the zh words ride along in the same card
    )

    await summarized(
        stack.http, stack.bot_url, lambda r: r["components"]["attention"]["unresolved"] == 1
    )
    async with stack.http.get(f"{stack.bot_url}/readyz") as response:
        assert response.status == 200  # restarting would not settle it: people must
        ready = await response.json()
    assert ready["status"] == "ready"
    assert ready["components"]["attention"] == {"state": "needs_attention", "unresolved": 1}

    after = await samples(stack.http, stack.bot_url)
    assert after["countersign_unresolved_outstanding"] == 1
    assert after["countersign_executor_failed_passes_total"] == BUDGET
    unresolved = 'countersign_executions_total{outcome="unresolved"}'
    assert after[unresolved] - before.get(unresolved, 0) == 1

    async with stack.http.get(f"{stack.bot_url}/ops") as response:
        assert response.status == 200
        html = await response.text()
    assert counts(html)["unresolved"] == 1
    assert rows(html, "unresolved") == [operation_id]


async def test_the_failed_passes_count_across_a_restart_of_the_bot(
    make_stack: StackFactory,
) -> None:
    """Some passes fail before a restart, the rest after it: the operation ends after the
    budget in all, not after a fresh budget per process."""
    budget = 4
    stack: Stack = await make_stack("ws", execution={"max_failed_passes": budget})
    operation_id, _ = await confirmed_stuck(stack, "stuck-restart")

    async def failed_once() -> bool:
        return await failures_of(stack, operation_id) >= 1

    await eventually(failed_once)
    stack.clock.freeze()  # its next pass never falls due while the bot restarts
    await stack.restart()
    before_restart = await failures_of(stack, operation_id)
    assert 1 <= before_restart < budget

    stack.clock.frozen_at = None  # time moves again: the new process's passes fail
    view = await settled(stack, operation_id, "unresolved")
    assert view["outcome"]["detail"]["failed_passes"] == budget
    after = await samples(stack.http, stack.bot_url)
    assert after["countersign_executor_failed_passes_total"] == budget - before_restart


async def confirmed_stuck(stack: Stack, request_id: str) -> tuple[str, str]:
    """The stuck order filed as an older release could (the store's propose path, no intake
    bounds), its card posted and confirmed by Alice: its id and its card's message id."""
    proposed = await stack.store.propose(draft(request_id, payload=STUCK))
    operation_id = proposed.operation.id

    async def offered() -> bool:
        op = await stack.store.get(operation_id)
        return op is not None and op.state is State.AWAITING_CONFIRMATION

    await eventually(offered)
    message_id = stack.card_of(operation_id)
    assert message_id is not None
    assert (await stack.click(message_id, "ou_alice"))["toast"]["type"] == "success"
    return operation_id, message_id


async def failures_of(stack: Stack, operation_id: str) -> int:
    """Failed passes in a row, as the store counts them."""
    async with stack.store.read() as conn:
        query = select(OperationRow.exec_failures).where(OperationRow.id == operation_id)
        return int((await conn.execute(query)).scalar_one())
