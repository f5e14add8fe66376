"""The migrations and the models describe the same schema, on both backends."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from store.authority import Claimed, Click, Store
from store.cards import CardLedger
from store.engine import create_engine
from store.envelope import Conversation, Source
from store.execution import ExecutionLedger
from store.groupcommit import open_writer
from store.inbox import Inbox
from store.migrate import current_revision, head_revision, upgrade
from store.models import Base
from store.timeutil import utc_now
from store.vocabulary import CHECKED, AttemptState, Execution, Stage
from tests.conftest import Backend
from tests.factories import offered

CHECKED_TABLES = {table for table, _ in CHECKED}


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


async def every_row(engine: AsyncEngine) -> dict[str, list[Any]]:
    async with engine.connect() as conn:
        return {
            name: list((await conn.execute(select(table).order_by(*table.primary_key))).all())
            for name, table in Base.metadata.tables.items()
        }


@asynccontextmanager
async def store_on(engine: AsyncEngine) -> AsyncIterator[Store]:
    """A store over `engine` with its own group-commit writer (on the engine's database)."""
    schema = None
    if engine.dialect.name == "postgresql":
        async with engine.connect() as conn:
            schema = (await conn.exec_driver_sql("SELECT current_schema()")).scalar_one()
    writer = await open_writer(engine.url.render_as_string(hide_password=False), schema=schema)
    try:
        yield Store(engine, utc_now, writer)
    finally:
        await writer.close()


async def rows_of_every_kind(engine: AsyncEngine) -> None:
    async with store_on(engine) as store:
        await _rows_of_every_kind(store)


async def _rows_of_every_kind(store: Store) -> None:
    """Through the store: an operation claimed, attempted, reserved, concluded and shown;
    an inbox entry; another operation left awaiting."""
    await offered(store)
    request_id = "older-release"
    op = await offered(
        store,
        request_id=request_id,
        source=Source("dev-agent", request_id, conversation=Conversation("oc_ops", "om_1")),
    )
    claimed = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claimed, Claimed)
    ledger = ExecutionLedger(store)
    await ledger.step(op.id, Execution.PREFLIGHT)
    await ledger.reserve(op.id, "sim-main", Decimal(1), budget=Decimal(10), observed=Decimal(0))
    await ledger.step(op.id, Execution.RESERVED)
    await ledger.record_attempt(op.id, f"cs-{op.id}")
    await ledger.step(op.id, Execution.DISPATCHING)
    await ledger.mark_attempt(op.id, AttemptState.DISPATCHED)
    await ledger.record_outcome(
        op.id,
        stage=Stage.INITIAL,
        status="done",
        concludes=True,
        detail={},
        execution=Execution.COMPLETED,
    )
    await ledger.settle(op.id, converted=True)
    await CardLedger(store).shown(op.id, 3, "patch")
    await Inbox(store).receive("callback", "ev-1", {"event": {}})


async def test_upgrading_from_0005_keeps_every_row_and_then_checks_the_vocabulary(
    backend: Backend, tmp_path: Path
) -> None:
    async with fresh_database(backend, tmp_path) as engine:
        await upgrade(engine, "0005")
        await rows_of_every_kind(engine)
        before = await every_row(engine)
        assert all(before[name] for name in CHECKED_TABLES), "a row in every checked table"

        await upgrade(engine)

        assert await current_revision(engine) == head_revision()
        assert await every_row(engine) == before
        async with engine.begin() as conn:
            with pytest.raises(IntegrityError, match="ck_operations_state"):
                await conn.exec_driver_sql("UPDATE operations SET state = 'not_a_state'")
        if backend.name == "sqlite":  # the rebuild turned them off for its transaction only
            async with engine.connect() as conn:
                keys = (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar_one()
            assert keys == 1


async def test_a_row_outside_the_vocabulary_stops_the_upgrade_and_changes_nothing(
    backend: Backend, tmp_path: Path
) -> None:
    async with fresh_database(backend, tmp_path) as engine:
        await upgrade(engine, "0005")
        await rows_of_every_kind(engine)
        async with engine.begin() as conn:
            await conn.exec_driver_sql("UPDATE attempts SET state = 'sent_by_hand'")
        before = await every_row(engine)

        with pytest.raises(IntegrityError, match="ck_attempts_state"):
            await upgrade(engine)

        assert await current_revision(engine) == "0005"
        assert await every_row(engine) == before
