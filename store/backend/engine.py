"""Engines for the two backends, with the settings each needs to keep a claim durable."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from store.backend.reaching import reaching

SQLITE_BUSY_TIMEOUT_MS = 10_000
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

# Execution option that makes a SQLite transaction take the write lock at BEGIN.
# Deferred transactions that later write can fail with SQLITE_BUSY_SNAPSHOT instead of
# waiting; every write path in the store asks for IMMEDIATE.
SQLITE_IMMEDIATE = "countersign_sqlite_immediate"


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def create_engine(url: str, *, schema: str | None = None, pool_size: int = 10) -> AsyncEngine:
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url, pool_size)
    if backend == "postgresql":
        if parsed.get_driver_name() != "asyncpg":
            raise ValueError(
                "store.url: PostgreSQL needs the asyncpg driver: postgresql+asyncpg://"
            )
        connect_args: dict[str, Any] = {}
        if schema:
            if not _SCHEMA_NAME.match(schema):
                raise ValueError(f"store.schema: {schema!r} is not a plain lower-case identifier")
            connect_args["server_settings"] = {"search_path": schema}
        engine = create_async_engine(
            url,
            pool_size=pool_size,
            max_overflow=pool_size,
            # Last in, first out: the few connections a steady load needs stay hot, with their
            # prepared statements (asyncpg caches them per connection); the rest idle out.
            pool_use_lifo=True,
            connect_args=connect_args,
        )
        event.listen(engine.sync_engine, "checkout", _replace_if_closed)
        return engine
    raise ValueError(
        f"store.url: unsupported backend {backend!r}; use sqlite+aiosqlite or postgresql+asyncpg"
    )


def _replace_if_closed(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Hand out no connection the server has closed (a restart, `pg_terminate_backend`).

    Instead of a ping per checkout (a round trip each time): asyncpg has already seen the
    server's goodbye and EOF on its socket, and `DisconnectionError` makes the pool open a
    fresh connection in its place. A connection whose death asyncpg has not seen yet (the
    host vanished without closing) fails its first statement with a disconnect error;
    SQLAlchemy then invalidates the whole pool, so the next call reconnects.
    """
    if dbapi_connection.driver_connection.is_closed():
        raise DisconnectionError("the server closed this connection")


def _sqlite_engine(url: str, pool_size: int) -> AsyncEngine:
    parsed = make_url(url)
    if parsed.get_driver_name() != "aiosqlite":
        raise ValueError("store.url: SQLite needs the aiosqlite driver: sqlite+aiosqlite:///path")
    if parsed.database and parsed.database != ":memory:":
        with reaching(url):
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
    )

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let us emit BEGIN ourselves (pysqlite's implicit BEGIN cannot be IMMEDIATE).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get(SQLITE_IMMEDIATE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine
