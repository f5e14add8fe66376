"""A worker process killed by SIGKILL (issue 30): its parent releases the leases the child
held at once, so its operations are taken up by the restarted child, not after the lease.

Real processes: the bot in this process (the parent), its worker process a real child. The
executor's lease is made 243 s here (submit_timeout_s = 120), far beyond every deadline of
this test, and the venue answers after 0.5 s, so passes are in flight when the child dies:
if recovery waited for the lease, no deadline here would hold. 20 orders are confirmed,
the child is killed while it holds leases, and every order ends filled with exactly one
order on the venue; the parent's report says it released what the child held.
"""

from __future__ import annotations

import os
import signal
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from store import OperationRow
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory, settled
from tests.support.waiting import eventually
from tests.support.worker_process import executor_report
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue

ORDERS = 20
LONG_LEASE = {
    "workers": "process",
    "poll_s": 0.2,
    "submit_timeout_s": 120,  # the executor's lease: 2 * 120 + 3 = 243 s
    "not_found_after_s": 200,
}
LEASED_BEYOND = timedelta(seconds=150)  # due this far ahead: only a lease puts it there


async def leased_now(stack: Stack) -> int:
    """Operations the executor holds under a lease this moment."""
    beyond = stack.store.clock() + LEASED_BEYOND
    query = select(func.count()).select_from(OperationRow).where(OperationRow.exec_due_at > beyond)
    async with stack.store.read() as conn:
        return int((await conn.execute(query)).scalar_one())


async def test_a_killed_worker_processes_leases_are_released_by_the_parent_at_once(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    stack: Stack = await make_stack("ws", execution=LONG_LEASE, sim_faults="latency_ms=500")
    first: dict[str, Any] = {}

    async def child_reports(starts: int) -> bool:
        first.update(await executor_report(stack))
        return bool(first["state"] == "running" and first["starts"] == starts)

    await eventually(lambda: child_reports(1), deadline_s=30)
    pid = first["pid"]
    assert first["process"] == "separate" and first["leases_released"] == 0

    ids = []
    for index in range(ORDERS):
        body = order_request(f"lease-release-{index}")
        body["payload"].pop("protective")  # one venue order per operation
        view, message_id = await stack.offered(body)
        reply = await stack.click(message_id, "ou_alice")
        assert reply["toast"]["type"] == "success", reply
        ids.append(view["id"])

    async def holding() -> bool:
        return await leased_now(stack) >= 1

    await eventually(holding, deadline_s=60)
    os.kill(pid, signal.SIGKILL)  # mid-pass: its leases have 243 s to run

    async def restarted_and_released() -> bool:
        report = await executor_report(stack)
        return bool(report["starts"] == 2 and report["leases_released"] >= 1)

    # the record: the parent released the rows the dead child still held
    await eventually(restarted_and_released, deadline_s=30)
    for operation_id in ids:  # each deadline is far below the lease
        await settled(stack, operation_id, "filled")

    async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
        orders = await venue.orders()
        submitted = {
            operation_id: (await venue.lookup(client_id_for(operation_id))) for operation_id in ids
        }
    assert len(orders) == ORDERS
    for operation_id, order in submitted.items():
        assert order is not None and order.submit_count == 1, operation_id
        assert await stack.store.claim_count(operation_id) == 1
