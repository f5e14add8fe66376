"""The migrations and the models describe the same schema, on both backends."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection

from store.authority import Store
from store.migrate import current_revision, head_revision
from store.models import Base


async def test_the_store_is_at_head_and_matches_the_models(store: Store) -> None:
    assert await current_revision(store.engine) == head_revision()

    def diff(connection: Connection) -> list[object]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))

    async with store.engine.connect() as connection:
        assert await connection.run_sync(diff) == []


async def test_sqlite_runs_in_wal_with_full_sync_and_foreign_keys(store: Store) -> None:
    if store.engine.dialect.name != "sqlite":
        async with store.engine.connect() as connection:
            level = (await connection.exec_driver_sql("SHOW transaction_isolation")).scalar_one()
        assert level == "read committed"
        return
    async with store.engine.connect() as connection:
        pragmas = {
            name: (await connection.exec_driver_sql(f"PRAGMA {name}")).scalar_one()
            for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
        }
    assert pragmas == {
        "journal_mode": "wal",
        "synchronous": 2,
        "foreign_keys": 1,
        "busy_timeout": 10000,
    }
