"""Backend selection: every store-backed test runs on SQLite or PostgreSQL.

Pick with `--backend sqlite|postgresql` or COUNTERSIGN_TEST_BACKEND. On PostgreSQL
each test session migrates its own schema in database `test` and empties its
tables before each test; on SQLite each test's store is a copy of one migrated file.
With CI=true a skipped test fails the run, so a missing PostgreSQL can never pass
silently. `--store-tests-only` deselects the tests that never
touch the store backend (pure functions, the sandbox, transports, the dev profile's own
SQLite): CI runs them once, in the SQLite pass, and the PostgreSQL pass runs the rest.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from store import Store, create_engine, open_store, upgrade
from tests.support.backends import PG_URL, TABLES, Backend

SQLITE_URL_PREFIX = "sqlite+aiosqlite:///"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=("sqlite", "postgresql"),
        default=os.environ.get("COUNTERSIGN_TEST_BACKEND", "sqlite"),
        help="store backend for the suite (env COUNTERSIGN_TEST_BACKEND)",
    )
    parser.addoption(
        "--store-tests-only",
        action="store_true",
        help="run only the tests that use the store backend (CI's PostgreSQL pass)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--store-tests-only"):
        return
    # a test uses the backend exactly when `backend_name` is in its fixture closure
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        uses_backend = "backend_name" in getattr(item, "fixturenames", ())
        (keep if uses_backend else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_report_header(config: pytest.Config) -> str:
    return f"countersign store backend: {config.getoption('--backend')}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # Printed even under -q, so CI can prove which backend actually ran.
    backend = terminalreporter.config.getoption("--backend")
    terminalreporter.write_line(f"countersign store backend: {backend}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("CI") != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped:
        print(f"\nCI=true: {skipped} test(s) were skipped; skips are failures in CI")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.config.getoption("--backend"))


@pytest.fixture(scope="session")
def pg_schema(backend_name: str) -> Iterator[str | None]:
    if backend_name != "postgresql":
        yield None
        return
    schema = f"cs_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        engine = create_engine(PG_URL, schema=schema)
        try:
            await upgrade(engine, schema=schema)
        finally:
            await engine.dispose()

    async def drop() -> None:
        engine = create_engine(PG_URL)
        try:
            async with engine.begin() as conn:
                await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        finally:
            await engine.dispose()

    try:
        asyncio.run(create())
    except OSError as error:
        pytest.fail(f"PostgreSQL at {PG_URL} is not reachable: {error}")
    yield schema
    asyncio.run(drop())


@pytest.fixture(scope="session")
def sqlite_template(backend_name: str, tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A SQLite store migrated once a session: each test's store starts as a copy of it
    (migrating a new file costs most of a second of CPU, a copy a millisecond)."""
    if backend_name != "sqlite":
        return None
    path = tmp_path_factory.mktemp("sqlite-template") / "store.db"

    async def migrate() -> None:
        await (await open_store(f"{SQLITE_URL_PREFIX}{path}")).close()

    asyncio.run(migrate())
    return path


@pytest.fixture
def backend(backend_name: str, pg_schema: str | None, tmp_path: Path) -> Backend:
    if backend_name == "postgresql":
        return Backend("postgresql", PG_URL, pg_schema)
    return Backend("sqlite", f"{SQLITE_URL_PREFIX}{tmp_path / 'store.db'}", None)


async def _empty_tables(backend: Backend) -> None:
    engine = create_engine(backend.url, schema=backend.schema)
    try:
        async with engine.begin() as conn:
            # DELETE, not TRUNCATE: a test leaves a few rows, and TRUNCATE's new files cost
            # about half a second a test; the sequences start again as TRUNCATE's RESTART would
            for table in TABLES:  # children before their parents
                await conn.execute(text(f"DELETE FROM {table}"))
            await conn.execute(
                text(
                    "SELECT setval(oid, 1, false) FROM pg_class"
                    " WHERE relkind = 'S' AND relnamespace = CAST(:schema AS regnamespace)"
                ),
                {"schema": backend.schema},
            )
            # the audit chain's head starts again with its (emptied) log, as in a new store
            await conn.execute(text(f"UPDATE audit_chain SET seq = 0, head_hash = '{'0' * 64}'"))
    finally:
        await engine.dispose()


@pytest.fixture
async def store(backend: Backend, sqlite_template: Path | None) -> AsyncIterator[Store]:
    if backend.name == "postgresql":
        await _empty_tables(backend)
    elif sqlite_template is not None:
        path = Path(backend.url.removeprefix(SQLITE_URL_PREFIX))
        if not path.exists():  # noqa: ASYNC240  (a stat before the test begins)
            shutil.copyfile(sqlite_template, path)
    opened = await open_store(backend.url, schema=backend.schema, pool_size=60)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def replica(backend: Backend, store: Store) -> AsyncIterator[Store]:
    """A second store on the same database, as another bot process would open it (its own
    writers, pool and chainer)."""
    other = await open_store(backend.url, schema=backend.schema, pool_size=10)
    try:
        yield other
    finally:
        await other.close()


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """caplog at INFO, where refusals are logged."""
    caplog.set_level(logging.INFO)
    return caplog
