"""Due work notifies across replicas (PostgreSQL LISTEN/NOTIFY): what the triggers announce
and when, and the listener that turns a notification into a worker's kick, reconnecting
when its connection is terminated. SQLite has no other process to wake: no trigger there."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy import text

from store.authority.envelope import CallbackRoute, Source
from store.authority.records import Operation
from store.authority.store import Store
from store.backend.due_listener import CHANNEL, DueListener, worker_of
from store.cards.card_ledger import CardLedger
from store.claims.decisions import Claimed, Click
from store.execution.execution_ledger import ExecutionLedger
from store.execution.records import Observation
from store.groupcommit.pg_writer import asyncpg_dsn
from store.lifecycle import Execution
from store.vocabulary import Stage
from tests.support.backends import Backend
from tests.support.factories import dispatching, offered
from tests.support.waiting import eventually

WAIT_S = 20.0
WORKERS = ("executor", "cards", "deliveries")


def test_a_notification_names_its_schema_and_worker() -> None:
    assert worker_of("cs_a.executor", "cs_a") == "executor"
    assert worker_of("cs_b.executor", "cs_a") is None  # another deployment in this database
    assert worker_of("executor", "cs_a") is None


async def claimed(store: Store, **overrides: object) -> Operation:
    op = await offered(store, **overrides)
    claim = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claim, Claimed)
    return claim.operation


@dataclass
class Heard:
    """A raw LISTEN session of the test's own: what the triggers announced, in order."""

    conn: asyncpg.Connection
    payloads: asyncio.Queue[str]
    schema: str
    marks: int = 0

    async def since_last(self) -> list[str]:
        """What was announced since the previous call: a marker notification sent now comes
        after everything committed before it, so reading up to it reads all of that."""
        self.marks += 1
        marker = f"mark-{self.marks}"
        await self.conn.execute("SELECT pg_notify($1, $2)", CHANNEL, marker)
        heard: list[str] = []
        while (payload := await asyncio.wait_for(self.payloads.get(), WAIT_S)) != marker:
            # the channel is the database's: another test session's schema announces there too
            if (worker := worker_of(payload, self.schema)) is not None:
                heard.append(worker)
        return heard


@pytest.fixture
async def heard(backend: Backend, store: Store) -> AsyncIterator[Heard | None]:
    if backend.name != "postgresql":
        yield None
        return
    settings = {"search_path": backend.schema} if backend.schema else None
    conn = await asyncpg.connect(asyncpg_dsn(backend.url), server_settings=settings)
    payloads: asyncio.Queue[str] = asyncio.Queue()
    await conn.add_listener(CHANNEL, lambda _c, _p, _ch, payload: payloads.put_nowait(payload))
    try:
        yield Heard(conn, payloads, await conn.fetchval("SELECT current_schema()"))
    finally:
        await conn.close()


async def test_due_work_is_announced_once_per_worker_at_commit_and_leases_are_not(
    store: Store, heard: Heard | None
) -> None:
    if heard is None:  # SQLite: no trigger, nothing to announce to
        async with store.read() as conn:
            triggers = (
                await conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'"))
            ).all()
        assert triggers == []
        return
    op = await offered(
        store,
        source=Source("dev-agent", "hooked", callback=CallbackRoute("https://a.example/h", "dev")),
    )
    assert await heard.since_last() == ["cards"]  # the new card was due; sent since
    claim = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claim, Claimed)
    assert await heard.since_last() == ["executor"]  # its card waits for the answer's grace
    cards, execution = CardLedger(store), ExecutionLedger(store)
    assert await cards.due_now(claim.operation)  # the answer said "processing"
    assert await heard.since_last() == ["cards"]
    [_card] = await cards.lease_due()
    [_leased] = await execution.lease_due(5)
    assert await heard.since_last() == []  # a lease moves due times ahead: nobody to wake

    async with store.write() as conn:
        await conn.execute(text("UPDATE operations SET exec_due_at = CURRENT_TIMESTAMP"))
        await conn.execute(text("UPDATE operations SET exec_due_at = CURRENT_TIMESTAMP"))
        await conn.rollback()
    assert await heard.since_last() == []  # nothing committed, nothing announced

    await dispatching(store, op.id)
    await execution.record_observation(
        op.id, Observation(Stage.INITIAL, "filled", Execution.COMPLETED)
    )
    # the outcome's card patch and its conclusion for the proposer, in one transaction
    assert sorted(await heard.since_last()) == ["cards", "deliveries"]

    others = [await claimed(store) for _ in range(3)]
    assert (await heard.since_last()).count("executor") == 3  # a claim, a transaction, each
    async with store.write() as conn:  # three operations due again in one transaction
        await conn.execute(
            text("UPDATE operations SET exec_due_at = CURRENT_TIMESTAMP WHERE id IN (:a, :b, :c)"),
            dict(zip("abc", (o.id for o in others), strict=True)),
        )
    assert await heard.since_last() == ["executor"]  # equal notifications: sent once


async def test_the_listener_kicks_the_worker_named_and_comes_back_after_termination(
    backend: Backend, store: Store
) -> None:
    if backend.name != "postgresql":  # one process per SQLite file: the workforce has none
        return
    kicks = {worker: asyncio.Event() for worker in WORKERS}
    listener = DueListener(
        backend.url,
        {worker: event.set for worker, event in kicks.items()},
        schema=backend.schema,
        first_retry_s=0.05,
        max_retry_s=0.5,
    )
    stop = asyncio.Event()
    running = asyncio.create_task(listener.run(stop))
    try:
        await asyncio.wait_for(listener.listening.wait(), WAIT_S)
        assert not any(event.is_set() for event in kicks.values())  # a first connect is quiet
        await claimed(store)
        await asyncio.wait_for(kicks["executor"].wait(), WAIT_S)
        first_pid = listener.backend_pid
        assert first_pid is not None and listener.heard["executor"] == 1

        async def reconnected() -> bool:
            return listener.connects == 2 and listener.listening.is_set()

        for event in kicks.values():
            event.clear()
        async with store.read() as conn:
            killed = await conn.execute(
                text("SELECT pg_terminate_backend(:pid)"), {"pid": first_pid}
            )
            assert killed.scalar_one() is True
        await eventually(reconnected, WAIT_S)
        assert listener.backend_pid not in (None, first_pid)
        # what fell due meanwhile was announced to nobody: every worker looks once
        for worker in WORKERS:
            await asyncio.wait_for(kicks[worker].wait(), WAIT_S)

        kicks["executor"].clear()
        await claimed(store)
        await asyncio.wait_for(kicks["executor"].wait(), WAIT_S)
        status = listener.status()
        assert (status["state"], status["connects"]) == ("listening", 2)
        assert status["heard"]["executor"] == 2
    finally:
        stop.set()
        await asyncio.wait_for(running, WAIT_S)
    assert listener.state == "closed" and not listener.listening.is_set()


async def test_a_listener_that_cannot_connect_keeps_trying_and_stops_when_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "countersign.events")
    nowhere = "postgresql+asyncpg://postgres@127.0.0.1:1/test"  # nothing listens on port 1
    listener = DueListener(nowhere, {}, first_retry_s=0.01, max_retry_s=0.05)
    stop = asyncio.Event()
    running = asyncio.create_task(listener.run(stop))

    async def tried_twice() -> bool:
        return sum("cannot connect" in r.getMessage() for r in caplog.records) >= 2

    try:
        await eventually(tried_twice, WAIT_S)
        assert listener.state == "starting" and listener.connects == 0
    finally:
        stop.set()
        await asyncio.wait_for(running, WAIT_S)
    assert listener.state == "closed"
