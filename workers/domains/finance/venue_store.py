"""Durable state of the simulated venue: its own SQLite file, apart from the store.

The venue is the other side of the executor, so it keeps its own truth: a bot that
restarts (or was killed mid-dispatch) reconciles against this file by client id.
Plain `sqlite3` in WAL mode with `synchronous=FULL`: a transaction that has
committed survives a power loss, and every answer the venue gives is committed
before it is given.

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import (
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    localcontext,
)
from pathlib import Path
from typing import TypeVar

SCHEMA_VERSION = 1
# Exact arithmetic: anything that would round raises decimal.Inexact.
EXACT = Context(prec=200, traps=[Inexact, InvalidOperation, DivisionByZero, Overflow])
# The one place that divides (average prices): 34 significant digits, half-even.
AVERAGE = Context(prec=34, traps=[InvalidOperation, DivisionByZero, Overflow])

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
    liquidity TEXT
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


def text(value: Decimal) -> str:
    """Plain decimal notation, never an exponent: Decimal('6E+4') -> '60000'."""
    return format(value, "f")


def plain(value: Decimal) -> Decimal:
    """The same value without trailing zeros (and never an exponent above zero)."""
    if value == 0:
        return Decimal(0)
    reduced = value.normalize(EXACT)
    if reduced.as_tuple().exponent > 0:  # type: ignore[operator]
        reduced = reduced.quantize(Decimal(1), context=EXACT)
    return reduced


def opt_text(value: Decimal | None) -> str | None:
    return None if value is None else text(value)


def dec(value: str) -> Decimal:
    return Decimal(value)


def opt_dec(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def require_decimal(name: str, value: object) -> Decimal:
    """A finite Decimal, or a TypeError/ValueError naming the field (floats are refused)."""
    if not isinstance(value, Decimal):
        raise TypeError(f"{name} must be a decimal.Decimal, not {type(value).__name__}")
    if not value.is_finite():
        raise ValueError(f"{name} must be a finite decimal, not {value}")
    return value


@dataclass(frozen=True)
class Instrument:
    """A tradable instrument: its increments, its mark price and its fee rates.

    `liquidity` is the quantity a taker order can fill at the mark at once
    (None: unlimited); the rest of a GTC limit rests, of IOC/market is cancelled.
    """

    name: str
    tick: Decimal
    lot: Decimal
    min_qty: Decimal
    mark: Decimal
    maker_fee_rate: Decimal = Decimal("0.0002")
    taker_fee_rate: Decimal = Decimal("0.0005")
    max_leverage: Decimal = Decimal("20")
    fee_currency: str = "USDC"
    liquidity: Decimal | None = None

    def __post_init__(self) -> None:
        for field in ("tick", "lot", "min_qty", "mark", "max_leverage"):
            if require_decimal(f"{self.name}.{field}", getattr(self, field)) <= 0:
                raise ValueError(f"{self.name}.{field} must be greater than zero")
        for field in ("maker_fee_rate", "taker_fee_rate"):
            if require_decimal(f"{self.name}.{field}", getattr(self, field)) < 0:
                raise ValueError(f"{self.name}.{field} must not be negative")
        with localcontext(EXACT):
            if self.min_qty % self.lot != 0:
                raise ValueError(f"{self.name}.min_qty must be a multiple of the lot {self.lot}")
            if self.liquidity is not None:
                require_decimal(f"{self.name}.liquidity", self.liquidity)
                if self.liquidity <= 0 or self.liquidity % self.lot != 0:
                    raise ValueError(
                        f"{self.name}.liquidity must be a positive multiple of the lot {self.lot}"
                    )


@dataclass
class OrderRow:
    """One stored order (a submitted parent or a protective child), decoded."""

    client_id: str
    parent_client_id: str | None
    role: str
    account: str
    instrument: str
    side: str
    quantity: Decimal
    order_type: str
    limit_price: Decimal | None
    max_slippage_bps: Decimal | None
    time_in_force: str
    reduce_only: bool
    leverage: Decimal
    trigger_price: Decimal | None
    stop_loss: Decimal | None
    take_profit: Decimal | None
    status: str
    filled_qty: Decimal
    reason: str | None
    submit_count: int
    created_at: str
    updated_at: str
    seq: int = 0

    @property
    def remaining(self) -> Decimal:
        return self.quantity - self.filled_qty


@dataclass(frozen=True)
class FillRow:
    id: int
    client_id: str
    qty: Decimal
    price: Decimal
    fee: Decimal | None
    fee_currency: str
    liquidity: str
    at: str


@dataclass
class PositionRow:
    account: str
    instrument: str
    qty: Decimal
    avg_price: Decimal | None


_ORDER_COLUMNS = (
    "client_id, parent_client_id, role, account, instrument, side, quantity, order_type, "
    "limit_price, max_slippage_bps, time_in_force, reduce_only, leverage, trigger_price, "
    "stop_loss, take_profit, status, filled_qty, reason, submit_count, created_at, updated_at, seq"
)


def _order(row: sqlite3.Row) -> OrderRow:
    return OrderRow(
        client_id=row["client_id"],
        parent_client_id=row["parent_client_id"],
        role=row["role"],
        account=row["account"],
        instrument=row["instrument"],
        side=row["side"],
        quantity=dec(row["quantity"]),
        order_type=row["order_type"],
        limit_price=opt_dec(row["limit_price"]),
        max_slippage_bps=opt_dec(row["max_slippage_bps"]),
        time_in_force=row["time_in_force"],
        reduce_only=bool(row["reduce_only"]),
        leverage=dec(row["leverage"]),
        trigger_price=opt_dec(row["trigger_price"]),
        stop_loss=opt_dec(row["stop_loss"]),
        take_profit=opt_dec(row["take_profit"]),
        status=row["status"],
        filled_qty=dec(row["filled_qty"]),
        reason=row["reason"],
        submit_count=int(row["submit_count"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        seq=int(row["seq"]),
    )


def _instrument(row: sqlite3.Row) -> Instrument:
    return Instrument(
        name=row["name"],
        tick=dec(row["tick"]),
        lot=dec(row["lot"]),
        min_qty=dec(row["min_qty"]),
        mark=dec(row["mark"]),
        maker_fee_rate=dec(row["maker_fee_rate"]),
        taker_fee_rate=dec(row["taker_fee_rate"]),
        max_leverage=dec(row["max_leverage"]),
        fee_currency=row["fee_currency"],
        liquidity=opt_dec(row["liquidity"]),
    )


class Txn:
    """Reads and writes inside one transaction (see `VenueStore.run`)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str) -> None:
        self._conn.execute(sql)

    # -- meta, accounts, instruments ------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def accounts(self) -> list[str]:
        return [r["name"] for r in self._conn.execute("SELECT name FROM accounts ORDER BY name")]

    def account_mode(self, name: str) -> str | None:
        row = self._conn.execute("SELECT mode FROM accounts WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row["mode"])

    def add_account(self, name: str, mode: str) -> None:
        self._conn.execute(
            "INSERT INTO accounts (name, mode) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
            (name, mode),
        )

    def instruments(self) -> dict[str, Instrument]:
        rows = self._conn.execute("SELECT * FROM instruments ORDER BY name")
        return {r["name"]: _instrument(r) for r in rows}

    def instrument(self, name: str) -> Instrument | None:
        row = self._conn.execute("SELECT * FROM instruments WHERE name = ?", (name,)).fetchone()
        return None if row is None else _instrument(row)

    def upsert_instrument(self, inst: Instrument) -> None:
        """Insert, or update the spec of a stored instrument keeping its stored mark."""
        self._conn.execute(
            "INSERT INTO instruments (name, tick, lot, min_qty, mark, maker_fee_rate, "
            "taker_fee_rate, max_leverage, fee_currency, liquidity) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET tick = excluded.tick, lot = excluded.lot, "
            "min_qty = excluded.min_qty, maker_fee_rate = excluded.maker_fee_rate, "
            "taker_fee_rate = excluded.taker_fee_rate, max_leverage = excluded.max_leverage, "
            "fee_currency = excluded.fee_currency, liquidity = excluded.liquidity",
            (
                inst.name,
                text(inst.tick),
                text(inst.lot),
                text(inst.min_qty),
                text(inst.mark),
                text(inst.maker_fee_rate),
                text(inst.taker_fee_rate),
                text(inst.max_leverage),
                inst.fee_currency,
                opt_text(inst.liquidity),
            ),
        )

    def set_mark(self, name: str, mark: Decimal) -> bool:
        cur = self._conn.execute(
            "UPDATE instruments SET mark = ? WHERE name = ?", (text(mark), name)
        )
        return cur.rowcount == 1

    # -- orders ---------------------------------------------------------------------------
    def order(self, client_id: str) -> OrderRow | None:
        row = self._conn.execute(
            f"SELECT {_ORDER_COLUMNS} FROM orders WHERE client_id = ?", (client_id,)
        ).fetchone()
        return None if row is None else _order(row)

    def orders(
        self,
        *,
        account: str | None = None,
        statuses: Sequence[str] | None = None,
        roles: Sequence[str] | None = None,
    ) -> list[OrderRow]:
        """Orders in submission order, optionally filtered."""
        where: list[str] = []
        args: list[str] = []
        if account is not None:
            where.append("account = ?")
            args.append(account)
        for column, values in (("status", statuses), ("role", roles)):
            if values is not None:
                where.append(f"{column} IN ({', '.join('?' for _ in values)})")
                args.extend(values)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._conn.execute(f"SELECT {_ORDER_COLUMNS} FROM orders{clause} ORDER BY seq", args)
        return [_order(r) for r in rows]

    def children(self, client_id: str) -> list[OrderRow]:
        rows = self._conn.execute(
            f"SELECT {_ORDER_COLUMNS} FROM orders WHERE parent_client_id = ? ORDER BY seq",
            (client_id,),
        )
        return [_order(r) for r in rows]

    def insert_order(self, o: OrderRow) -> None:
        cur = self._conn.execute(
            "INSERT INTO orders (client_id, parent_client_id, role, account, instrument, side, "
            "quantity, order_type, limit_price, max_slippage_bps, time_in_force, reduce_only, "
            "leverage, trigger_price, stop_loss, take_profit, status, filled_qty, reason, "
            "submit_count, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                o.client_id,
                o.parent_client_id,
                o.role,
                o.account,
                o.instrument,
                o.side,
                text(o.quantity),
                o.order_type,
                opt_text(o.limit_price),
                opt_text(o.max_slippage_bps),
                o.time_in_force,
                int(o.reduce_only),
                text(o.leverage),
                opt_text(o.trigger_price),
                opt_text(o.stop_loss),
                opt_text(o.take_profit),
                o.status,
                text(o.filled_qty),
                o.reason,
                o.submit_count,
                o.created_at,
                o.updated_at,
            ),
        )
        o.seq = int(cur.lastrowid or 0)

    def save_order(self, o: OrderRow) -> None:
        """Store the fields that change after placement."""
        self._conn.execute(
            "UPDATE orders SET quantity = ?, status = ?, filled_qty = ?, reason = ?, "
            "submit_count = ?, updated_at = ? WHERE client_id = ?",
            (
                text(o.quantity),
                o.status,
                text(o.filled_qty),
                o.reason,
                o.submit_count,
                o.updated_at,
                o.client_id,
            ),
        )

    # -- fills and positions --------------------------------------------------------------
    def add_fill(
        self,
        client_id: str,
        qty: Decimal,
        price: Decimal,
        fee: Decimal | None,
        fee_currency: str,
        liquidity: str,
        at: str,
    ) -> FillRow:
        cur = self._conn.execute(
            "INSERT INTO fills (client_id, qty, price, fee, fee_currency, liquidity, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (client_id, text(qty), text(price), opt_text(fee), fee_currency, liquidity, at),
        )
        return FillRow(
            int(cur.lastrowid or 0), client_id, qty, price, fee, fee_currency, liquidity, at
        )

    def fills(self, client_ids: Iterable[str]) -> dict[str, list[FillRow]]:
        ids = list(client_ids)
        found: dict[str, list[FillRow]] = {cid: [] for cid in ids}
        if not ids:
            return found
        rows = self._conn.execute(
            f"SELECT * FROM fills WHERE client_id IN ({', '.join('?' for _ in ids)}) ORDER BY id",
            ids,
        )
        for r in rows:
            found[r["client_id"]].append(
                FillRow(
                    id=int(r["id"]),
                    client_id=r["client_id"],
                    qty=dec(r["qty"]),
                    price=dec(r["price"]),
                    fee=opt_dec(r["fee"]),
                    fee_currency=r["fee_currency"],
                    liquidity=r["liquidity"],
                    at=r["at"],
                )
            )
        return found

    def position(self, account: str, instrument: str) -> PositionRow:
        row = self._conn.execute(
            "SELECT qty, avg_price FROM positions WHERE account = ? AND instrument = ?",
            (account, instrument),
        ).fetchone()
        if row is None:
            return PositionRow(account, instrument, Decimal(0), None)
        return PositionRow(account, instrument, dec(row["qty"]), opt_dec(row["avg_price"]))

    def positions(self, account: str) -> list[PositionRow]:
        rows = self._conn.execute(
            "SELECT instrument, qty, avg_price FROM positions WHERE account = ? ORDER BY instrument",
            (account,),
        )
        return [
            PositionRow(account, r["instrument"], dec(r["qty"]), opt_dec(r["avg_price"]))
            for r in rows
        ]

    def save_position(self, p: PositionRow) -> None:
        self._conn.execute(
            "INSERT INTO positions (account, instrument, qty, avg_price) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (account, instrument) DO UPDATE SET qty = excluded.qty, "
            "avg_price = excluded.avg_price",
            (p.account, p.instrument, text(p.qty), opt_text(p.avg_price)),
        )


class VenueStoreError(RuntimeError):
    pass


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
