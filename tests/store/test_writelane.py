"""The SQLite writer queue: one writer at a time, the ack lane first but never starving the
other, FIFO within a lane."""

from __future__ import annotations

import asyncio

from store.writelane import ACK_TURNS, WriterQueue, answering_a_person


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
        with answering_a_person():
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


async def backlog_then_one(holder_fast: bool, backlog_fast: bool, backlog: int) -> list[str]:
    """A holder, then `backlog` writers in one lane, then one in the other: the turn order."""
    queue = WriterQueue()
    order: list[str] = []
    holder_may_leave = asyncio.Event()
    tasks = [
        asyncio.create_task(writer(queue, "holder", order, holder_fast, leave=holder_may_leave))
    ]
    await queued(queue, 0)
    for index in range(backlog):
        tasks.append(asyncio.create_task(writer(queue, f"backlog-{index}", order, backlog_fast)))
        await queued(queue, index + 1)
    tasks.append(asyncio.create_task(writer(queue, "other-lane", order, not backlog_fast)))
    await queued(queue, backlog + 1)
    holder_may_leave.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert queue.waiting == 0
    return order


async def test_a_click_behind_a_backlog_of_other_writes_goes_next() -> None:
    order = await backlog_then_one(holder_fast=False, backlog_fast=False, backlog=5)
    assert order == ["holder", "other-lane", *(f"backlog-{index}" for index in range(5))]


async def test_clicks_go_first_and_in_order() -> None:
    order = await backlog_then_one(holder_fast=False, backlog_fast=True, backlog=3)
    assert order == ["holder", "backlog-0", "backlog-1", "backlog-2", "other-lane"]


async def test_a_burst_of_clicks_lets_a_waiting_other_writer_in_every_few_turns() -> None:
    order = await backlog_then_one(holder_fast=True, backlog_fast=True, backlog=2 * ACK_TURNS)
    # the holder's turn counts: the other writer goes after ACK_TURNS ack-path turns in a row
    clicks_before = order.index("other-lane")
    assert clicks_before == ACK_TURNS, order
    assert order[clicks_before + 1 :] == [
        f"backlog-{index}" for index in range(ACK_TURNS - 1, 2 * ACK_TURNS)
    ]


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
            with answering_a_person():
                await body()
        else:
            await body()

    await asyncio.wait_for(asyncio.gather(*(write(i % 3 == 0) for i in range(60))), 5)
    assert most == 1


async def holder_then(
    queue: WriterQueue, order: list[str], *names: str
) -> tuple[asyncio.Event, asyncio.Task[None], list[asyncio.Task[None]]]:
    """A writer holding the turn until the event is set, then `names` queued in order."""
    holder_may_leave = asyncio.Event()
    held = asyncio.create_task(writer(queue, "holder", order, leave=holder_may_leave))
    await asyncio.sleep(0)
    waiting = []
    for index, name in enumerate(names):
        waiting.append(asyncio.create_task(writer(queue, name, order)))
        await queued(queue, index + 1)
    return holder_may_leave, held, waiting


async def test_a_cancelled_waiter_never_strands_the_queue() -> None:
    queue = WriterQueue()
    order: list[str] = []
    holder_may_leave, held, (gone, after) = await holder_then(queue, order, "gone", "after")
    gone.cancel()
    holder_may_leave.set()
    await asyncio.wait_for(asyncio.gather(held, after), 5)
    assert order == ["holder", "after"]
    assert gone.cancelled()

    # handed the turn and cancelled in the same step: the turn passes on
    holder_may_leave, held, (raced, last) = await holder_then(queue, order, "raced", "last")
    holder_may_leave.set()
    await asyncio.sleep(0)  # the holder leaves and hands its turn to `raced`...
    raced.cancel()  # ...which is cancelled before it runs
    await asyncio.wait_for(asyncio.gather(held, last, return_exceptions=True), 5)
    assert order == ["holder", "after", "holder", "last"]
    async with asyncio.timeout(5):
        async with queue.turn():  # and the queue is free again
            pass
