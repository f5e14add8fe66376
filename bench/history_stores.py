"""The stores bench/history.py grows and measures: a SQLite file, or a PostgreSQL database of
its own (a copy is `CREATE DATABASE ... TEMPLATE`, so every run starts from the same bytes)."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from store import create_engine, upgrade

PG_SERVER = os.environ.get("COUNTERSIGN_BENCH_PG", "postgresql+asyncpg://postgres@127.0.0.1:5432")
PG_ADMIN_DB = "test"  # where CREATE and DROP DATABASE are sent from
SQLITE_FILES = ("", "-wal", "-shm", "-turn")


@dataclass(frozen=True)
class StoreAt:
    name: str
    backend: str
    url: str
    path: str = ""  # SQLite: the file
    database: str = ""  # PostgreSQL: the database

    def settings(self) -> dict[str, Any]:
        """[store] of the bot's config."""
        return {"url": self.url, "pool_size": 20}

    def saved(self) -> dict[str, str]:
        return asdict(self)


def engine_of(store: StoreAt) -> AsyncEngine:
    return create_engine(store.url)


def _admin() -> AsyncEngine:
    return create_async_engine(f"{PG_SERVER}/{PG_ADMIN_DB}", isolation_level="AUTOCOMMIT")


async def _admin_sql(*statements: str) -> None:
    engine = _admin()
    try:
        async with engine.connect() as conn:
            for statement in statements:
                await conn.execute(text(statement))
    finally:
        await engine.dispose()


def _pg(name: str) -> StoreAt:
    database = f"cs_hist_{name}"
    return StoreAt(name, "postgresql", f"{PG_SERVER}/{database}", database=database)


def _sqlite(data: Path, name: str) -> StoreAt:
    path = data / f"{name}.db"
    return StoreAt(name, "sqlite", f"sqlite+aiosqlite:///{path}", path=str(path))


async def create(backend: str, data: Path, name: str) -> StoreAt:
    """An empty store at the schema's head (replacing one of the same name)."""
    store = _sqlite(data, name) if backend == "sqlite" else _pg(name)
    await drop(store)
    if backend == "postgresql":
        await _admin_sql(f'CREATE DATABASE "{store.database}"')
    engine = engine_of(store)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()
    return store


async def clone(source: StoreAt, data: Path, name: str) -> StoreAt:
    """A copy of `source` (nothing may be connected to it), on disk before it is measured:
    gigabytes of a fresh copy still being written back would slow whatever runs next."""
    if source.backend == "sqlite":
        store = _sqlite(data, name)
        await drop(store)
        _copy_files(source.path, store.path)
    else:
        store = _pg(name)
        await drop(store)
        await _admin_sql(f'CREATE DATABASE "{store.database}" TEMPLATE "{source.database}"')
        await _admin_sql("CHECKPOINT")
    await asyncio.to_thread(os.sync)
    return store


async def drop(store: StoreAt) -> None:
    if store.backend == "sqlite":
        _unlink_files(store.path)
        return
    await _admin_sql(f'DROP DATABASE IF EXISTS "{store.database}" WITH (FORCE)')


async def disk_mb(store: StoreAt) -> float:
    if store.backend == "sqlite":
        return _files_mb(store.path)
    engine = engine_of(store)
    try:
        async with engine.connect() as conn:
            size = await conn.execute(text("SELECT pg_database_size(current_database())"))
            return int(size.scalar() or 0) / 2**20
    finally:
        await engine.dispose()


# SQLite's files (the database, its WAL and shared memory), synchronously: a file copy is
# what the bench waits for anyway


def _copy_files(source: str, target: str) -> None:
    for suffix in SQLITE_FILES:
        if Path(source + suffix).exists():
            shutil.copyfile(source + suffix, target + suffix)


def _unlink_files(path: str) -> None:
    for suffix in SQLITE_FILES:
        Path(path + suffix).unlink(missing_ok=True)


def _files_mb(path: str) -> float:
    sizes = [Path(path + s).stat().st_size for s in SQLITE_FILES if Path(path + s).exists()]
    return sum(sizes) / 2**20
