"""Databases for migration tests: an empty one of the test's backend, and its columns."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import AsyncEngine

from store import create_engine
from tests.support.backends import Backend


@asynccontextmanager
async def fresh_database(backend: Backend, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """An empty database of the test's backend (its own file, or its own schema)."""
    if backend.name == "sqlite":
        engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'older.db'}")
        try:
            yield engine
        finally:
            await engine.dispose()
        return
    schema = f"cs_mig_{uuid.uuid4().hex[:12]}"
    engine = create_engine(backend.url, schema=schema)
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        yield engine
    finally:
        async with engine.begin() as conn:
            await conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await engine.dispose()


async def columns_of(engine: AsyncEngine, table: str) -> list[str]:
    async with engine.connect() as conn:
        found = await conn.run_sync(lambda sync: inspect(sync).get_columns(table))
    return [column["name"] for column in found]
