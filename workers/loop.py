"""The loops store-driven workers run: take what is due, then wait for a kick, a row's due
time or the poll.

Wake-ups are events: an in-process kick (a claim wakes the executor, an outcome the card and
delivery workers) or, across replicas on PostgreSQL, a notification (`store.backend.due_listener`) that
calls the same kick. The poll is only a safety net; a worker that knows when its next row
falls due (`next_due`) sleeps no longer than that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any, TypeVar

from kernel.timeutil import Clock

Item = TypeVar("Item")
# seconds until the next scheduled row falls due; None: nothing is scheduled
NextDue = Callable[[], Awaitable[float | None]]


async def drain_loop(
    drain: Callable[[], Awaitable[int]],
    kicked: asyncio.Event,
    stop: asyncio.Event,
    poll_s: float,
    log: logging.Logger,
    next_due: NextDue | None = None,
) -> None:
    """Call `drain()` until it finds nothing, then sleep until kicked, stopped, the next due
    time or `poll_s`."""
    while not stop.is_set():
        kicked.clear()
        timeout = poll_s
        try:
            while not stop.is_set() and await drain():
                pass
            timeout = await _sleep_s(poll_s, next_due)
        except Exception:
            log.exception("%s pass failed; retrying", log.name)
        await _wait_any([kicked, stop], timeout)


async def window_loop(
    lease: Callable[[int], Awaitable[Sequence[Item]]],
    work: Callable[[Item], Coroutine[Any, Any, None]],
    *,
    width: int,
    kicked: asyncio.Event,
    stop: asyncio.Event,
    poll_s: float,
    log: logging.Logger,
    next_due: NextDue | None = None,
) -> None:
    """Keep up to `width` calls of `work` in flight, leasing more as each one finishes.

    `lease(n)` takes at most n due items. With the window full the loop waits for a call to
    finish; with room left and nothing due, for a kick, the next due time or the poll. Once
    `stop` is set nothing new is leased and the calls in flight finish; cancelling the loop
    cancels them (what they leave is due again when their lease runs out).
    """
    running: set[asyncio.Task[None]] = set()
    try:
        while not stop.is_set():
            kicked.clear()
            room = width - len(running)
            wake_on = [stop]  # full: only a finishing call (or stop) makes room
            timeout: float | None = None
            if room > 0:
                wake_on, timeout = [kicked, stop], poll_s
                try:
                    leased = await lease(room)
                    running.update(asyncio.create_task(work(item)) for item in leased)
                    if len(leased) == room:
                        wake_on, timeout = [stop], None
                    else:  # everything due is taken: sleep until more is
                        timeout = await _sleep_s(poll_s, next_due)
                        if not running:
                            log.debug(
                                "%s idle: looking again in %.1f s unless woken", log.name, timeout
                            )
                except Exception:
                    log.exception("%s lease failed; retrying", log.name)
            for task in await _wait_any(wake_on, timeout, running):
                running.discard(task)
                if not task.cancelled() and task.exception() is not None:
                    log.error("%s pass raised", log.name, exc_info=task.exception())
        if running:  # stopping: passes already begun finish (the caller bounds the wait)
            await asyncio.wait(running)
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


def seconds_until(clock: Clock, at: datetime | None) -> float | None:
    """How far `at` (a next due time) lies ahead of `clock`'s now; None stays None."""
    return None if at is None else (at - clock()).total_seconds()


async def _sleep_s(poll_s: float, next_due: NextDue | None) -> float:
    if next_due is None:
        return poll_s
    due_in = await next_due()
    return poll_s if due_in is None else max(0.0, min(poll_s, due_in))


async def _wait_any(
    events: Sequence[asyncio.Event],
    within_s: float | None,
    tasks: set[asyncio.Task[None]] | None = None,
) -> set[asyncio.Task[None]]:
    """Wait until one event is set, one task finishes or `within_s` passes; the finished tasks."""
    waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(event.wait()) for event in events}
    watched = waiters | (tasks or set())
    done, _pending = await asyncio.wait(
        watched, timeout=within_s, return_when=asyncio.FIRST_COMPLETED
    )
    for waiter in waiters:
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
    return {task for task in tasks or () if task in done}
