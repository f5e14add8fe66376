"""What every group-commit writer promises: batches, turns and work, and how waiters learn.

The intents a writer commits, and how each one runs, are `intents.py`'s.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection

from store.groupcommit.intents import Intent, Lane, Results, Row, Statement, current_lane

T = TypeVar("T")

DEFAULT_BATCH_LIMIT = 256  # intents per transaction; bounds a batch's time holding the lock


@dataclass(frozen=True)
class Turn:
    """Not an intent: a request to have the database to oneself for one transaction (a rare
    path written with SQLAlchemy on SQLite). The writer commits what it holds, lends the
    database and waits until it is given back; so SQLite still has one writer at a time."""

    lane: Lane


@dataclass(frozen=True)
class Work:
    """A write written with SQLAlchemy, as a plain function of a sync `Connection` (SQLite
    only). The writer runs it on its own thread inside the next batch, in its own savepoint,
    like an intent: many commit with one fsync and none waits for a turn. It must only
    touch the database and return quickly: the batch holds the write lock meanwhile. What
    it returns (or raises) reaches its caller after the batch's COMMIT."""

    fn: Callable[[Connection], Any]
    lane: Lane


class NestedTurn(RuntimeError):
    """A write was asked for while this task already holds the writer's turn: it would wait
    for itself forever."""


# (given back?, holding task): tasks started inside a turn inherit this context, but only
# the holding task itself would wait for itself
_turn_held: ContextVar[tuple[threading.Event, asyncio.Task[Any] | None] | None] = ContextVar(
    "countersign_turn", default=None
)


class WriterClosed(RuntimeError):
    """The writer no longer accepts intents (it is closing or closed)."""


class Withdrawn(RuntimeError):
    """The intent was taken back before any batch took it: nothing of it was written."""


class BatchNotCommitted(RuntimeError):
    """BEGIN or COMMIT of the batch failed: none of its intents was written."""


@dataclass
class WriterStats:
    batches: int = 0
    intents: int = 0  # items committed in batches: intents and work
    work: int = 0  # of those, `Work` items (`GroupWriter.run`)
    largest_batch: int = 0
    turns: int = 0  # SQLAlchemy transactions lent the database (`GroupWriter.turn`)
    isolated_reruns: int = 0  # batches run again, a savepoint per intent, after a failure

    def count(self, size: int) -> None:
        self.batches += 1
        self.intents += size
        self.largest_batch = max(self.largest_batch, size)


@dataclass(eq=False)  # each is itself: `withdraw` finds it by identity
class Pending:
    """A submitted intent and where its result goes (the waiter's own loop and future)."""

    intent: Intent | Turn | Work
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]  # Results for an intent, a threading.Event for a turn


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


def intent_of(pending: Pending) -> Intent:
    assert isinstance(pending.intent, Intent), "a turn is lent, never run as an intent"
    return pending.intent


def runs_of_intents(batch: Sequence[Pending]) -> list[list[Pending]]:
    """The batch cut at each turn: runs of intents and work (one transaction each) and lone
    turns, in the order taken."""
    runs: list[list[Pending]] = []
    for pending in batch:
        if isinstance(pending.intent, Turn):
            runs.append([pending])
        elif runs and not isinstance(runs[-1][0].intent, Turn):
            runs[-1].append(pending)
        else:
            runs.append([pending])
    return runs


def lend(pending: Pending, given_back: threading.Event) -> None:
    """Hand a turn to its waiter; a waiter that gave up gives it back at once."""

    def resolve() -> None:
        if pending.future.done():
            given_back.set()
        else:
            pending.future.set_result(given_back)

    try:
        pending.loop.call_soon_threadsafe(resolve)
    except RuntimeError:
        given_back.set()  # the waiter's loop is closed: nobody will use the turn


def _resolve(pending: Pending, outcome: Any) -> None:
    if pending.future.done():
        return  # a waiter that gave up is left alone
    if isinstance(outcome, BaseException):
        pending.future.set_exception(outcome)
    else:
        pending.future.set_result(outcome)


def settle(outcomes: Sequence[tuple[Pending, Any]]) -> None:
    """Resolve each waiter on its own loop: one wake-up per loop for the whole batch, not
    one per waiter (each is a write to the loop's self-pipe)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Pending, Any]]] = {}
    for pending, outcome in outcomes:
        by_loop.setdefault(pending.loop, []).append((pending, outcome))
    for loop, theirs in by_loop.items():

        def resolve_all(theirs: list[tuple[Pending, Any]] = theirs) -> None:
            for pending, outcome in theirs:
                _resolve(pending, outcome)

        try:
            loop.call_soon_threadsafe(resolve_all)
        except RuntimeError:
            pass  # the waiters' loop is closed: nobody is left to tell


class GroupWriter(ABC):
    """The shared half: accepting intents into two lanes, and the caller's side of waiting."""

    runs_work = False  # whether `run` (a `Work` item on the writer's thread) is supported

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

    def _queue(self, item: Intent | Turn | Work) -> Pending:
        held = _turn_held.get()
        if held is not None and not held[0].is_set() and held[1] is asyncio.current_task():
            raise NestedTurn("this task holds the writer's turn; write inside that transaction")
        loop = asyncio.get_running_loop()
        pending = Pending(item, loop, loop.create_future())
        with self._lock:
            if self._closing:
                raise WriterClosed("the group-commit writer is closed; nothing was queued")
            self._lanes[item.lane].append(pending)
        self._wake()
        return pending

    async def commit_intent(self, intent: Intent) -> Results:
        """Queue `intent`; its rows per statement once its batch has committed."""
        results: Results = await self._queue(intent).future
        return results

    async def run(self, fn: Callable[[Connection], T], lane: Lane | None = None) -> T:
        """`fn` as a `Work` item of the next batch; what it returned once the batch committed
        (or what it raised: then nothing of it was written)."""
        if not self.runs_work:
            raise TypeError(f"{type(self).__name__} runs intents only, not work")
        found: T = await self._queue(Work(fn, current_lane() if lane is None else lane)).future
        return found

    def enqueue(self, intent: Intent) -> Pending:
        """Queue `intent` and return at once; await `.future` for its rows, or `withdraw` it."""
        return self._queue(intent)

    def withdraw(self, pending: Pending) -> bool:
        """Take a queued intent back, if no batch has taken it yet: then nothing of it is
        written, ever, and its waiter gets `Withdrawn`. False once a batch has it (it will
        commit or fail with its batch)."""
        with self._lock:
            lane = self._lanes[pending.intent.lane]
            try:
                lane.remove(pending)
            except ValueError:
                return False
        if not pending.future.done():
            pending.future.set_exception(Withdrawn("taken back before it was written"))
        return True

    @asynccontextmanager
    async def turn(self, lane: Lane | None = None) -> AsyncIterator[None]:
        """The database to ourselves, between two batches, until the block ends."""
        future = self._queue(Turn(current_lane() if lane is None else lane)).future
        try:
            given_back: threading.Event = await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                future.result().set()  # lent just as we gave up: give it back
            raise
        token = _turn_held.set((given_back, asyncio.current_task()))
        try:
            yield
        finally:
            _turn_held.reset(token)
            given_back.set()

    async def execute(
        self,
        sql: str,
        params: Mapping[str, Any] | None = None,
        *,
        lane: Lane = Lane.BACKGROUND,
        require_row: bool = False,
    ) -> list[Row]:
        """One statement as an intent; its rows."""
        (rows,) = await self.commit_intent(
            Intent((Statement(sql, params or {}, require_row),), lane)
        )
        return rows

    def _lend(self, pending: Pending) -> threading.Event:
        """Hand `pending`'s turn over; the returned event is set when it is given back."""
        self.stats.turns += 1
        given_back = threading.Event()
        lend(pending, given_back)
        return given_back

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

    def _committed(self, batch: Sequence[Pending], outcomes: Sequence[Any]) -> None:
        """The batch's COMMIT returned: now, and only now, every waiter learns its outcome."""
        self.stats.count(len(batch))
        self.stats.work += sum(isinstance(pending.intent, Work) for pending in batch)
        settle(list(zip(batch, outcomes, strict=True)))

    @staticmethod
    def _fail_all(batch: Sequence[Pending], error: BaseException) -> None:
        failures = []
        for (
            pending
        ) in batch:  # one exception each: one object raised in many tasks mixes tracebacks
            failure = BatchNotCommitted(f"the batch of {len(batch)} was not committed: {error}")
            failure.__cause__ = error
            failures.append((pending, failure))
        settle(failures)
