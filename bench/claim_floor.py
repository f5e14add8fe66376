"""The floor under a store claim: the same rows written by the bare drivers, no store around them.

A claim writes what `Store.confirm_and_claim` writes in its one transaction: the conditional
update of the operation (awaiting_confirmation -> claimed, same digest, not expired), its
confirmation row, its claim row and its audit row, on the store's own schema (the same
migrations, so the same indexes and constraints). Each claim is one durable commit.

* raw sqlite3 (stdlib): C threads, each with its own connection (WAL, synchronous=FULL,
  foreign_keys=ON, as the store opens them); `BEGIN IMMEDIATE`, four statements, `COMMIT`.
  SQLite admits one writer at a time, so a process-wide lock hands the write turn from
  thread to thread: without it the waiting writers sit in SQLite's busy handler, which
  sleeps in steps of up to 100 ms and would only lower the floor.
* raw asyncpg: C connections (one per claimer) in one event loop, the claim as ONE
  statement (a CTE: the conditional update, then the three inserts fed by its RETURNING),
  prepared once per connection before the clock starts, autocommit.

Both return the per-claim latencies (ms, queueing for the write turn included, as the store's
latencies include its queue) and the wall time of the timed phase.
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from ulid import ULID

from store import (
    PG_CLAIM,
    SQLITE_AUDIT,
    SQLITE_CLAIM,
    SQLITE_CONFIRMATION,
    SQLITE_UPDATE,
    Audience,
    Draft,
    Source,
    asyncpg_dsn,
    claim_params,
    positional,
)


@dataclass(frozen=True)
class Target:
    """What one claim needs to know about its operation (from the prepared Operation)."""

    operation_id: str
    digest: str
    operator: str

    def claim_values(self, *, sqlite: bool, **click: Any) -> dict[str, Any]:
        """The claim's parameters, timed now, with a fresh claim id; `click`: where a card's
        click came from (`claim_params`' chat_id, message_id, event_id)."""
        now = datetime.now(UTC)
        return claim_params(
            operation_id=self.operation_id,
            digest=self.digest,
            operator=self.operator,
            claim_id=str(ULID.from_datetime(now)),
            now=now,
            sqlite=sqlite,
            **click,
        )


def finance_draft(
    request_id: str,
    payload: Mapping[str, Any],
    projection: Mapping[str, Any],
    *,
    expires_in_s: int,
    index: int,
) -> Draft:
    """A simulated finance order for the benches' stores to file: ops's operators may confirm
    it (ou_alice, ou_bob in oc_ops)."""
    return Draft(
        kind="finance.order",
        schema_version=1,
        executor_name="sim-venue",
        executor_revision="1",
        simulated=True,
        payload=payload,
        projection=projection,
        audience=Audience("ops", "oc_ops", ("ou_alice", "ou_bob")),
        target_ref="account:sim/sim-main",
        expires_in_s=expires_in_s,
        source=Source("bench", request_id),
        request_content={"i": index},
    )


@dataclass(frozen=True)
class FloorRun:
    wall_s: float
    latencies_ms: list[float]


# -- raw sqlite3 -------------------------------------------------------------------------------


def sqlite_connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=10, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def sqlite_claim(conn: sqlite3.Connection, target: Target) -> None:
    values = target.claim_values(sqlite=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        # drained with fetchall, so the statement is done before COMMIT
        if not conn.execute(SQLITE_UPDATE, values).fetchall():
            raise AssertionError(f"{target.operation_id}: the floor's claim found nothing to claim")
        conn.execute(SQLITE_CONFIRMATION, values)
        conn.execute(SQLITE_CLAIM, values)  # its confirmation id: last_insert_rowid()
        conn.execute(SQLITE_AUDIT, values)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def sqlite_floor(path: str, targets: Sequence[Target], claimers: int) -> FloorRun:
    """C threads claim the targets one durable commit each; blocking (call it in a thread)."""
    pending = collections.deque(targets)  # popleft is atomic: the threads' shared queue
    write_turn = threading.Lock()
    ready = threading.Barrier(claimers + 1)
    latencies: list[float] = []
    failures: list[BaseException] = []

    def claimer() -> None:
        conn = sqlite_connect(path)
        try:
            ready.wait()
            while True:
                try:
                    target = pending.popleft()
                except IndexError:
                    return
                started = time.perf_counter()
                with write_turn:
                    sqlite_claim(conn, target)
                latencies.append((time.perf_counter() - started) * 1000)
        except BaseException as error:
            failures.append(error)
        finally:
            conn.close()

    threads = [threading.Thread(target=claimer, name=f"floor-{i}") for i in range(claimers)]
    for thread in threads:
        thread.start()
    ready.wait()  # every connection is open before the clock starts
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    if failures:
        raise failures[0]
    return FloorRun(wall, latencies)


# -- raw asyncpg -------------------------------------------------------------------------------


async def asyncpg_floor(
    sqlalchemy_url: str, schema: str, targets: Sequence[Target], claimers: int
) -> FloorRun:
    """C connections claim the targets, one statement (one durable commit) each."""
    dsn = asyncpg_dsn(sqlalchemy_url)
    conns = [
        await asyncpg.connect(dsn, server_settings={"search_path": schema}) for _ in range(claimers)
    ]
    try:
        sql, names = positional(PG_CLAIM)  # the same text the group-commit writer sends
        statements = [await conn.prepare(sql) for conn in conns]
        pending = collections.deque(targets)
        latencies: list[float] = []

        async def claimer(statement: asyncpg.PreparedStatement) -> None:
            while pending:
                target = pending.popleft()
                started = time.perf_counter()
                values = target.claim_values(sqlite=False)
                row = await statement.fetchrow(*(values[name] for name in names))
                if row is None:
                    raise AssertionError(
                        f"{target.operation_id}: the floor's claim found nothing to claim"
                    )
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(claimer(statement) for statement in statements))
        return FloorRun(time.perf_counter() - started, latencies)
    finally:
        for conn in conns:
            await conn.close()
