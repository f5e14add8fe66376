"""Identical `/info` reads share one request: `SharedReads.read(body, max_age, spacing)`.

A caller states how old an answer it may take: `max_age` seconds, measured from when the
request was SENT (never from when it answered, so nothing looks fresher than it is). A read
sent for the same body within that age, answered or still in flight, is shared; else one new
request is sent and everyone asking meanwhile joins it (single-flight). `spacing`: a new
request for that body is sent no sooner than `spacing` after the previous one (callers that
need a read sent after some moment, `max_age` 0, then share the next one). A failed read is
shared by those who joined it and then forgotten: the next caller asks again.

`Read.sent` is on this object's monotonic clock; `age(read)` converts.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

KEPT_READS: Final = 2000  # bodies remembered; older ones are dropped first
FORGET_AFTER_S: Final = 120.0  # longer than any max_age a caller uses


@dataclass(frozen=True)
class Read:
    answer: Any
    sent: float  # when its request was sent (monotonic)


@dataclass
class _Flight:
    future: asyncio.Future[Read]
    sent: float | None = None  # None: waiting for its turn (spacing, the weight budget)
    task: asyncio.Task[None] | None = field(default=None, repr=False)


Fetch = Callable[[dict[str, Any], Callable[[], None]], Awaitable[Any]]


class SharedReads:
    """`fetch(body, mark_sent)` sends one read and calls `mark_sent()` as it leaves."""

    def __init__(self, fetch: Fetch, clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self.clock = clock
        self._flights: dict[str, _Flight] = {}
        self._last_sent: dict[str, float] = {}
        self.sent = 0  # requests actually sent (for tests and benches)
        self.shared = 0  # reads answered by another caller's request

    def would_send(self, body: Mapping[str, Any], max_age: float) -> bool:
        """Whether `read(body, max_age=max_age)` now would send a request."""
        flight = self._flights.get(_key(body))
        return not _shareable(flight, self.clock() - max_age)

    def age(self, read: Read) -> float:
        return max(0.0, self.clock() - read.sent)

    async def read(
        self, body: Mapping[str, Any], *, max_age: float = 0.0, spacing: float = 0.0
    ) -> Read:
        key = _key(body)
        now = self.clock()
        flight = self._flights.get(key)
        if flight is not None and _shareable(flight, now - max_age):
            self.shared += 1
            return await asyncio.shield(flight.future)
        flight = _Flight(asyncio.get_running_loop().create_future())
        flight.future.add_done_callback(_retrieve)
        self._flights[key] = flight
        delay = 0.0
        if spacing > 0 and key in self._last_sent:
            delay = max(0.0, self._last_sent[key] + spacing - now)
        flight.task = asyncio.create_task(self._run(key, flight, dict(body), delay))
        self._prune(now)
        return await asyncio.shield(flight.future)

    async def _run(self, key: str, flight: _Flight, body: dict[str, Any], delay: float) -> None:
        def mark_sent() -> None:
            flight.sent = self._last_sent[key] = self.clock()
            self.sent += 1

        try:
            if delay > 0:
                await asyncio.sleep(delay)  # the body's spacing: later callers join this read
            answer = await self._fetch(body, mark_sent)
        except BaseException as error:  # shared with everyone who joined, then forgotten
            if self._flights.get(key) is flight:
                del self._flights[key]
            if not flight.future.done():
                if isinstance(error, asyncio.CancelledError):
                    flight.future.cancel()
                else:
                    flight.future.set_exception(error)
            if not isinstance(error, Exception):
                raise
            return
        sent = flight.sent if flight.sent is not None else self.clock()
        flight.sent = sent
        flight.future.set_result(Read(answer, sent))

    def _prune(self, now: float) -> None:
        if len(self._flights) <= KEPT_READS:
            return
        for key, flight in list(self._flights.items()):
            if flight.future.done() and (flight.sent or now) < now - FORGET_AFTER_S:
                del self._flights[key]
                self._last_sent.pop(key, None)
        while len(self._flights) > KEPT_READS:  # still too many: the oldest go
            key = next(iter(self._flights))
            if not self._flights[key].future.done():
                break
            del self._flights[key]
            self._last_sent.pop(key, None)

    async def close(self) -> None:
        tasks = [f.task for f in self._flights.values() if f.task is not None and not f.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _key(body: Mapping[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _shareable(flight: _Flight | None, sent_since: float) -> bool:
    """Not sent yet (joining it is as fresh as sending one), or sent since `sent_since`."""
    return flight is not None and (flight.sent is None or flight.sent >= sent_since)


def _retrieve(future: asyncio.Future[Read]) -> None:
    """Nobody may be waiting any more (all cancelled): mark the failure seen."""
    if not future.cancelled():
        future.exception()
