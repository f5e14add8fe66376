"""A year of history from a few hundred real operations: K-1 copies of every row of every
table that grows, made by INSERT ... SELECT on either backend (bench/history.py grows the
real ones).

Each copy k (1..K-1) is the finished originals again, `k * step_s` seconds earlier:
* ULIDs (operations, claims, attempts, deliveries and every reference to them) get their
  time part shifted back by the same amount, so a row and its references move together and
  ids still sort with their times; integer ids become `id + k * stride`;
* unique keys (request ids, inbox keys, event and message ids, client ids, outcome
  digests, signal message ids) get the copy's number;
* every timestamp moves back `k * step_s`, so N operations spread over a year;
* due times (card, execution, reminder, auto-send, delivery) are NULL: nothing is due for
  any worker.

Operations still working (not in a final state, or due for a worker) are dropped from the
grown store first, with their rows, as the outside measurement did (growth.md "Method"):
what is measured is history, not live work. Copies are made `batch` at a time, one commit
each, through a small table of copy numbers: memory stays bounded and 1M fits in minutes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import Column, Table, text
from sqlalchemy.ext.asyncio import AsyncConnection

from store import OperationRow

YEAR_S = 365 * 86_400
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base 32, as ULIDs spell time
ROWS_PER_BATCH = 60_000
# Tables that do not grow with operations: one row per account, sign-in state that is
# pruned (growth.md §2), the chain's head, the policy's versions (one per config change) and
# delegations (one per absence, not per operation).
NOT_GROWN = frozenset(
    {
        "accounts",
        "web_sessions",
        "web_sign_ins",
        "audit_chain",
        "policy_versions",
        "policy_audiences",
        "delegations",
    }
)
FINAL_STATES = (
    "outcome_observed",
    "rejected",
    "cancelled",
    "expired",
    "superseded",
    "changes_requested",
)
# the operation each ULID-keyed reference points at: table -> {column: table it names}
ULID_TABLES = frozenset({"operations", "claims", "attempts", "deliveries"})
# where a due time means a worker will look at the row: NULL in every copy
DUE_COLUMNS = {
    "operations": ("card_due_at", "exec_due_at", "remind_at", "auto_send_at"),
    "deliveries": ("due_at",),
    # a copied audit entry is not linked yet: bench/history.py links the grown chain
    "audit": ("txid", "chain_seq", "prev_hash", "entry_hash"),
}
# unique (or looked-up) keys made unique per copy by a suffix
SUFFIXED = {
    "operations": {
        "source_request_id": "-h",
        "card_message_id": "_h",
        "escalation_message_id": "_h",
    },
    "confirmations": {"event_id": "-h", "message_id": "_h"},
    "inbox": {"key": "-h"},
    "signals": {"message_id": "_h"},
}
DIGESTS = {
    "outcomes": ("outcome_digest", "reconciles_digest"),
    "deliveries": ("outcome_digest", "reconciles_digest"),
}
# which rows of a table are the originals: a predicate over `t` (base operation ids in
# hist_base_ops, base inbox/signal rows snapshotted before the first copy)
BASE_ROWS = {
    "operations": "t.id IN (SELECT id FROM hist_base_ops)",
    "delivery_attempts": "t.delivery_id IN (SELECT id FROM hist_base_deliveries)",
    "inbox": "t.id IN (SELECT id FROM hist_base_inbox)",
    "signals": "t.message_id IN (SELECT message_id FROM hist_base_signals)",
}
# children before parents: the order rows are deleted in (and copied in reverse)
DELETE_ORDER = (
    "delivery_attempts",
    "deliveries",
    "reservations",
    "outcomes",
    "attempts",
    "card_deliveries",
    "claims",
    "audit",
    "confirmations",
    "operations",
)


@dataclass(frozen=True)
class Grown:
    base_operations: int
    dropped_working: int
    copies: int  # K: the originals count as the first
    step_s: int
    rows: dict[str, int]  # per grown table, after
    seconds: float


def grown_tables() -> list[Table]:
    """Every table of the schema that grows with operations, parents first."""
    tables = OperationRow.metadata.sorted_tables
    return [t for t in tables if t.name not in NOT_GROWN]


def _pos(sqlite: bool, char: str) -> str:
    # BIGINT: PostgreSQL multiplies two integers as a 32-bit integer
    return f"CAST({'instr' if sqlite else 'strpos'}('{ALPHABET}', {char}) AS BIGINT)"


def ulid_time_ms(sqlite: bool, column: str) -> str:
    """SQL: the millisecond time a ULID column spells in its first 10 characters."""
    terms = [
        f"({_pos(sqlite, f'substr({column}, {i + 1}, 1)')} - 1) * {32 ** (9 - i)}"
        for i in range(10)
    ]
    return "(" + " + ".join(terms) + ")"


def shifted_ulid(sqlite: bool, column: str) -> str:
    """SQL: the ULID in `t.column` with its time moved back by the copy's `c.shift_ms` (its
    time decoded once, into the staging table's `ms_<column>`)."""
    ms = f"(t.ms_{column} - c.shift_ms)"
    # PostgreSQL's substr takes an integer position, not the bigint the arithmetic gives
    kind = "INTEGER"
    chars = [
        f"substr('{ALPHABET}', CAST((({ms} / {32 ** (9 - i)}) % 32) + 1 AS {kind}), 1)"
        for i in range(10)
    ]
    return "(" + " || ".join(chars) + f" || substr(t.{column}, 11))"


def shifted_time(sqlite: bool, column: str) -> str:
    """SQL: a timestamp `c.shift_s` seconds earlier (SQLite keeps naive text with its fraction
    as SQLAlchemy wrote it; PostgreSQL's timestamptz takes an interval)."""
    if sqlite:
        return f"(datetime({column}, '-' || c.shift_s || ' seconds') || substr({column}, 20))"
    return f"({column} - c.shift_s * interval '1 second')"


def padded_copy(sqlite: bool) -> str:
    return "substr('00000000' || c.k, -8)" if sqlite else "lpad(CAST(c.k AS TEXT), 8, '0')"


def references(table: Table) -> dict[str, str]:
    """column -> the table it points at, for the keys that move with a copy."""
    found: dict[str, str] = {}
    for column in table.columns:
        for key in column.foreign_keys:
            found[column.name] = key.column.table.name
    if table.name in ("confirmations", "audit"):  # the click's claim: no FK, an operation id
        found["operation_id"] = "operations"
    return found


def column_sql(table: Table, column: Column[object], sqlite: bool, strides: dict[str, int]) -> str:
    name, ref = column.name, f"t.{column.name}"
    points_at = references(table).get(name)
    if name in DUE_COLUMNS.get(table.name, ()):
        return "NULL"
    if name in ulid_columns(table):
        return shifted_ulid(sqlite, name)
    if column.primary_key and table.name in strides:
        return f"{ref} + c.k * {strides[table.name]}"
    if points_at in strides:
        return f"{ref} + c.k * {strides[points_at]}"
    if table.name == "attempts" and name == "client_id":  # the prefix and the operation id
        return f"replace({ref}, t.operation_id, {shifted_ulid(sqlite, 'operation_id')})"
    if name in DIGESTS.get(table.name, ()):
        return f"(substr({ref}, 1, 56) || {padded_copy(sqlite)})"
    if suffix := SUFFIXED.get(table.name, {}).get(name):
        return f"({ref} || '{suffix}' || c.k)"
    if type(column.type).__name__ == "UTCDateTime":
        return shifted_time(sqlite, ref)
    return ref


def base_predicate(table: Table) -> str:
    if table.name in BASE_ROWS:
        return BASE_ROWS[table.name]
    return "t.operation_id IN (SELECT id FROM hist_base_ops)"


def ulid_columns(table: Table) -> list[str]:
    """Columns holding a ULID: the table's own id, or a reference to a ULID-keyed table."""
    pointing = references(table)
    return [
        c.name
        for c in table.columns
        if (c.primary_key and table.name in ULID_TABLES) or pointing.get(c.name) in ULID_TABLES
    ]


def staging_sql(table: Table, sqlite: bool) -> str:
    """The originals of `table`, set aside once: every batch copies from them, never from the
    growing table (that would read more each batch); each ULID's time decoded beside it."""
    times = "".join(f", {ulid_time_ms(sqlite, f't.{c}')} AS ms_{c}" for c in ulid_columns(table))
    return (
        f"CREATE TEMP TABLE hb_{table.name} AS SELECT t.*{times} FROM {table.name} t "
        f"WHERE {base_predicate(table)}"
    )


def copy_sql(table: Table, sqlite: bool, strides: dict[str, int]) -> str:
    names = [c.name for c in table.columns]
    values = [column_sql(table, c, sqlite, strides) for c in table.columns]
    return (
        f"INSERT INTO {table.name} ({', '.join(names)}) SELECT {', '.join(values)} "
        f"FROM hb_{table.name} t CROSS JOIN hist_copies c"
    )


def working_sql() -> str:
    """Operations still working: not final, due for a worker, or with a delivery to make."""
    finals = ", ".join(f"'{s}'" for s in FINAL_STATES)
    return (
        f"SELECT id FROM operations WHERE state NOT IN ({finals}) OR exec_due_at IS NOT NULL "
        "OR card_due_at IS NOT NULL OR remind_at IS NOT NULL OR auto_send_at IS NOT NULL "
        "OR id IN (SELECT operation_id FROM deliveries WHERE due_at IS NOT NULL)"
    )


async def scalar(conn: AsyncConnection, sql: str) -> int:
    return int((await conn.execute(text(sql))).scalar() or 0)


async def drop_working(conn: AsyncConnection) -> int:
    """Delete the operations still working and every row of theirs; how many."""
    ids = [row[0] for row in (await conn.execute(text(working_sql()))).all()]
    if not ids:
        return 0
    await conn.execute(text("CREATE TEMP TABLE hist_working (id VARCHAR(64) PRIMARY KEY)"))
    await conn.execute(text("INSERT INTO hist_working (id) VALUES (:id)"), [{"id": i} for i in ids])
    for name in DELETE_ORDER:
        if name == "delivery_attempts":
            where = (
                "delivery_id IN (SELECT id FROM deliveries WHERE operation_id IN "
                "(SELECT id FROM hist_working))"
            )
        elif name == "operations":
            where = "id IN (SELECT id FROM hist_working)"
        else:
            where = "operation_id IN (SELECT id FROM hist_working)"
        await conn.execute(text(f"DELETE FROM {name} WHERE {where}"))
    await conn.execute(text("DROP TABLE hist_working"))
    return len(ids)


def batches(copies: int, per_batch: int) -> Iterator[range]:
    for start in range(1, copies, per_batch):
        yield range(start, min(copies, start + per_batch))


async def multiply(
    conn: AsyncConnection, n: int, *, rows_per_batch: int = ROWS_PER_BATCH, log: bool = False
) -> Grown:
    """Grow the store `conn` is on to about `n` finished operations (at least the originals).
    `conn` is one connection outside a transaction: each batch commits on its own."""
    started = time.perf_counter()
    sqlite = conn.dialect.name == "sqlite"
    dropped = await drop_working(conn)
    await conn.commit()
    base = await scalar(conn, "SELECT count(*) FROM operations")
    if base == 0:
        raise RuntimeError("no finished operation to multiply")
    copies = max(1, -(-n // base))
    step_s = YEAR_S // copies
    tables = grown_tables()
    strides = {
        t.name: await scalar(conn, f"SELECT coalesce(max(id), 0) + 1 FROM {t.name}")
        for t in tables
        if t.name not in ULID_TABLES and "id" in t.columns and t.columns["id"].primary_key
    }
    await conn.execute(text("CREATE TEMP TABLE hist_base_ops AS SELECT id FROM operations"))
    await conn.execute(
        text(
            "CREATE TEMP TABLE hist_base_deliveries AS SELECT id FROM deliveries "
            "WHERE operation_id IN (SELECT id FROM hist_base_ops)"
        )
    )
    await conn.execute(text("CREATE TEMP TABLE hist_base_inbox AS SELECT id FROM inbox"))
    await conn.execute(
        text("CREATE TEMP TABLE hist_base_signals AS SELECT message_id FROM signals")
    )
    await conn.execute(
        text(
            "CREATE TEMP TABLE hist_copies (k BIGINT PRIMARY KEY, shift_s BIGINT, shift_ms BIGINT)"
        )
    )
    for table in tables:
        await conn.execute(text(staging_sql(table, sqlite)))
    base_rows = sum([await scalar(conn, f"SELECT count(*) FROM hb_{t.name}") for t in tables])
    per_batch = max(1, rows_per_batch // max(1, base_rows))
    statements = [copy_sql(t, sqlite, strides) for t in tables]
    await conn.commit()
    if not sqlite:  # no per-row FK triggers while copying: every reference is built above
        await conn.execute(text("SET session_replication_role = replica"))
    for ks in batches(copies, per_batch):
        await conn.execute(text("DELETE FROM hist_copies"))
        await conn.execute(
            text("INSERT INTO hist_copies (k, shift_s, shift_ms) VALUES (:k, :s, :ms)"),
            [{"k": k, "s": k * step_s, "ms": k * step_s * 1000} for k in ks],
        )
        for statement in statements:
            await conn.execute(text(statement))
        await conn.commit()
        if log:
            print(
                f"  copies {ks.stop}/{copies} ({time.perf_counter() - started:.0f} s)", flush=True
            )
    temporary = ["hist_copies", "hist_base_ops", "hist_base_deliveries", "hist_base_inbox"]
    for name in [*temporary, "hist_base_signals", *(f"hb_{t.name}" for t in tables)]:
        await conn.execute(text(f"DROP TABLE {name}"))
    if not sqlite:  # the sequences continue above the copies' ids
        await conn.execute(text("SET session_replication_role = DEFAULT"))
        for name in strides:
            await conn.execute(
                text(
                    f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                    f"(SELECT coalesce(max(id), 1) FROM {name}))"
                )
            )
    await conn.commit()
    rows = {t.name: await scalar(conn, f"SELECT count(*) FROM {t.name}") for t in tables}
    return Grown(base, dropped, copies, step_s, rows, time.perf_counter() - started)
