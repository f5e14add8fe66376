"""Group commit: one writer per process that commits many small write intents in one transaction.

What the writer guarantees
--------------------------
* An *intent* is one conditional SQL statement (hand-written, `:name` parameters, usually
  `RETURNING` what its caller needs), or a short ordered list of them that succeed or fail
  together. Its result is the rows of each statement as plain dicts.
* The writer takes every waiting intent (up to `batch_limit`), opens ONE transaction
  (`BEGIN IMMEDIATE` on SQLite), runs the intents and commits once. A failing intent (a
  constraint, a `require_row` statement that matched nothing, any database error) is rolled
  back alone and its exception goes to its own caller only; the rest of the batch goes on
  and commits. How: an intent that can stop after writing (a `require_row` past its first
  statement) and every `Work` run in a SAVEPOINT of their own; the others run without one
  (two statements fewer each), and if one of them fails the batch is rolled back (to a
  savepoint of the whole batch on SQLite) and run again with a SAVEPOINT per intent.
* On PostgreSQL batches commit on several connections at once, each batch's intents in
  operation order (`lock_order`): two batches writing the same rows lock them in one order.
* Every waiter, successful or failed, is resolved only AFTER the batch's COMMIT returned. So
  an acknowledged intent is durable (SQLite WAL with synchronous=FULL; PostgreSQL's own
  commit), and no caller ever acts on a row that could still vanish. If BEGIN or COMMIT
  fails, every intent of the batch fails with `BatchNotCommitted`.
* Lanes: `Lane.PEOPLE` (answering a click or a text) goes first; `Lane.BACKGROUND` (executor
  steps, card marks, deliveries, leases) after, but never starves: whenever a background
  intent waits, each batch reserves one of its slots for the oldest one (see `take_batch`).
  On SQLite people's intents run first within a batch, so where they touch the same row,
  theirs win; on PostgreSQL a batch runs in operation order (above) and the conditional SQL
  decides any race the same way.
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
* PostgreSQL (`PgGroupWriter`): the same contract on `DEFAULT_CONNECTIONS` (4) dedicated
  asyncpg connections, each driven by a writer task that takes the next batch; `:name`
  parameters are rewritten to `$n` once per SQL text.

Turns and withdrawal
--------------------
* `turn()`: the database to oneself for one transaction written with SQLAlchemy (the rare
  paths). The writer commits what it holds, lends the database and waits until it is given
  back, so SQLite keeps one writer at a time without its busy handler's back-off. Writing
  through the writer while holding its turn raises `NestedTurn` (it would wait for itself).
* `enqueue()` + `withdraw()`: an intent can be taken back until a batch takes it. The SQLite
  writer takes a batch only once it holds the write lock (`BEGIN IMMEDIATE` first), so an
  intent waiting behind another writer is still withdrawable; a click answered "busy" uses
  this so that "busy" never comes with an effect.

How the store uses it
---------------------
`open_store` starts one writer beside the SQLAlchemy engine (`Store.writer`). A click's
first write (inbox entry + claim or reject, `store.claims.click_writes`), its second (answer + card
shown, `store.claims.click_sql`), the claim and the reject (`store.claims.claim_sql`, `store.claims.reject_sql`)
are intents. Every other write is `Store.transact(fn)`, a plain function of a sync
SQLAlchemy `Connection`: on SQLite a `Work` item (`GroupWriter.run`) that the writer runs
on its thread inside its next batch, in its own savepoint, so background writes (executor
steps, card marks, deliveries, leases, proposals) share fsyncs instead of queueing for
turns; on PostgreSQL a transaction of its own on the engine's pool. `Store.write()` (a
turn on SQLite) remains for tests and any write that must await between statements.
"""

from __future__ import annotations

from store.backend.engine import is_sqlite
from store.groupcommit.contract import (
    BatchNotCommitted,
    GroupWriter,
    NestedTurn,
    Turn,
    Withdrawn,
    WriterClosed,
    WriterStats,
    take_batch,
)
from store.groupcommit.intents import (
    ConditionNotMet,
    Intent,
    Lane,
    Results,
    Row,
    Statement,
    answering_a_person,
    current_lane,
    run_on_connection,
)
from store.groupcommit.pg_writer import PgGroupWriter
from store.groupcommit.sqlite_writer import SqliteGroupWriter

__all__ = [
    "BatchNotCommitted",
    "ConditionNotMet",
    "GroupWriter",
    "Intent",
    "Lane",
    "NestedTurn",
    "PgGroupWriter",
    "Results",
    "Row",
    "SqliteGroupWriter",
    "Statement",
    "Turn",
    "Withdrawn",
    "WriterClosed",
    "WriterStats",
    "answering_a_person",
    "current_lane",
    "open_writer",
    "run_on_connection",
    "take_batch",
]


async def open_writer(url: str, *, schema: str | None = None) -> GroupWriter:
    """The process's writer for the store at `url` (a SQLAlchemy URL, as `open_store` takes)."""
    writer: GroupWriter = (
        SqliteGroupWriter.for_url(url) if is_sqlite(url) else PgGroupWriter.for_url(url, schema)
    )
    await writer.start()
    return writer
