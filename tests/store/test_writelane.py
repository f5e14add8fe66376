"""The SQLite writer queue: one writer at a time, lanes alternate, FIFO within a lane."""

from __future__ import annotations

import asyncio

from store.writelane import WriterQueue, on_ack_path


async def writer(
    queue: WriterQueue,
    name: str,
    order: list[str],
    fast: bool = False,
    leave: asyncio.Event | None = None,
) -> None:
    """Take a turn, note it, and hold it across a switch (as a real write does) or until
    `leave` is set."""

    async def take_turn() -> None:
        async with queue.turn():
            order.append(name)
            await (leave.wait() if leave is not None else asyncio.sleep(0))

    if fast:
        with on_ack_path():
            await take_turn()
    else:
        await take_turn()


async def queued(queue: WriterQueue, count: int) -> None:
    """Let the event loop run until `count` writers wait (a few steps; bounded)."""
    for _ in range(1000):
        if queue.waiting >= count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{queue.waiting} writers wait, expected {count}")


async def test_the_lanes_take_turns_and_each_is_fifo() -> None:
    queue = WriterQueue()
    order: list[str] = []
    holder_may_leave = asyncio.Event()
    tasks = [asyncio.create_task(writer(queue, "holder", order, leave=holder_may_leave))]
    await queued(queue, 0)
    for name, fast in [("slow-1", False), ("slow-2", False), ("click-1", True), ("click-2", True)]:
        tasks.append(asyncio.create_task(writer(queue, name, order, fast)))
        await queued(queue, len(tasks) - 1)
    holder_may_leave.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    # a click waits behind at most one other write, and clicks never starve the rest
    assert order == ["holder", "click-1", "slow-1", "click-2", "slow-2"]
    assert queue.waiting == 0


async def test_a_backlog_in_one_lane_delays_the_other_by_one_turn_at_most() -> None:
    for holder_fast, backlog_fast in [(False, False), (True, True)]:
        queue = WriterQueue()
        order: list[str] = []
        holder_may_leave = asyncio.Event()
        tasks = [
            asyncio.create_task(
                writer(queue, "holder", order, fast=holder_fast, leave=holder_may_leave)
            )
        ]
        await queued(queue, 0)
        for index in range(5):
            tasks.append(
                asyncio.create_task(writer(queue, f"backlog-{index}", order, backlog_fast))
            )
            await queued(queue, index + 1)
        tasks.append(asyncio.create_task(writer(queue, "other-lane", order, not backlog_fast)))
        await queued(queue, 6)
        holder_may_leave.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        assert order[:3] == ["holder", "other-lane", "backlog-0"], (backlog_fast, order)
        assert order[3:] == [f"backlog-{index}" for index in range(1, 5)]


async def test_only_one_writer_holds_a_turn_at_a_time() -> None:
    queue = WriterQueue()
    inside = 0
    most = 0

    async def write(fast: bool) -> None:
        nonlocal inside, most

        async def body() -> None:
            nonlocal inside, most
            async with queue.turn():
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(0)
                inside -= 1

        if fast:
            with on_ack_path():
                await body()
        else:
            await body()

    await asyncio.wait_for(asyncio.gather(*(write(i % 3 == 0) for i in range(60))), 5)
    assert most == 1


async def test_a_cancelled_waiter_never_strands_the_queue() -> None:
    queue = WriterQueue()
    order: list[str] = []
    holder_may_leave = asyncio.Event()
    held = asyncio.create_task(writer(queue, "holder", order, leave=holder_may_leave))
    await asyncio.sleep(0)
    gone = asyncio.create_task(writer(queue, "gone", order))
    await queued(queue, 1)
    after = asyncio.create_task(writer(queue, "after", order))
    await queued(queue, 2)
    gone.cancel()
    holder_may_leave.set()
    await asyncio.wait_for(asyncio.gather(held, after), 5)
    assert order == ["holder", "after"]
    assert gone.cancelled()

    # handed the turn and cancelled in the same step: the turn passes on
    holder_may_leave.clear()
    held = asyncio.create_task(writer(queue, "holder", order, leave=holder_may_leave))
    await asyncio.sleep(0)
    raced = asyncio.create_task(writer(queue, "raced", order))
    await queued(queue, 1)
    last = asyncio.create_task(writer(queue, "last", order))
    await queued(queue, 2)
    holder_may_leave.set()
    await asyncio.sleep(0)  # the holder leaves and hands its turn to `raced`...
    raced.cancel()  # ...which is cancelled before it runs
    await asyncio.wait_for(asyncio.gather(held, last, return_exceptions=True), 5)
    assert order == ["holder", "after", "holder", "last"]
    async with asyncio.timeout(5):
        async with queue.turn():  # and the queue is free again
            pass
