"""What every group-commit writer promises: intents, lanes, batches, and how waiters learn."""

from __future__ import annotations

import asyncio
import enum
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Row = dict[str, Any]
Results = tuple[list[Row], ...]  # one list of rows per statement of the intent

DEFAULT_BATCH_LIMIT = 256  # intents per transaction; bounds a batch's time holding the lock


class Lane(enum.IntEnum):
    PEOPLE = 0  # answering a click or a text: someone is waiting
    BACKGROUND = 1  # executor steps, card marks, deliveries, leases


@dataclass(frozen=True)
class Statement:
    """One hand-written SQL statement with `:name` parameters.

    `require_row`: the statement is a condition; if it returns no row (a conditional UPDATE
    that matched nothing) the intent stops, is rolled back and raises `ConditionNotMet`.
    """

    sql: str
    params: Mapping[str, Any] = field(default_factory=dict)
    require_row: bool = False


@dataclass(frozen=True)
class Intent:
    statements: tuple[Statement, ...]
    lane: Lane = Lane.BACKGROUND

    def __post_init__(self) -> None:
        if not self.statements:
            raise ValueError("an intent needs at least one statement")


class WriterClosed(RuntimeError):
    """The writer no longer accepts intents (it is closing or closed)."""


class ConditionNotMet(LookupError):
    """A `require_row` statement matched nothing; the intent changed nothing."""

    def __init__(self, index: int) -> None:
        super().__init__(f"statement {index} of the intent matched no row; nothing was written")
        self.index = index


class BatchNotCommitted(RuntimeError):
    """BEGIN or COMMIT of the batch failed: none of its intents was written."""


@dataclass
class WriterStats:
    batches: int = 0
    intents: int = 0
    largest_batch: int = 0

    def count(self, size: int) -> None:
        self.batches += 1
        self.intents += size
        self.largest_batch = max(self.largest_batch, size)


@dataclass
class Pending:
    """A submitted intent and where its result goes (the waiter's own loop and future)."""

    intent: Intent
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Results]


def take_batch(people: deque[Pending], background: deque[Pending], limit: int) -> list[Pending]:
    """The next batch: people first, but one slot is kept for background whenever one waits.

    So a background backlog never delays a person by more than one intent per batch, and a
    flood of people never stops background work: it still gets >= 1 slot per batch.
    """
    reserved = 1 if background else 0
    batch = [people.popleft() for _ in range(min(len(people), limit - reserved))]
    while background and len(batch) < limit:
        batch.append(background.popleft())
    return batch


def settle(pending: Pending, outcome: Results | BaseException) -> None:
    """Resolve a waiter on its own loop (a waiter that gave up is left alone)."""

    def resolve() -> None:
        if pending.future.done():
            return
        if isinstance(outcome, BaseException):
            pending.future.set_exception(outcome)
        else:
            pending.future.set_result(outcome)

    try:
        pending.loop.call_soon_threadsafe(resolve)
    except RuntimeError:
        pass  # the waiter's loop is closed: nobody is left to tell


class GroupWriter(ABC):
    """The shared half: accepting intents into two lanes, and the caller's side of waiting."""

    def __init__(self, batch_limit: int = DEFAULT_BATCH_LIMIT) -> None:
        if batch_limit < 2:
            raise ValueError("batch_limit must be at least 2 (one slot is kept for background)")
        self.batch_limit = batch_limit
        self.stats = WriterStats()
        self._lock = threading.Lock()  # the queue is shared with a writer thread on SQLite
        self._lanes: tuple[deque[Pending], deque[Pending]] = (deque(), deque())
        self._closing = False

    @property
    def waiting(self) -> int:
        """Intents queued and not yet taken into a batch."""
        with self._lock:
            return sum(len(lane) for lane in self._lanes)

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def close(self) -> None:
        """Stop accepting, commit what is queued, close the connection."""

    @abstractmethod
    def _wake(self) -> None:
        """Tell the writer there is work (or that it is closing); called outside the lock."""

    async def submit(self, intent: Intent) -> Results:
        """Queue `intent`; its rows per statement once its batch has committed."""
        loop = asyncio.get_running_loop()
        pending = Pending(intent, loop, loop.create_future())
        with self._lock:
            if self._closing:
                raise WriterClosed("the group-commit writer is closed; no intent was queued")
            self._lanes[intent.lane].append(pending)
        self._wake()
        return await pending.future

    async def execute(
        self,
        sql: str,
        params: Mapping[str, Any] | None = None,
        *,
        lane: Lane = Lane.BACKGROUND,
        require_row: bool = False,
    ) -> list[Row]:
        """One statement as an intent; its rows."""
        (rows,) = await self.submit(Intent((Statement(sql, params or {}, require_row),), lane))
        return rows

    def _take(self) -> list[Pending]:
        with self._lock:
            return take_batch(*self._lanes, self.batch_limit)

    def _stop_accepting(self) -> None:
        with self._lock:
            self._closing = True
        self._wake()

    @property
    def _drained(self) -> bool:
        with self._lock:
            return self._closing and not any(self._lanes)

    def _committed(
        self, batch: Sequence[Pending], outcomes: Sequence[Results | BaseException]
    ) -> None:
        """The batch's COMMIT returned: now, and only now, every waiter learns its outcome."""
        self.stats.count(len(batch))
        for pending, outcome in zip(batch, outcomes, strict=True):
            settle(pending, outcome)

    @staticmethod
    def _fail_all(batch: Sequence[Pending], error: BaseException) -> None:
        for (
            pending
        ) in batch:  # one exception each: raising one object in many tasks mixes tracebacks
            failure = BatchNotCommitted(f"the batch of {len(batch)} was not committed: {error}")
            failure.__cause__ = error
            settle(pending, failure)
