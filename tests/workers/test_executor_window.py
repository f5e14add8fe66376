"""The executor keeps a sliding window of passes: one slow venue call holds its own slot and
nothing more, the window stays bounded, a failed pass is rescheduled and looked at again
when it falls due (not at the poll), and stopping lets a pass already begun finish."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from pathlib import Path

import pytest

from store import Claimed, Click, ExecutionLedger, Operation, Store
from tests.support.factories import ORDER_PAYLOAD, offered
from tests.support.waiting import eventually
from workers.domains.execution import Hold, Observed, Refusal
from workers.domains.finance.runner import FinanceRunner
from workers.domains.finance.settings import FinanceAccount, FinanceSettings
from workers.domains.finance.sim.venue import SimVenue
from workers.executor import ExecutionWorker

SETTINGS = FinanceSettings(accounts=[FinanceAccount(name="sim-main", budget="100000")])
PLAIN_ORDER = {k: v for k, v in ORDER_PAYLOAD.items() if k != "protective"}  # one pass: filled
WIDTH = 2
FAST = 4


class GatedRunner:
    """The real finance runner, with a gate some operations' preflight waits at, and a count
    of the passes between preflight and the venue's answer (the window's width)."""

    def __init__(self, runner: FinanceRunner) -> None:
        self.runner = runner
        self.kind, self.enabled = runner.kind, runner.enabled
        self.executor_name, self.executor_revision = runner.executor_name, runner.executor_revision
        self.runs = runner.runs
        self.held: set[str] = set()
        self.gate = asyncio.Event()
        self.waiting = asyncio.Event()  # a held preflight reached the gate
        self.fail_once: set[str] = set()
        self.in_flight = 0
        self.widest = 0

    async def prepare(self, op: Operation) -> Refusal | Hold | None:
        self.in_flight += 1
        self.widest = max(self.widest, self.in_flight)
        try:
            if op.id in self.held:
                self.waiting.set()
                await self.gate.wait()
            if op.id in self.fail_once:
                self.fail_once.discard(op.id)
                raise RuntimeError("the venue's preflight broke once")
        except BaseException:
            self.in_flight -= 1
            raise
        return await self.runner.prepare(op)

    async def submit(self, op: Operation, client_id: str) -> Observed:
        try:
            return await self.runner.submit(op, client_id)
        finally:
            self.in_flight -= 1

    async def lookup(
        self, op: Operation, client_id: str, dispatched_at: datetime | None
    ) -> Observed | None:
        return await self.runner.lookup(op, client_id, dispatched_at)


@pytest.fixture
async def venue(tmp_path: Path) -> AsyncIterator[SimVenue]:
    async with await SimVenue.open(tmp_path / "venue.db") as opened:
        yield opened


async def claimed(store: Store) -> Operation:
    op = await offered(store, payload=dict(PLAIN_ORDER))
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


def filled(ledger: ExecutionLedger, *ops: Operation) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        for op in ops:
            if [o.status for o in await ledger.outcomes(op.id)] != ["filled"]:
                return False
        return True

    return check


async def test_a_held_pass_keeps_its_slot_while_the_rest_flow_through_the_window(
    store: Store, venue: SimVenue, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, "countersign.executor")
    runner = GatedRunner(FinanceRunner({"sim": venue}, SETTINGS, clock=store.clock))
    slow = await claimed(store)  # the oldest due: leased first, and held at the venue
    broken = await claimed(store)  # its first pass fails
    fast = [await claimed(store) for _ in range(FAST)]
    runner.held.add(slow.id)
    runner.fail_once.add(broken.id)
    # the poll is an hour away: only finishing passes and due times move this worker
    # (and the held preflight does not time out within the test)
    worker = ExecutionWorker(
        store, {runner.kind: runner}, concurrency=WIDTH, poll_s=3600, submit_timeout_s=60
    )
    ledger = ExecutionLedger(store)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        await asyncio.wait_for(runner.waiting.wait(), 20)
        # a batch-at-a-time executor would wait here for the slow pass to finish
        await eventually(filled(ledger, *fast), 20)
        await eventually(filled(ledger, broken), 20)  # rescheduled, then looked at when due again
        assert await ledger.outcomes(slow.id) == []
        assert runner.widest == WIDTH and worker.passes == 1 + 2 + FAST
        failed = [r for r in caplog.records if "execution of" in r.getMessage()]
        assert [r.getMessage() for r in failed] == [
            f"execution of {broken.id} failed; it will be looked at again"
        ]

        stop.set()  # the held pass was begun: stopping lets it finish
        runner.gate.set()
        await asyncio.wait_for(running, 20)
    finally:
        stop.set()
        runner.gate.set()
        await running
    assert [o.status for o in await ledger.outcomes(slow.id)] == ["filled"]
    assert worker.failures == 1 and runner.in_flight == 0
