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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url
from ulid import ULID

from store.authority import DECISION_CARD_GRACE_S
from store.lifecycle import Event, State, next_state

FROM_STATE = State.AWAITING_CONFIRMATION.value
TO_STATE = next_state(State.AWAITING_CONFIRMATION, Event.CONFIRMED).value
CONFIRMED = Event.CONFIRMED.value
GRACE = timedelta(seconds=DECISION_CARD_GRACE_S)


@dataclass(frozen=True)
class Target:
    """What one claim needs to know about its operation (from the prepared Operation)."""

    operation_id: str
    digest: str
    operator: str


@dataclass(frozen=True)
class FloorRun:
    wall_s: float
    latencies_ms: list[float]


# -- raw sqlite3 -------------------------------------------------------------------------------

SQLITE_UPDATE = """
UPDATE operations
   SET state = :to_state, version = version + 1, updated_at = :at, execution_state = 'queued',
       exec_due_at = :at, decided_by = :operator, decided_at = :at, card_due_at = :due
 WHERE id = :operation_id AND state = :from_state AND confirm_digest = :digest
   AND expires_at > :at
RETURNING version
"""
SQLITE_CONFIRMATION = """
INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, accepted)
VALUES (:operation_id, :at, 'confirm', :operator, :digest, 1)
"""
SQLITE_CLAIM = """
INSERT INTO claims (id, operation_id, confirmation_id, operator_open_id, claimed_at)
VALUES (:claim_id, :operation_id, :confirmation_id, :operator, :at)
"""
SQLITE_AUDIT = """
INSERT INTO audit (operation_id, at, actor, event, from_state, to_state)
VALUES (:operation_id, :at, 'operator:' || :operator, :event, :from_state, :to_state)
"""


def sqlite_time(moment: datetime) -> str:
    """The text SQLAlchemy stores for a naive UTC DateTime on SQLite (so `>` compares alike)."""
    return moment.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


def sqlite_connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=10, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def sqlite_claim(conn: sqlite3.Connection, target: Target) -> None:
    now = datetime.now(UTC)
    values: dict[str, object] = {
        "operation_id": target.operation_id,
        "digest": target.digest,
        "operator": target.operator,
        "at": sqlite_time(now),
        "due": sqlite_time(now + GRACE),
        "from_state": FROM_STATE,
        "to_state": TO_STATE,
        "event": CONFIRMED,
        "claim_id": str(ULID.from_datetime(now)),
    }
    conn.execute("BEGIN IMMEDIATE")
    try:
        # drained with fetchall, so the statement is done before COMMIT
        if not conn.execute(SQLITE_UPDATE, values).fetchall():
            raise AssertionError(f"{target.operation_id}: the floor's claim found nothing to claim")
        values["confirmation_id"] = conn.execute(SQLITE_CONFIRMATION, values).lastrowid
        conn.execute(SQLITE_CLAIM, values)
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

PG_CLAIM = """
WITH claimed AS (
    UPDATE operations
       SET state = $1::text, version = version + 1, updated_at = $2::timestamptz,
           execution_state = 'queued', exec_due_at = $2::timestamptz, decided_by = $3::text,
           decided_at = $2::timestamptz, card_due_at = $4::timestamptz
     WHERE id = $5::text AND state = $6::text AND confirm_digest = $7::text
       AND expires_at > $2::timestamptz
    RETURNING id, version
), confirmation AS (
    INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, accepted)
    SELECT id, $2::timestamptz, 'confirm', $3::text, $7::text, true FROM claimed
    RETURNING id, operation_id
), claim AS (
    INSERT INTO claims (id, operation_id, confirmation_id, operator_open_id, claimed_at)
    SELECT $8::text, operation_id, id, $3::text, $2::timestamptz FROM confirmation
    RETURNING operation_id
), audit_row AS (
    INSERT INTO audit (operation_id, at, actor, event, from_state, to_state)
    SELECT operation_id, $2::timestamptz, 'operator:' || $3::text, $9::text, $6::text, $1::text
      FROM claim
)
SELECT version FROM claimed
"""


def asyncpg_dsn(sqlalchemy_url: str) -> str:
    """postgresql+asyncpg://... -> the postgresql://... asyncpg takes."""
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(False)


async def asyncpg_floor(
    sqlalchemy_url: str, schema: str, targets: Sequence[Target], claimers: int
) -> FloorRun:
    """C connections claim the targets, one statement (one durable commit) each."""
    dsn = asyncpg_dsn(sqlalchemy_url)
    conns = [
        await asyncpg.connect(dsn, server_settings={"search_path": schema}) for _ in range(claimers)
    ]
    try:
        statements = [await conn.prepare(PG_CLAIM) for conn in conns]
        pending = collections.deque(targets)
        latencies: list[float] = []

        async def claimer(statement: asyncpg.PreparedStatement) -> None:
            while pending:
                target = pending.popleft()
                started = time.perf_counter()
                now = datetime.now(UTC)
                row = await statement.fetchrow(
                    TO_STATE,
                    now,
                    target.operator,
                    now + GRACE,
                    target.operation_id,
                    FROM_STATE,
                    target.digest,
                    str(ULID.from_datetime(now)),
                    CONFIRMED,
                )
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
