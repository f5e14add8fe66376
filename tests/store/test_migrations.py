"""The migrations and the models describe the same schema, on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, MetaData, inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from kernel.timeutil import utc_now
from store.authority.envelope import Conversation, Source
from store.authority.store import Store
from store.backend.engine import SQLITE_IMMEDIATE
from store.backend.opening import open_store
from store.cards.card_ledger import CardLedger
from store.claims.decisions import Claimed, Click
from store.claims.exposure import Exposure
from store.execution.execution_ledger import ExecutionLedger
from store.execution.records import Observation
from store.groupcommit import open_writer
from store.inbox.inbox import Inbox
from store.schema.migrate import current_revision, downgrade, head_revision, upgrade
from store.schema.tables import Base
from store.vocabulary import CHECKED, Execution, ReservationState, Stage
from tests.support.backends import Backend
from tests.support.factories import offered, refused_by_budget
from tests.support.migrations import columns_of, fresh_database

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


async def every_row(engine: AsyncEngine) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, as the database has them now (reflected: an older revision
    has other columns than the models)."""

    def read(sync: Connection) -> dict[str, list[dict[str, Any]]]:
        found = MetaData()
        # the model tables this revision has (a later one may add tables: web_sessions, ...)
        found.reflect(sync, only=lambda name, _meta: name in Base.metadata.tables)
        rows = {}
        for name, table in found.tables.items():
            picked = select(table).order_by(*table.primary_key)
            rows[name] = [dict(row) for row in sync.execute(picked).mappings()]
        return rows

    async with engine.connect() as conn:
        return await conn.run_sync(read)


def on_common_columns(
    before: dict[str, list[dict[str, Any]]], after: dict[str, list[dict[str, Any]]]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """Both sides cut to the columns both revisions have (one may add or drop some)."""
    cut: tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]] = ({}, {})
    for name in before:
        common = set(before[name][0] if before[name] else ()) & set(
            after[name][0] if after.get(name) else ()
        )
        for side, rows in zip(cut, (before[name], after.get(name, [])), strict=True):
            side[name] = [{k: v for k, v in row.items() if k in common} for row in rows]
    return cut


@asynccontextmanager
async def seeded_at(backend: Backend, tmp_path: Path, revision: str) -> AsyncIterator[AsyncEngine]:
    """A database with rows of every kind, written through today's store at head, then
    taken down to `revision` (the store only speaks the head schema; the downgrades keep
    the rows, rebuilding what older revisions kept, like attempts.state)."""
    async with fresh_database(backend, tmp_path) as engine:
        await upgrade(engine)
        async with store_on(engine) as store:
            await rows_of_every_kind(store)
        await downgrade(engine, revision)
        assert await current_revision(engine) == revision
        yield engine


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


async def claimed_with_routes(store: Store, request_id: str) -> str:
    op = await offered(
        store,
        request_id=request_id,
        source=Source("dev-agent", request_id, conversation=Conversation("oc_ops", "om_1")),
    )
    claimed = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claimed, Claimed)
    return op.id


async def dispatched(store: Store, request_id: str) -> str:
    """A claimed operation through the executor's first three writes, holding 1 on sim-main."""
    operation_id = await claimed_with_routes(store, request_id)
    ledger = ExecutionLedger(store)
    await ledger.begin_preflight(operation_id)
    exposure = Exposure("sim-main", Decimal(1), Decimal(10), Decimal(0))
    await ledger.reserve_and_mark(operation_id, exposure, refused=refused_by_budget)
    await ledger.begin_dispatch(operation_id, f"cs-{operation_id}")
    return operation_id


async def rows_of_every_kind(store: Store) -> str:
    """Through the store: an operation claimed, reserved, attempted, concluded and shown;
    an inbox entry; another operation left awaiting. Returns the concluded one's id."""
    await offered(store)
    operation_id = await dispatched(store, "older-release")
    await ExecutionLedger(store).record_observation(
        operation_id,
        Observation(
            Stage.INITIAL,
            "done",
            Execution.COMPLETED,
            settles=ReservationState.CONVERTED,
            answers_attempt=True,
        ),
    )
    await CardLedger(store).shown(operation_id, 3, "patch")
    await Inbox(store).receive("callback", "ev-1", {"event": {}})
    return operation_id


async def test_upgrading_from_0005_keeps_every_row_and_then_checks_the_vocabulary(
    backend: Backend, tmp_path: Path
) -> None:
    async with seeded_at(backend, tmp_path, "0005") as engine:
        before = await every_row(engine)
        assert all(before[name] for name in CHECKED_TABLES), "a row in every checked table"

        await upgrade(engine)

        assert await current_revision(engine) == head_revision()
        kept, now = on_common_columns(before, await every_row(engine))
        assert now == kept
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
    async with seeded_at(backend, tmp_path, "0005") as engine:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("UPDATE attempts SET state = 'sent_by_hand'")
        before = await every_row(engine)

        with pytest.raises(IntegrityError, match="ck_attempts_state"):
            await upgrade(engine)

        assert await current_revision(engine) == "0005"
        assert await every_row(engine) == before


async def attempts_after_0007(store: Store) -> tuple[str, str, str]:
    """Operations whose attempt is in flight, unknown, and unknown for good (unresolved)."""
    in_flight = await dispatched(store, "in-flight")
    unknown = await dispatched(store, "unknown")
    unresolved = await dispatched(store, "unresolved")
    ledger = ExecutionLedger(store)
    lost = Observation(
        Stage.INITIAL,
        "unknown",
        Execution.SUBMISSION_UNKNOWN,
        answers_attempt=True,
        attempt_error="response lost",
    )
    for operation_id in (unknown, unresolved):
        await ledger.record_observation(operation_id, lost)
    await ledger.record_observation(
        unresolved,
        Observation(
            Stage.RECONCILED,
            "unresolved",
            Execution.RECONCILED,
            answers_attempt=True,
            attempt_error="older than the dedupe window",
        ),
    )
    return in_flight, unknown, unresolved


async def test_0007_drops_the_attempt_state_and_a_downgrade_rebuilds_it(
    backend: Backend, tmp_path: Path
) -> None:
    async with fresh_database(backend, tmp_path) as engine:
        await upgrade(engine)
        async with store_on(engine) as store:
            done = await rows_of_every_kind(store)
            # one in flight, one unknown, one the venue cannot settle
            in_flight, unknown, unresolved = await attempts_after_0007(store)

        await downgrade(engine, "0006")

        assert await current_revision(engine) == "0006"
        async with engine.connect() as conn:
            states = dict(
                (await conn.exec_driver_sql("SELECT operation_id, state FROM attempts")).all()
            )
        assert states == {
            done: "resolved",
            in_flight: "dispatched",
            unknown: "unknown",
            unresolved: "unknown",
        }
        async with engine.begin() as conn:
            with pytest.raises(IntegrityError, match="ck_attempts_state"):
                await conn.exec_driver_sql("UPDATE attempts SET state = 'sent_by_hand'")
        async with engine.begin() as conn:
            with pytest.raises(IntegrityError):  # NOT NULL again
                await conn.exec_driver_sql("UPDATE attempts SET state = NULL")
        before = await every_row(engine)

        await upgrade(engine, "0007")

        assert "state" not in await columns_of(engine, "attempts")
        kept, now = on_common_columns(before, await every_row(engine))
        assert now == kept

        await upgrade(engine)  # and forward again, keeping every row
        assert "state" not in await columns_of(engine, "attempts")
        assert len((await every_row(engine))["attempts"]) == 4


BOUNDED_READ_INDEXES = {
    "operations": {
        "ix_operations_updated_at_id",
        "ix_operations_source_proposer_created_at_id",
        "ix_operations_card_refused",
        "ix_operations_card_waiting",
        "ix_operations_unknown_submissions",
        "ix_operations_working_orders",
    },
    "outcomes": {"ix_outcomes_unknown", "ix_outcomes_unresolved"},
    "reservations": {"ix_reservations_account_state_released_at"},
}


async def index_names(engine: AsyncEngine, table: str) -> set[str]:
    async with engine.connect() as conn:
        found = await conn.run_sync(lambda sync: inspect(sync).get_indexes(table))
    return {str(index["name"]) for index in found}


async def test_0023_indexes_a_store_with_rows_and_keeps_every_row(
    backend: Backend, tmp_path: Path
) -> None:
    async with seeded_at(backend, tmp_path, "0022") as engine:
        for table, names in BOUNDED_READ_INDEXES.items():
            assert not names & await index_names(engine, table)
        before = await every_row(engine)
        await upgrade(engine, "0023")
        assert await every_row(engine) == before
        for table, names in BOUNDED_READ_INDEXES.items():
            assert names <= await index_names(engine, table)
        assert "ix_reservations_account_state" not in await index_names(engine, "reservations")
        await downgrade(engine, "0022")
        assert "ix_reservations_account_state" in await index_names(engine, "reservations")


async def test_opening_a_store_at_head_writes_nothing(store: Store, backend: Backend) -> None:
    """At head, opening reads the revision and goes: no migration's write lock, and on
    SQLite no `foreign_key_check` over every row (seconds a year in, every start)."""
    async with store.engine.connect() as holder:
        # another process writing: SQLite's write lock, or PostgreSQL's on the revision
        holder = await holder.execution_options(**{SQLITE_IMMEDIATE: True})
        await holder.begin()
        if backend.name == "postgresql":
            await holder.exec_driver_sql("LOCK TABLE alembic_version IN EXCLUSIVE MODE")
        opened = await open_store(backend.url, schema=backend.schema)
        await opened.close()
        await holder.rollback()
