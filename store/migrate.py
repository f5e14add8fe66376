"""Alembic migrations, run programmatically on the store's own engine."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from store.engine import SQLITE_IMMEDIATE

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

    def _upgrade(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, revision)

    async with engine.connect() as connection:
        connection = await connection.execution_options(**{SQLITE_IMMEDIATE: True})
        async with connection.begin():
            if schema and connection.dialect.name == "postgresql":
                await connection.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            await connection.run_sync(_upgrade)
