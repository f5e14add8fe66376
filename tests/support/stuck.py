"""What the executor's failure-budget tests share (issue 30, "confirmed and stuck forever"):
an order every executor pass fails on, filed as an older release could (the store's own
propose path, no intake bounds), a confirmed operation, and an executor on the real
simulated venue with a budget of failed passes."""

from __future__ import annotations

from typing import Any

from store import Claimed, Click, Operation, Store
from tests.support.factories import ORDER_PAYLOAD, offered
from workers.domains.finance.runner import FinanceRunner
from workers.domains.finance.settings import FinanceAccount, FinanceSettings
from workers.domains.finance.sim.venue import SimVenue
from workers.executor import ExecutionWorker

# 1e25 at a limit of 1e-22, as plain decimals: shown as 1,000 USDC; every preflight raised
# DivisionImpossible (with the schema's decimal bounds it fails validation instead)
STUCK: dict[str, Any] = {
    **ORDER_PAYLOAD,
    "quantity": "1" + "0" * 25,
    "limit_price": "0." + "0" * 21 + "1",
}
FINANCE = FinanceSettings(accounts=[FinanceAccount(name="sim-main", budget="100000")])


async def confirmed(store: Store, **overrides: Any) -> Operation:
    """An operation offered and confirmed by Alice: claimed, for the executor."""
    op = await offered(store, **overrides)
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


def executor(store: Store, venue: SimVenue, budget: int) -> ExecutionWorker:
    """The finance executor on `venue`, ending an operation after `budget` failed passes."""
    runner = FinanceRunner({"sim": venue}, FINANCE, clock=store.clock)
    return ExecutionWorker(
        store,
        {runner.kind: runner},
        submit_timeout_s=2.0,
        not_found_after_s=4.0,
        track_max_s=1.0,
        max_failed_passes=budget,
    )


async def one_pass(store: Store, worker: ExecutionWorker, operation_id: str) -> None:
    """One executor pass over the operation as stored now (its due time aside)."""
    op = await store.get(operation_id)
    assert op is not None
    await worker.advance(op)
