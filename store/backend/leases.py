"""Leasing due rows: the one pattern card delivery, execution and result return share.

A worker takes a batch of due rows with ONE statement that moves their due time forward
and returns their ids (on SQLite an intent of the store's group-commit writer; on
PostgreSQL a short transaction of its own, so its row locks are not held for a batch):

    UPDATE t SET due = :until
     WHERE id IN (SELECT id FROM t WHERE due <= :now [AND ...]
                   ORDER BY due LIMIT :n FOR UPDATE SKIP LOCKED)
    RETURNING id

and then reads those rows (a read, after the commit). On PostgreSQL `SKIP LOCKED` lets
several workers and replicas lease at once, each passing over the rows another is taking,
so no row is ever leased twice; a row changed under us is re-checked against `due <= :now`
before it is locked. SQLite has one writer at a time (and no `FOR UPDATE`), so the
statement simply runs alone. A lease left by a dead worker falls due again when `until`
passes, or at once if whoever knew of it releases it (`release`): a worker process tells its
parent of each lease before it takes it (`announce_leases`), and the parent, which sees the
child die, releases what it held, so recovery takes the restart, not the lease.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Update, func, select, update

from store.authority.records import Operation
from store.authority.store import Store
from store.claims.click_sql import bound_time
from store.groupcommit import Intent, Statement, run_on_connection
from store.schema.tables import Base, OperationRow, UTCDateTime

RELEASE_CHUNK = 500  # leases per statement (bound parameters)

# `{also}`: a condition of the caller's, as SQL without parameters
LEASE = """
UPDATE {table} SET {due} = :until
 WHERE id IN (SELECT id FROM {table} WHERE {due} <= :now{also}
               ORDER BY {due} LIMIT :limit{lock})
RETURNING id
"""


@dataclass(frozen=True)
class Lease:
    """A lease about to be taken: the rows of `table` whose `due` column is set to `until`.
    Only its taker sets that exact value, so it names the taker's rows while they hold it."""

    table: str
    due: str
    until: datetime

    def as_json(self) -> dict[str, str]:
        return {"table": self.table, "due": self.due, "until": self.until.isoformat()}

    @classmethod
    def from_json(cls, data: Any) -> Lease:
        """Raises ValueError (or KeyError, TypeError) for anything but `as_json`'s shape."""
        until = datetime.fromisoformat(data["until"])
        if until.tzinfo is None:
            raise ValueError("a lease's until must be an aware time")
        return cls(str(data["table"]), str(data["due"]), until)


# who is told of each lease this process takes, before it is taken (bot/app/worker_main.py)
_ANNOUNCERS: list[Callable[[Lease], None]] = []


def announce_leases(announce: Callable[[Lease], None]) -> Callable[[], None]:
    """Call `announce` with each lease this process is about to take; returns the undo."""
    _ANNOUNCERS.append(announce)
    return lambda: _ANNOUNCERS.remove(announce)


def lease_until(now: datetime, lease_s: float) -> datetime:
    return now + timedelta(seconds=lease_s)


def lease_intent(
    table: str, due: str, *, limit: int, lease_s: float, now: datetime, sqlite: bool, also: str = ""
) -> Intent:
    """Rows: `[{'id': ...}]`, one per row leased (in no particular order)."""
    sql = LEASE.format(
        table=table,
        due=due,
        also=f" AND {also}" if also else "",
        lock="" if sqlite else " FOR UPDATE SKIP LOCKED",
    )
    until = lease_until(now, lease_s)
    params = {
        "now": bound_time(now, sqlite),
        "until": bound_time(until, sqlite),
        "limit": limit,
    }
    return Intent((Statement(sql, params),))


async def lease_rows(
    store: Store, table: Any, due: Any, limit: int, lease_s: float, also: str = ""
) -> list[Any]:
    """Rows of `table` (a mapped class with an `id`) whose `due` column (one of its
    attributes) has passed, leased: the oldest due first, at most `limit`, their `due`
    moved `lease_s` seconds ahead. The lease is one write (on SQLite an intent of the group
    commit); the rows are read after it committed (fresh, and typed by SQLAlchemy)."""
    if limit <= 0:
        return []
    now = store.clock()
    intent = lease_intent(
        table.__tablename__,
        due.key,
        limit=limit,
        lease_s=lease_s,
        now=now,
        sqlite=store.sqlite,
        also=also,
    )
    for announce in _ANNOUNCERS:  # before the lease: a death right after it is covered too
        announce(Lease(table.__tablename__, due.key, lease_until(now, lease_s)))
    if store.sqlite:
        (leased,) = await store.commit_intent(intent)
    else:
        # its own short transaction: in a group-commit batch its row locks would be held
        # until the batch commits, and a click's claim on a leased row would wait for that
        leased = await store.transact(lambda conn: run_on_connection(conn, intent)[0])
    if not leased:
        return []
    ids = [row["id"] for row in leased]
    read = select(table.__table__).where(table.id.in_(ids)).order_by(table.id)
    return await store.fetch(lambda conn: list(conn.execute(read).all()))


async def lease_due(
    store: Store, due: Any, limit: int, lease_s: float, also: str = ""
) -> list[Operation]:
    """Operations whose `due` column (an OperationRow datetime) has passed, leased to us."""
    rows = await lease_rows(store, OperationRow, due, limit, lease_s, also)
    return [Operation.from_row(row) for row in rows]


async def next_due(
    store: Store, due: Any, where: Sequence[Any] = (), *, passed_over: bool = False
) -> datetime | None:
    """When the earliest row not yet due falls due (None: nothing is scheduled): how long an
    idle worker may sleep before looking again. `passed_over`: rows already due count too (a
    time not after now): on PostgreSQL a lease passes over a row another transaction is
    writing (SKIP LOCKED), and nothing else would wake its worker before the poll."""
    scheduled = due.is_not(None) if passed_over else due > store.clock()
    async with store.read() as conn:
        found: datetime | None = (
            await conn.execute(select(func.min(due)).where(scheduled, *where))
        ).scalar_one()
    return found


def _release_statements(leases: Iterable[Lease], now: datetime) -> list[Update]:
    """Per leased column: its rows still under one of `leases` become due `now`. A lease
    that ran out is due already; a row whose due moved since (its pass ended, or another
    worker leased it after the lease ran out) matches none."""
    untils: dict[tuple[str, str], list[datetime]] = {}
    for lease in leases:
        if lease.until > now:
            untils.setdefault((lease.table, lease.due), []).append(lease.until)
    statements = []
    for (table_name, due_name), held in sorted(untils.items()):
        table = Base.metadata.tables.get(table_name)
        due = None if table is None else table.c.get(due_name)
        # a lease moves a due time: any other column is not one (the name crossed a socket)
        if table is None or due is None or not isinstance(due.type, UTCDateTime):
            raise ValueError(f"{table_name}.{due_name} is no leased column")
        held = sorted(held)
        for start in range(0, len(held), RELEASE_CHUNK):
            chunk = held[start : start + RELEASE_CHUNK]
            statements.append(update(table).where(due.in_(chunk), due > now).values({due: now}))
    return statements


async def release(store: Store, leases: Iterable[Lease]) -> int:
    """Rows still held under `leases` (their taker is dead) made due now, in one write;
    how many."""
    statements = _release_statements(leases, store.clock())
    if not statements:
        return 0

    def write(conn: Connection) -> int:
        return sum(int(conn.execute(statement).rowcount) for statement in statements)

    return await store.transact(write)
