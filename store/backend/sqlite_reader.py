"""Hot reads on SQLite in one hop: a read is a plain function of a sync SQLAlchemy
`Connection`, run whole on a thread of the reader's own.

Why: through aiosqlite every statement, fetch, begin and rollback is a hop from the event
loop to the connection's thread and back, and under load each hop waits for a turn of the
loop; a click's operation read took several ms that way. Here the function runs on the
thread with its own persistent sqlite3 connection (WAL: readers never wait for the writer),
inside one deferred transaction, so what it reads is one snapshot; one hop there and back.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from sqlalchemy import Connection

from store.groupcommit.sqlite_writer import connect, sqlalchemy_view

T = TypeVar("T")
THREADS = 2  # a long read (a dashboard page) leaves the other thread to the hot path


class SqliteReader:
    def __init__(self, path: str, threads: int = THREADS) -> None:
        self.path = path
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="countersign-read")
        self._local = threading.local()
        self._opened: list[tuple[sqlite3.Connection, Connection]] = []
        self._opened_lock = threading.Lock()

    async def run(self, read: Callable[[Connection], T]) -> T:
        """What `read` returns; it must only read."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._read, read)

    def _read(self, read: Callable[[Connection], T]) -> T:
        raw, view = self._connection()
        raw.execute("BEGIN")
        try:
            return read(view)
        finally:
            view.rollback()  # SQLAlchemy's own bookkeeping; the view's rollback is a no-op
            raw.execute("ROLLBACK")

    def _connection(self) -> tuple[sqlite3.Connection, Connection]:
        opened: tuple[sqlite3.Connection, Connection] | None = getattr(self._local, "conn", None)
        if opened is None:
            raw = connect(self.path)
            opened = (raw, sqlalchemy_view(raw))
            self._local.conn = opened
            with self._opened_lock:
                self._opened.append(opened)
        return opened

    async def close(self) -> None:
        await asyncio.to_thread(self._pool.shutdown, wait=True)
        with self._opened_lock:
            for raw, view in self._opened:
                view.close()
                raw.close()
            self._opened.clear()
