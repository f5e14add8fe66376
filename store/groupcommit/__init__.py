"""Group commit: one writer per process that commits many small write intents in one transaction.

What the writer guarantees
--------------------------
* An *intent* is one conditional SQL statement (hand-written, `:name` parameters, usually
  `RETURNING` what its caller needs), or a short ordered list of them that succeed or fail
  together. Its result is the rows of each statement as plain dicts.
* The writer takes every waiting intent (up to `batch_limit`), opens ONE transaction
  (`BEGIN IMMEDIATE` on SQLite), runs each intent inside its own SAVEPOINT and commits once.
  A failing intent (a constraint, a `require_row` statement that matched nothing, any
  database error) is rolled back to its savepoint and its exception goes to its own caller
  only; the rest of the batch goes on and commits.
* Every waiter, successful or failed, is resolved only AFTER the batch's COMMIT returned. So
  an acknowledged intent is durable (SQLite WAL with synchronous=FULL; PostgreSQL's own
  commit), and no caller ever acts on a row that could still vanish. If BEGIN or COMMIT
  fails, every intent of the batch fails with `BatchNotCommitted`.
* Lanes: `Lane.PEOPLE` (answering a click or a text) goes first; `Lane.BACKGROUND` (executor
  steps, card marks, deliveries, leases) after, but never starves: whenever a background
  intent waits, each batch reserves one of its slots for the oldest one (see `take_batch`).
  Within a batch people's intents run first, so where they touch the same row, theirs win.
* Cancelling an awaiting caller does not withdraw its intent: once submitted it runs (the
  conditional SQL decides every race, as everywhere in the store).
* `close()`: stop accepting (`WriterClosed`), drain and commit what is queued, close the
  connection.

Backends
--------
* SQLite (`SqliteGroupWriter`): one writer THREAD with its own stdlib `sqlite3` connection to
  the store's file (WAL, synchronous=FULL, foreign_keys=ON, busy_timeout), fed through a
  lock-guarded queue; waiters are resolved with `loop.call_soon_threadsafe`. The event loop
  never blocks on SQLite and a batch costs one fsync however many intents it carries.
* PostgreSQL (`PgGroupWriter`): the same contract on one dedicated asyncpg connection driven
  by a writer task; `:name` parameters are rewritten to `$n` once per SQL text.

How the store will use it (next increment, issue 11 items 1-2)
--------------------------------------------------------------
`open_store` starts one writer beside the SQLAlchemy engine (`open_writer(url, schema)`);
the hot paths (claim or refusal with the inbox entry, answer + card shown, executor steps,
leases) become intents built by small pure functions (like `store.claim_sql.claim_intent`)
and submitted with their lane; SQLAlchemy keeps the schema, migrations, reads and rare
paths. The two-lane `store.writelane.WriterQueue` then goes.
"""

from __future__ import annotations

from store.engine import is_sqlite
from store.groupcommit.contract import (
    BatchNotCommitted,
    ConditionNotMet,
    GroupWriter,
    Intent,
    Lane,
    Row,
    Statement,
    WriterClosed,
    WriterStats,
    take_batch,
)
from store.groupcommit.pg_writer import PgGroupWriter
from store.groupcommit.sqlite_writer import SqliteGroupWriter

__all__ = [
    "BatchNotCommitted",
    "ConditionNotMet",
    "GroupWriter",
    "Intent",
    "Lane",
    "PgGroupWriter",
    "Row",
    "SqliteGroupWriter",
    "Statement",
    "WriterClosed",
    "WriterStats",
    "open_writer",
    "take_batch",
]


async def open_writer(url: str, *, schema: str | None = None) -> GroupWriter:
    """The process's writer for the store at `url` (a SQLAlchemy URL, as `open_store` takes)."""
    writer: GroupWriter = (
        SqliteGroupWriter.for_url(url) if is_sqlite(url) else PgGroupWriter.for_url(url, schema)
    )
    await writer.start()
    return writer
