"""Open the store: SQLite upgrades itself on start, PostgreSQL must be at head already."""

from __future__ import annotations

import logging

from kernel.timeutil import Clock, utc_now
from store.authority.store import Store
from store.backend.engine import create_engine, is_sqlite
from store.backend.reaching import reaching
from store.backend.sqlite_reader import SqliteReader
from store.groupcommit import SqliteGroupWriter, open_writer
from store.schema.migrate import current_revision, head_revision, upgrade

log = logging.getLogger("countersign.store")


class StoreNotMigrated(RuntimeError):
    pass


async def open_store(
    url: str,
    *,
    schema: str | None = None,
    pool_size: int = 10,
    clock: Clock = utc_now,
) -> Store:
    engine = create_engine(url, schema=schema, pool_size=pool_size)
    try:
        if is_sqlite(url):
            with reaching(url):
                before = await current_revision(engine)
            if before != head_revision():  # at head (every start but an upgrade's): no lock
                await upgrade(engine)
                # One line instead of alembic's one per step (quiet at INFO).
                log.info("store migrated from %s to %s", before or "nothing", head_revision())
        else:
            with reaching(url):
                current = await current_revision(engine)
            head = head_revision()
            if current != head:
                raise StoreNotMigrated(
                    f"store.url: database schema is at {current or 'nothing'}, this build needs "
                    f"{head}: run `countersign db upgrade`"
                )
        writer = await open_writer(url, schema=schema)
    except BaseException:
        await engine.dispose()
        raise
    reader = SqliteReader(writer.path) if isinstance(writer, SqliteGroupWriter) else None
    return Store(engine, clock, writer, reader)
