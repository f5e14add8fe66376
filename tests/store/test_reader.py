"""Hot reads (`Store.fetch`, `Store.get`): on SQLite on the reader's own threads, one snapshot
per read, fresh every time, never held up by a write in progress; on PostgreSQL on the pool."""

from __future__ import annotations

import asyncio

from sqlalchemy import Connection, select, update

from store.authority.store import Store
from store.schema.tables import OperationRow
from tests.support.backends import Backend
from tests.support.factories import offered

DEADLINE_S = 10.0  # a deadline for a read that must not wait, not a duration measured


async def test_each_read_sees_what_was_committed_before_it(backend: Backend, store: Store) -> None:
    assert (store.reader is not None) == (backend.name == "sqlite")
    op = await offered(store)
    for round_ in range(1, 4):  # the reader's connections persist: no snapshot may linger
        title = f"renamed {round_}"

        def rename(conn: Connection, title: str = title) -> None:
            conn.execute(
                update(OperationRow).where(OperationRow.id == op.id).values(source_proposer=title)
            )

        await store.transact(rename)
        seen = await store.get(op.id)
        assert seen is not None and seen.envelope.source.proposer == title


async def test_a_read_during_an_uncommitted_write_sees_the_last_commit(
    backend: Backend, store: Store
) -> None:
    op = await offered(store)
    async with store.write() as conn:
        await conn.execute(
            update(OperationRow)
            .where(OperationRow.id == op.id)
            .values(source_proposer="uncommitted")
        )
        # the write holds SQLite's write lock and its transaction is open: a read neither
        # waits for it nor sees it
        seen = await asyncio.wait_for(store.get(op.id), DEADLINE_S)
        assert seen is not None and seen.envelope.source.proposer == op.envelope.source.proposer

    def both(conn: Connection) -> tuple[str, int]:
        # two statements, one snapshot
        proposer = conn.execute(
            select(OperationRow.source_proposer).where(OperationRow.id == op.id)
        ).scalar_one()
        version = conn.execute(
            select(OperationRow.version).where(OperationRow.id == op.id)
        ).scalar_one()
        return proposer, version

    assert await store.fetch(both) == ("uncommitted", op.version)


async def test_many_reads_at_once_each_get_their_own_answer(store: Store) -> None:
    ops = [await offered(store) for _ in range(5)]
    seen = await asyncio.gather(*(store.get(op.id) for op in ops * 4))
    assert [s.id if s else None for s in seen] == [op.id for op in ops * 4]
    assert await store.get("no-such-operation") is None
