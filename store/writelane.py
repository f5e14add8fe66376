"""SQLite's one writer, queued in-process, with a lane of its own for answering people.

SQLite lets one transaction write at a time. Our writers wait here rather than in
SQLite's busy handler (whose back-off leaves some waiting for seconds). Writes made while
answering a person (a click: its inbox entry, the claim or rejection; a text: its inbox
entry and answer) wait in the people lane, background work (executions, card patches,
result deliveries, expiry) in the other. The people lane goes first, but after
`ACK_TURNS` turns in a row a waiting background writer gets one. So a click waits behind
at most one background write however long that backlog, while clicks and texts share
their lane first come, first served and cannot starve each other.
Correctness never rests on this queue: the conditional updates decide every race.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar

ACK_TURNS = 4  # ack-path turns in a row before a waiting other writer gets one
_answering_a_person: ContextVar[bool] = ContextVar("countersign_answering_a_person", default=False)


@contextmanager
def answering_a_person() -> Iterator[None]:
    """Writes inside this block (in this task) take the fast lane."""
    token = _answering_a_person.set(True)
    try:
        yield
    finally:
        _answering_a_person.reset(token)


class WriterQueue:
    def __init__(self) -> None:
        self._held = False
        self._fast: deque[asyncio.Future[None]] = deque()
        self._slow: deque[asyncio.Future[None]] = deque()
        self._fast_streak = 0  # ack-path turns given in a row

    @property
    def waiting(self) -> int:
        return len(self._fast) + len(self._slow)

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        await self._acquire(_answering_a_person.get())
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, fast: bool) -> None:
        if not self._held and not self.waiting:
            self._held, self._fast_streak = True, int(fast)
            return
        lane = self._fast if fast else self._slow
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._release()  # handed the turn just as we gave up: pass it on
            elif turn in lane:  # a release may already have skipped it
                lane.remove(turn)
            raise

    def _release(self) -> None:
        fast_first = self._fast_streak < ACK_TURNS or not self._slow
        for lane in (self._fast, self._slow) if fast_first else (self._slow, self._fast):
            while lane:
                turn = lane.popleft()
                if not turn.done():
                    turn.set_result(None)  # the writer stays held: it is theirs now
                    self._fast_streak = self._fast_streak + 1 if lane is self._fast else 0
                    return
        self._held = False
