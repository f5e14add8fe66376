"""Durable state of the simulated venue: its own SQLite file, apart from the store.

The venue is the other side of the executor, so it keeps its own truth: a bot that
restarts (or was killed mid-dispatch) reconciles against this file by client id.
Plain `sqlite3` in WAL mode with `synchronous=FULL`: a transaction that has
committed survives a power loss, and every answer the venue gives is committed
before it is given. This module owns the file: its schema, its connections and
`VenueStore.run`, the one way in; the statements themselves are `tables.Txn`'s.

Every decimal is stored as TEXT in plain notation (`format(d, "f")`) and read back
with `Decimal(text)`: no float ever touches a price, a quantity or a fee. Inside a
transaction the decimal context traps `Inexact`, so an addition or a multiplication
that would have to round raises instead of silently losing digits. Only averages
divide, and they use `AVERAGE` (34 significant digits) explicitly.

Thread model: one connection, one lock; `VenueStore.run` is called from
`asyncio.to_thread` and opens `BEGIN IMMEDIATE` for writes, so two processes
sharing the file serialize too.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from decimal import localcontext
from pathlib import Path
from typing import TypeVar

from workers.domains.finance.sim.decimals import EXACT
from workers.domains.finance.sim.errors import VenueStoreError
from workers.domains.finance.sim.tables import Txn

SCHEMA_VERSION = 2
# what each version adds to a file written by the one before it
_UPGRADES = {
    2: (  # a venue whose prices have significant figures and orders a minimum value
        "ALTER TABLE instruments ADD COLUMN sig_figs INTEGER",
        "ALTER TABLE instruments ADD COLUMN min_notional TEXT",
    ),
}

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS accounts (
    name TEXT PRIMARY KEY,
    mode TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS instruments (
    name TEXT PRIMARY KEY,
    tick TEXT NOT NULL,
    lot TEXT NOT NULL,
    min_qty TEXT NOT NULL,
    mark TEXT NOT NULL,
    maker_fee_rate TEXT NOT NULL,
    taker_fee_rate TEXT NOT NULL,
    max_leverage TEXT NOT NULL,
    fee_currency TEXT NOT NULL,
    liquidity TEXT,
    sig_figs INTEGER,
    min_notional TEXT
);
CREATE TABLE IF NOT EXISTS orders (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    client_id TEXT NOT NULL UNIQUE,
    parent_client_id TEXT REFERENCES orders (client_id),
    role TEXT NOT NULL CHECK (role IN ('order', 'stop_loss', 'take_profit')),
    account TEXT NOT NULL,
    instrument TEXT NOT NULL,
    side TEXT NOT NULL,
    quantity TEXT NOT NULL,
    order_type TEXT NOT NULL,
    limit_price TEXT,
    max_slippage_bps TEXT,
    time_in_force TEXT NOT NULL,
    reduce_only INTEGER NOT NULL CHECK (reduce_only IN (0, 1)),
    leverage TEXT NOT NULL,
    trigger_price TEXT,
    stop_loss TEXT,
    take_profit TEXT,
    status TEXT NOT NULL CHECK (status IN
        ('accepted', 'resting', 'partially_filled', 'filled', 'rejected', 'cancelled')),
    filled_qty TEXT NOT NULL,
    reason TEXT,
    submit_count INTEGER NOT NULL CHECK (submit_count >= 0),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS orders_working ON orders (status, account);
CREATE INDEX IF NOT EXISTS orders_parent ON orders (parent_client_id);
CREATE TABLE IF NOT EXISTS fills (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    client_id TEXT NOT NULL REFERENCES orders (client_id),
    qty TEXT NOT NULL,
    price TEXT NOT NULL,
    fee TEXT,
    fee_currency TEXT NOT NULL,
    liquidity TEXT NOT NULL CHECK (liquidity IN ('maker', 'taker')),
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS fills_order ON fills (client_id);
CREATE TABLE IF NOT EXISTS positions (
    account TEXT NOT NULL,
    instrument TEXT NOT NULL,
    qty TEXT NOT NULL,
    avg_price TEXT,
    PRIMARY KEY (account, instrument)
);
"""


class VenueStore:
    """The venue's SQLite file. Use `run` from a worker thread (asyncio.to_thread).

    Two connections, each behind its own lock: one for writes, one for reads. In WAL mode a
    read sees the last commit without waiting for a write's fsync, so status reads (the
    executor's preflight and observations) do not queue behind other orders' submissions."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._lock = threading.Lock()
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()
        self.path = path

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    @classmethod
    def connect(cls, path: Path, *, create: bool = True) -> VenueStore:
        if not create and not path.exists():
            raise FileNotFoundError(f"no simulated venue state at {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = cls._open(path)
        store = cls(conn, path)
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise VenueStoreError(f"{path}: could not switch to WAL (journal mode {mode})")
            conn.execute("PRAGMA synchronous=FULL")
            store.run(store._migrate, write=True)
            store._reader = cls._open(path)  # after the migration: the schema is there
        except BaseException:
            store.close()
            raise
        return store

    def _migrate(self, tx: Txn) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                tx.execute(statement)
        found = tx.meta("schema_version")
        if found is None:
            tx.set_meta("schema_version", str(SCHEMA_VERSION))
        elif int(found) > SCHEMA_VERSION:
            raise VenueStoreError(
                f"{self.path}: venue schema version {found} is newer than this build "
                f"({SCHEMA_VERSION}); upgrade countersign or use another file"
            )
        elif int(found) < SCHEMA_VERSION:
            for version in range(int(found) + 1, SCHEMA_VERSION + 1):
                for statement in _UPGRADES[version]:
                    tx.execute(statement)
            tx.set_meta("schema_version", str(SCHEMA_VERSION))

    def run(self, fn: Callable[[Txn], T], *, write: bool) -> T:
        """Run `fn` in one transaction (IMMEDIATE for writes) with exact decimal arithmetic."""
        lock = self._lock if write or self._reader is None else self._read_lock
        with lock:
            conn = self._conn if lock is self._lock else self._reader
            if conn is None:
                raise VenueStoreError("the simulated venue is closed")
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                with localcontext(EXACT):
                    result = fn(Txn(conn))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

    def close(self) -> None:
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
