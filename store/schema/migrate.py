"""Alembic migrations, run programmatically on the store's own engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from store.backend.engine import SQLITE_IMMEDIATE

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def current_revision(engine: AsyncEngine) -> str | None:
    def _read(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with engine.connect() as connection:
        return await connection.run_sync(_read)


async def upgrade(
    engine: AsyncEngine, revision: str = "head", *, schema: str | None = None
) -> None:
    """Upgrade to `revision`; on PostgreSQL, create `schema` first if one is configured."""
    await _migrate(engine, command.upgrade, revision, schema)


async def downgrade(engine: AsyncEngine, revision: str, *, schema: str | None = None) -> None:
    """Downgrade to `revision` (an operator going back to an older release)."""
    await _migrate(engine, command.downgrade, revision, schema)


async def _migrate(
    engine: AsyncEngine,
    step: Callable[[Config, str], None],
    revision: str,
    schema: str | None,
) -> None:
    def _run(connection: Connection) -> bool:
        """Whether a migration ran (the revision moved)."""
        config = alembic_config()
        config.attributes["connection"] = connection
        before = MigrationContext.configure(connection).get_current_revision()
        step(config, revision)
        return MigrationContext.configure(connection).get_current_revision() != before

    async with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        connection = await connection.execution_options(**{SQLITE_IMMEDIATE: True})
        if sqlite:
            # SQLite changes a table's constraints by rebuilding it (copy, drop, rename); with
            # foreign keys on, dropping a referenced table fails. SQLite's own procedure: keys
            # off outside the transaction, `foreign_key_check` before the commit, keys on.
            await connection.run_sync(_foreign_keys, False)
        try:
            async with connection.begin():
                if schema and not sqlite:
                    await connection.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                moved = await connection.run_sync(_run)
                # only what a migration rebuilt can break a key; at head it would check every
                # row of every table, seconds a million operations in, holding the write lock
                if sqlite and moved:
                    await connection.run_sync(_check_foreign_keys)
        finally:
            if sqlite:
                await connection.run_sync(_foreign_keys, True)


def _foreign_keys(connection: Connection, on: bool) -> None:
    """PRAGMA foreign_keys on the DBAPI connection: a no-op inside a transaction, so it is
    issued before `begin` and after the commit."""
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")
    finally:
        cursor.close()


def _check_foreign_keys(connection: Connection) -> None:
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
    if broken:
        raise RuntimeError(
            f"migration left {len(broken)} row(s) with a dangling foreign key "
            f"(first: {tuple(broken[0])}); nothing was committed"
        )
