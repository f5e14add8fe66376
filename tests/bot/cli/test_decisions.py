"""What the CLI says once people decide: `show` names the decision (who, when, where) and
drops the expiry, `show --wait` ends when the operation is decided or final, `list` has the
outcome, and a claimed operation still cannot be cancelled. Real clicks in the sandbox, the
real `countersign` process; times in UTC (TZ) so the words can be read back."""

from __future__ import annotations

import asyncio

from tests.support.factories import order_request
from tests.support.processes import ENV, Result, cli
from tests.support.stack import DEV_TOKEN, Stack, StackFactory

NAMES = {"ou_alice": "Alice", "ou_bob": "Bob"}
UTC_ENV = {**ENV, "TZ": "UTC"}
# Longer than the cli() helper lets a process run (60 s): a wait that ends saw its condition.
LONGER_THAN_A_TEST_WAITS = "120"


async def run(stack: Stack, *args: str) -> Result:
    return await cli(*args, "--url", stack.bot_url, "--token", DEV_TOKEN, env=UTC_ENV)


async def test_show_waits_for_the_decision_then_the_outcome_and_names_who_decided(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", people=NAMES)
    view, message_id = await stack.offered(order_request("cli-decided"))
    operation_id = view["id"]

    before = await run(stack, "show", operation_id)
    assert before.code == 0, before.err
    assert before.out.startswith(f"{operation_id}  Order to confirm  SIMULATED\n")
    assert "  Expires at " in before.out and "operators Alice, Bob" in before.out

    # Asked before the click or after it, the wait ends with the decision.
    decided = asyncio.create_task(
        run(stack, "show", operation_id, "--wait", LONGER_THAN_A_TEST_WAITS, "--until", "decided")
    )
    await stack.click(message_id, "ou_alice")
    shown = await decided
    assert shown.code == 0, shown.err
    at = (await stack.api("GET", f"/api/v1/operations/{operation_id}"))[1]["decision"]["at"]
    assert f"  Confirmed by Alice at {at[:10]} {at[11:16]} UTC (" in shown.out
    assert "ago), on the Lark card" in shown.out
    assert "Expires" not in shown.out, "once decided the expiry is history"

    final = await run(stack, "show", operation_id, "--wait", LONGER_THAN_A_TEST_WAITS)
    assert final.code == 0, final.err
    assert final.out.startswith(f"{operation_id}  Filled  SIMULATED\n")
    assert "  outcome:   Filled · SIMULATED" in final.out
    assert "Filled 0.010 at 60,000; Fees 0.30 USDC" in final.out
    assert "Stop loss 57,000: armed" in final.out
    assert "  state:     concluded" in final.out

    listed = await run(stack, "list")
    header, *rows = listed.out.splitlines()
    (row,) = [row for row in rows if row.startswith(operation_id)]
    outcome_at = header.index("OUTCOME")
    assert row[outcome_at:].startswith("Filled  ") and " ago  concluded  " in row

    refused = await run(stack, "cancel", operation_id)
    assert refused.code == 1 and "not_cancellable" in refused.err
