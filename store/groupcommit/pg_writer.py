"""The PostgreSQL writer: one dedicated asyncpg connection, one transaction per batch."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from store.groupcommit.contract import (
    DEFAULT_BATCH_LIMIT,
    GroupWriter,
    Pending,
    Turn,
    intent_of,
    runs_of_intents,
)
from store.groupcommit.intents import (
    ConditionNotMet,
    Intent,
    Results,
    Statement,
    intent_steps,
    needs_savepoint,
)

# Batches commit on this many connections at once: PostgreSQL runs them in parallel, where
# one connection would leave the server waiting on each round trip in turn.
DEFAULT_CONNECTIONS = 4

# Awaited with the batch size after the intents ran and before COMMIT (tests hold it).
BeforeCommit = Callable[[int], Awaitable[None]]

# `:name` but not a `::type` cast; hand-written intents keep `:` out of their literals
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@functools.lru_cache(maxsize=512)
def positional(sql: str) -> tuple[str, tuple[str, ...]]:
    """`:name` parameters as asyncpg's `$n`, and the names in `$n` order (a name used twice
    is one parameter)."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _NAMED.sub(number, sql), tuple(names)


def arguments(statement: Statement) -> tuple[str, list[Any]]:
    sql, names = positional(statement.sql)
    missing = [name for name in names if name not in statement.params]
    if missing:
        raise KeyError(f"statement parameters missing: {', '.join(missing)}")
    return sql, [statement.params[name] for name in names]


def asyncpg_dsn(sqlalchemy_url: str) -> str:
    """postgresql+asyncpg://... -> the postgresql://... asyncpg takes."""
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(False)


async def run_intent(conn: asyncpg.Connection, intent: Intent) -> Results:
    steps = intent_steps(intent)
    try:
        statement = next(steps)
        while True:
            sql, args = arguments(statement)
            statement = steps.send([dict(record) for record in await conn.fetch(sql, *args)])
    except StopIteration as done:
        results: Results = done.value
        return results


class PgGroupWriter(GroupWriter):
    """One thread running its own event loop and one asyncpg connection.

    Its own loop, because a batch is a chain of round trips: on the application's loop each
    one would wait its turn behind every task the application has ready (50 clicks being
    checked and rendered), and a batch would take that many times longer.
    """

    def __init__(
        self,
        dsn: str,
        schema: str | None = None,
        *,
        batch_limit: int = DEFAULT_BATCH_LIMIT,
        before_commit: BeforeCommit | None = None,
        connections: int = DEFAULT_CONNECTIONS,
    ) -> None:
        super().__init__(batch_limit)
        if connections < 1:
            raise ValueError("connections must be at least 1")
        self._dsn = dsn
        self._schema = schema
        self._before_commit = before_commit
        self._conns: list[asyncpg.Connection] = []
        self._connections = connections
        self._work: asyncio.Event | None = None  # made on the writer's loop
        # a turn is lent only while no other connection is inside a batch, and none starts
        # one until it is given back
        self._turns: asyncio.Condition | None = None
        self._busy = 0  # connections inside a batch
        self._lent = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def for_url(
        cls,
        url: str,
        schema: str | None = None,
        *,
        batch_limit: int = DEFAULT_BATCH_LIMIT,
        before_commit: BeforeCommit | None = None,
        connections: int = DEFAULT_CONNECTIONS,
    ) -> PgGroupWriter:
        return cls(
            asyncpg_dsn(url),
            schema,
            batch_limit=batch_limit,
            before_commit=before_commit,
            connections=connections,
        )

    async def start(self) -> None:
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._main(ready)),
            name="countersign-group-commit",
            daemon=True,  # what it had not committed was never acknowledged either
        )
        self._thread.start()
        await asyncio.wrap_future(ready)  # a bad DSN raises here, to whoever starts it

    async def close(self) -> None:
        self._stop_accepting()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)

    def _wake(self) -> None:
        loop, work = self._loop, self._work
        if loop is not None and work is not None:
            with contextlib.suppress(RuntimeError):  # its loop has ended: nothing to wake
                loop.call_soon_threadsafe(work.set)

    async def _main(self, ready: concurrent.futures.Future[None]) -> None:
        try:
            self._conns = [await self._connect() for _ in range(self._connections)]
        except BaseException as error:
            for conn in self._conns:
                await conn.close()
            ready.set_exception(error)
            return
        self._work = asyncio.Event()
        self._turns = asyncio.Condition()
        self._loop = asyncio.get_running_loop()
        ready.set_result(None)
        self._work.set()  # whatever was queued before the loop was known
        await asyncio.gather(*(self._run(index) for index in range(self._connections)))

    async def _connect(self) -> asyncpg.Connection:
        settings = {"search_path": self._schema} if self._schema else None
        return await asyncpg.connect(self._dsn, server_settings=settings)

    async def _run(self, index: int) -> None:
        """One connection's loop: take whatever waits, commit it, again."""
        assert self._work is not None
        try:
            while not self._drained:
                await self._work.wait()
                self._work.clear()
                while batch := await self._take_when_not_lent():
                    self._work.set()  # more may be waiting: another connection takes it
                    try:
                        for run in runs_of_intents(batch):
                            if isinstance(run[0].intent, Turn):
                                await self._lend_alone(run[0])
                            else:
                                await self._commit(index, run)
                    finally:
                        await self._done_with_batch()
        finally:
            await self._conns[index].close()

    async def _take_when_not_lent(self) -> list[Pending]:
        assert self._turns is not None
        async with self._turns:
            await self._turns.wait_for(lambda: not self._lent)
            batch = self._take()
            self._busy += bool(batch)
            return batch

    async def _done_with_batch(self) -> None:
        assert self._turns is not None
        async with self._turns:
            self._busy -= 1
            self._turns.notify_all()

    async def _lend_alone(self, pending: Pending) -> None:
        """Lend the database once every other connection has finished its batch."""
        assert self._turns is not None
        async with self._turns:
            self._lent = True
            await self._turns.wait_for(lambda: self._busy == 1)  # only this one
        try:
            given_back = self._lend(pending)
            await asyncio.to_thread(given_back.wait)
        finally:
            async with self._turns:
                self._lent = False
                self._turns.notify_all()

    async def _commit(self, index: int, batch: Sequence[Pending]) -> None:
        """One transaction for the batch. First optimistically: a savepoint costs two round
        trips, so intents that cannot leave half their writes behind run without one. If a
        statement fails (PostgreSQL then aborts the whole transaction) the batch is rolled
        back and run again with a savepoint per intent, so the failure stays its own."""
        try:
            if self._conns[index].is_closed():
                self._conns[index] = await self._connect()  # the server dropped it: a new one
            conn = self._conns[index]
            outcomes = await self._in_transaction(conn, batch, isolate=False)
            if outcomes is None:
                self.stats.isolated_reruns += 1
                outcomes = await self._in_transaction(conn, batch, isolate=True)
            assert outcomes is not None
        except (Exception, asyncio.CancelledError) as error:
            self._fail_all(batch, error)
            if isinstance(error, asyncio.CancelledError):
                raise
            return
        self._committed(batch, outcomes)

    async def _in_transaction(
        self, conn: asyncpg.Connection, batch: Sequence[Pending], *, isolate: bool
    ) -> list[Results | BaseException] | None:
        """The batch's outcomes once committed; None if, not isolating, a statement failed
        (the transaction was rolled back: nothing of the batch was written)."""
        outcomes: list[Results | BaseException | None] = [None] * len(batch)
        transaction = conn.transaction()
        await transaction.start()
        try:
            for index in in_lock_order(batch):
                intent = intent_of(batch[index])
                if isolate or needs_savepoint(intent):
                    outcomes[index] = await self._in_savepoint(conn, intent)
                    continue
                try:
                    outcomes[index] = await run_intent(conn, intent)
                except ConditionNotMet as unmet:  # its first statement: nothing was written
                    outcomes[index] = unmet
                except (asyncpg.PostgresError, KeyError):
                    await transaction.rollback()
                    return None
            if self._before_commit is not None:
                await self._before_commit(len(batch))
            await transaction.commit()
        except BaseException:
            if not conn.is_closed():
                await transaction.rollback()
            raise
        ran = [outcome for outcome in outcomes if outcome is not None]
        assert len(ran) == len(batch), "every intent of the batch ran"
        return ran

    @staticmethod
    async def _in_savepoint(conn: asyncpg.Connection, intent: Intent) -> Results | BaseException:
        try:
            async with conn.transaction():  # nested: a SAVEPOINT
                return await run_intent(conn, intent)
        except (asyncpg.PostgresError, ConditionNotMet, KeyError) as error:
            return error  # the intent's own failure, rolled back to its savepoint


def lock_order(intent: Intent) -> tuple[str, str]:
    """Where an intent runs in its batch: by the operation it writes (the `operation_id` its
    statements name), then by its inbox key. Batches commit on several connections at once;
    in this order two of them that write the same rows lock them in the same order, so one
    waits for the other instead of both waiting for each other (a deadlock PostgreSQL breaks
    only after `deadlock_timeout`, by failing one batch, which then runs again)."""
    operation = key = ""
    for statement in intent.statements:
        operation = operation or str(statement.params.get("operation_id") or "")
        key = key or str(statement.params.get("key") or "")
    return operation, key


def in_lock_order(batch: Sequence[Pending]) -> list[int]:
    """The batch's indexes in `lock_order` (a stable sort: one operation's intents keep the
    order they were queued in)."""
    return sorted(range(len(batch)), key=lambda index: lock_order(intent_of(batch[index])))
