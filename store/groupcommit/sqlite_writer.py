"""The SQLite writer: one thread, one stdlib connection, one transaction (one fsync) per batch."""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, StaticPool, create_engine
from sqlalchemy.engine import make_url

from store.backend.engine import SQLITE_BUSY_TIMEOUT_MS
from store.groupcommit.contract import (
    DEFAULT_BATCH_LIMIT,
    GroupWriter,
    Pending,
    Turn,
    Work,
    runs_of_intents,
)
from store.groupcommit.intents import (
    ConditionNotMet,
    Intent,
    Lane,
    Results,
    Row,
    Statement,
    needs_savepoint,
    run_statements,
)

# Called on the writer thread with the batch size, after the intents ran and before COMMIT.
# Tests hold it to prove no waiter is resolved before the commit.
BeforeCommit = Callable[[int], None]

# BEGIN IMMEDIATE retries while another process writes: the first pause, doubling up to the
# longest (a batch holds the lock a few milliseconds)
BUSY_FIRST_PAUSE_S = 0.0002
BUSY_MAX_PAUSE_S = 0.002


def busy_pauses() -> Iterator[float]:
    """The pauses between tries of a busy lock (BEGIN IMMEDIATE, the people-first
    turnstile), until the busy timeout has passed."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    pause = BUSY_FIRST_PAUSE_S
    while time.monotonic() < deadline:
        yield pause
        pause = min(BUSY_MAX_PAUSE_S, pause * 2)


def connect(path: str) -> sqlite3.Connection:
    """The writer's own connection, opened as the store opens its engine's (store/backend/engine.py)."""
    conn = sqlite3.connect(
        path, isolation_level=None, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, check_same_thread=False
    )
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    return conn


class _BatchOwnedConnection:
    """The writer's sqlite3 connection as SQLAlchemy sees it for `Work`: its commit and
    rollback do nothing, because the writer commits the whole batch itself (and rolls back
    one item to its savepoint). Everything else is the connection itself."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        pass  # the writer closes the real connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def sqlalchemy_view(conn: sqlite3.Connection) -> Connection:
    """A SQLAlchemy Connection over the writer's own sqlite3 connection, for `Work`."""
    engine = create_engine(
        "sqlite://", creator=lambda: _BatchOwnedConnection(conn), poolclass=StaticPool
    )
    return engine.connect()


def run_intent(conn: sqlite3.Connection, intent: Intent) -> Results:
    """The intent's statements in order, each drained (so none is still open at COMMIT)."""

    def execute(statement: Statement) -> list[Row]:
        cursor = conn.execute(statement.sql, dict(statement.params))
        rows = cursor.fetchall()
        names = [column[0] for column in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in rows]

    return run_statements(intent, execute)


class PeopleFirst:
    """People's batches before background batches, across the processes writing one SQLite
    file (the bot and its worker process, `workers = "process"`).

    SQLite's write lock is not fair: a worker process with a backlog takes it again the
    moment it commits, while a click's claim retries BEGIN. So a batch that answers someone
    holds a turnstile (an flock on `<database>-turn`) from before its BEGIN until its
    COMMIT, and a background-only batch passes through it before its BEGIN: a person then
    waits for at most the one background transaction already under way. The kernel drops
    the lock with a process that dies holding it."""

    def __init__(self, database: str) -> None:
        self._fd = os.open(f"{database}-turn", os.O_RDWR | os.O_CREAT, 0o600)
        self.held = False

    def enter(self, people_waiting: bool) -> None:
        """Wait while another writer's people batch runs; hold the turnstile if ours is one.
        Bounded like BEGIN: past the busy timeout, go on (SQLite's lock still serializes)."""
        for pause in busy_pauses():
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(pause)
        else:
            return
        if people_waiting:
            self.held = True
        else:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def leave(self) -> None:
        if self.held:
            self.held = False
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self._fd)


def _finish(stopped: asyncio.Future[None]) -> None:
    if not stopped.done():
        stopped.set_result(None)


class SqliteGroupWriter(GroupWriter):
    runs_work = True

    def __init__(
        self,
        path: str,
        *,
        batch_limit: int = DEFAULT_BATCH_LIMIT,
        before_commit: BeforeCommit | None = None,
    ) -> None:
        super().__init__(batch_limit)
        self.path = path
        self._before_commit = before_commit
        self._work = threading.Condition(self._lock)
        # a daemon: a process that exits without close() is not held up by it (whatever it
        # had not committed was never acknowledged either)
        self._thread = threading.Thread(
            target=self._run, name="countersign-group-commit", daemon=True
        )
        self._stopped: asyncio.Future[None] | None = None
        self._conn: sqlite3.Connection | None = None
        self._work_conn: Connection | None = None
        self._people_first: PeopleFirst | None = None

    @classmethod
    def for_url(
        cls,
        url: str,
        *,
        batch_limit: int = DEFAULT_BATCH_LIMIT,
        before_commit: BeforeCommit | None = None,
    ) -> SqliteGroupWriter:
        database = make_url(url).database
        if not database or database == ":memory:":
            raise ValueError(
                "store.url: group commit needs a SQLite file (its own connection cannot see "
                "another connection's :memory: database)"
            )
        return cls(str(Path(database)), batch_limit=batch_limit, before_commit=before_commit)

    async def start(self) -> None:
        # opened here, not on the thread, so a bad path raises to whoever starts the writer
        self._conn = await asyncio.to_thread(connect, self.path)
        self._work_conn = await asyncio.to_thread(sqlalchemy_view, self._conn)
        self._people_first = PeopleFirst(self.path)
        loop = asyncio.get_running_loop()
        self._stopped = loop.create_future()
        self._loop = loop
        self._thread.start()

    async def close(self) -> None:
        self._stop_accepting()
        if self._stopped is not None:
            await self._stopped

    def _wake(self) -> None:
        with self._work:
            self._work.notify()

    def _run(self) -> None:
        assert self._conn is not None and self._people_first is not None
        conn, people_first = self._conn, self._people_first
        try:
            while True:
                with self._work:
                    self._work.wait_for(lambda: self._closing or any(self._lanes))
                    people_waiting = bool(self._lanes[Lane.PEOPLE])
                # The write lock first, the batch after: while this waits for another
                # writer (another process, a borrowed turn elsewhere), nothing is taken, so
                # a waiting intent can still be withdrawn.
                people_first.enter(people_waiting)
                try:
                    self._write_batch(conn)
                finally:
                    people_first.leave()
                if self._drained:
                    return
        finally:
            if self._work_conn is not None:
                self._work_conn.close()
            conn.close()
            people_first.close()
            stopped = self._stopped
            assert stopped is not None
            self._loop.call_soon_threadsafe(_finish, stopped)

    def _write_batch(self, conn: sqlite3.Connection) -> None:
        began = self._begin(conn)
        batch = self._take()
        if not batch:
            self._rollback(conn)
            return
        if isinstance(began, BaseException):
            self._fail_all(batch, began)
            return
        for run in runs_of_intents(batch):
            if isinstance(run[0].intent, Turn):
                self._rollback(conn)  # nothing written yet in this transaction
                given_back = self._lend(run[0])
                given_back.wait()  # the borrower writes on its own connection meanwhile
            else:
                self._commit(conn, run)

    def _commit(self, conn: sqlite3.Connection, batch: Sequence[Pending]) -> None:
        try:
            if not conn.in_transaction:
                conn.execute("BEGIN IMMEDIATE")
            # First optimistically: a savepoint per intent is two more statements, so
            # intents that cannot leave half their writes behind run without one. If one
            # fails, the batch goes back to its own savepoint and runs again isolated.
            conn.execute("SAVEPOINT batch")
            outcomes = self._run_all(conn, batch, isolate=False)
            if outcomes is None:
                conn.execute("ROLLBACK TO batch")
                self.stats.isolated_reruns += 1
                outcomes = self._run_all(conn, batch, isolate=True)
                assert outcomes is not None
            conn.execute("RELEASE batch")
            if self._before_commit is not None:
                self._before_commit(len(batch))
            conn.execute("COMMIT")
        except BaseException as error:
            self._rollback(conn)
            self._fail_all(batch, error)
            return
        self._committed(batch, outcomes)

    @staticmethod
    def _begin(conn: sqlite3.Connection) -> BaseException | None:
        """BEGIN IMMEDIATE, waiting for another process's writer (`workers = "process"`) in
        short steps: SQLite's own busy handler sleeps 1, 2, 5, 10, ... ms between tries, far
        longer than a batch holds the lock. Busy beyond the timeout, or I/O: the batch fails."""
        conn.execute("PRAGMA busy_timeout=0")
        busy: BaseException = TimeoutError("the write lock stayed busy")
        try:
            for pause in busy_pauses():
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    return None
                except sqlite3.OperationalError as error:
                    if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                        return error
                    busy = error
                except sqlite3.Error as error:
                    return error
                time.sleep(pause)
            return busy
        finally:
            conn.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # SQLite already rolled back (e.g. a failed COMMIT on I/O error)

    def _run_all(
        self, conn: sqlite3.Connection, batch: Sequence[Pending], *, isolate: bool
    ) -> list[Any] | None:
        """Each item's outcome: its Results, what a Work returned, or its exception. None if,
        not isolating, an intent without a savepoint failed (its writes may be half done)."""
        outcomes: list[Any] = []
        for pending in batch:
            item = pending.intent
            if isolate or not isinstance(item, Intent) or needs_savepoint(item):
                outcomes.append(self._in_savepoint(conn, item))
                continue
            try:
                outcomes.append(run_intent(conn, item))
            except ConditionNotMet as unmet:  # its first statement: nothing was written
                outcomes.append(unmet)
            except Exception:
                return None
        return outcomes

    def _in_savepoint(self, conn: sqlite3.Connection, item: Intent | Turn | Work) -> Any:
        assert not isinstance(item, Turn), "a turn is lent, never run in a batch"
        conn.execute("SAVEPOINT intent")
        try:
            if isinstance(item, Work):
                assert self._work_conn is not None
                # SQLAlchemy's commit and rollback are its own bookkeeping only: the
                # batch-owned connection's touch nothing (the batch commits below, or the
                # item rolls back to its savepoint)
                try:
                    found = item.fn(self._work_conn)
                except Exception:
                    self._work_conn.rollback()
                    raise
                self._work_conn.commit()
            else:
                found = run_intent(conn, item)
        except Exception as error:  # the item's own failure: undo it, the batch goes on
            conn.execute("ROLLBACK TO intent")
            conn.execute("RELEASE intent")
            return error
        conn.execute("RELEASE intent")
        return found
