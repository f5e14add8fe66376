"""The loop every store-driven worker runs: drain what is due, then wait for a kick or a poll."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable


async def drain_loop(
    drain: Callable[[], Awaitable[int]],
    kicked: asyncio.Event,
    stop: asyncio.Event,
    poll_s: float,
    log: logging.Logger,
) -> None:
    """Call `drain()` until it finds nothing, then sleep until kicked, stopped or `poll_s`."""
    while not stop.is_set():
        kicked.clear()
        try:
            while not stop.is_set() and await drain():
                pass
        except Exception:
            log.exception("%s pass failed; retrying", log.name)
        waiters = {asyncio.ensure_future(kicked.wait()), asyncio.ensure_future(stop.wait())}
        _done, pending = await asyncio.wait(
            waiters, timeout=poll_s, return_when=asyncio.FIRST_COMPLETED
        )
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
