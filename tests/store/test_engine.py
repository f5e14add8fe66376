"""The store's connection pool on PostgreSQL: last in first out, no ping per checkout, and still
no dead connection handed out after the server closed it.

SQLite has no server that could close a connection and keeps its pool as it was; there these
tests only check that the store answers.
"""

from __future__ import annotations

import asyncio

import asyncpg
from sqlalchemy import text

from store.authority.store import Store
from tests.support.backends import PG_URL
from tests.support.waiting import eventually

BURST = 5


async def backend_pid(store: Store) -> int:
    """The PostgreSQL session behind the connection the store's next read checks out."""
    async with store.read() as conn:
        pid: int = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
    return pid


async def open_burst(store: Store) -> set[int]:
    """Hold BURST connections at once, then give them all back: the pool now has BURST idle."""
    opened = asyncio.Event()
    release = asyncio.Event()
    pids: set[int] = set()

    async def hold() -> None:
        async with store.read() as conn:
            pids.add((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())
            if len(pids) == BURST:
                opened.set()
            await release.wait()

    holders = [asyncio.create_task(hold()) for _ in range(BURST)]
    await opened.wait()
    release.set()
    await asyncio.gather(*holders)
    return pids


async def test_a_steady_load_stays_on_the_last_used_connection(store: Store) -> None:
    if store.engine.dialect.name == "sqlite":
        assert await store.get("op-missing") is None
        return
    burst = await open_burst(store)
    used = [await backend_pid(store) for _ in range(3 * BURST)]
    # FIFO would walk round all five (each re-preparing its statements); LIFO keeps one hot
    assert len(burst) == BURST and len(set(used)) == 1 and used[0] in burst


async def test_a_connection_the_server_closed_is_replaced_before_use(store: Store) -> None:
    if store.engine.dialect.name == "sqlite":
        assert await store.get("op-missing") is None
        return
    async with store.read() as conn:  # last in, so the next checkout gets it
        pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        driver = (await conn.get_raw_connection()).driver_connection
    admin = await asyncpg.connect(PG_URL.replace("postgresql+asyncpg", "postgresql"))
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid) is True

        async def gone() -> bool:
            left = await admin.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid)
            return bool(left == 0)

        await eventually(gone)
        # The server's goodbye and its EOF reach asyncpg in separate loop turns; under load
        # the EOF can come after the server's backend is gone. The checkout hook acts on
        # what asyncpg has seen, so wait for that (the window before it is the next test's).
        await eventually(lambda: driver is not None and driver.is_closed())
    finally:
        await admin.close()
    # the very next store call works: the closed connection is swapped at checkout, no error
    assert await store.get("op-missing") is None
    assert await backend_pid(store) != pid
