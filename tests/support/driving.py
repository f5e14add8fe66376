"""Driving the real ExecutionWorker in a test: its passes until a condition holds, and the
statuses an operation's outcomes have reached (the venue suites share these)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from store import ExecutionLedger, Operation, Store
from tests.support.waiting import scaled
from workers.executor import ExecutionWorker


async def drive(
    worker: ExecutionWorker, done: Callable[[], Awaitable[bool]], deadline_s: float = 20
) -> None:
    """Run the worker's passes until `done()` holds (due times are real: poll them)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + scaled(deadline_s)
    while not await done():
        if loop.time() > deadline:
            raise AssertionError("the worker did not get there in time")
        if not await worker.drain():
            await asyncio.sleep(0.05)


def statuses(store: Store, op: Operation) -> Callable[[], Awaitable[list[str]]]:
    async def read() -> list[str]:
        return [o.status for o in await ExecutionLedger(store).outcomes(op.id)]

    return read
