"""Group commit (issue 11 item 1): one writer, one transaction per batch, waiters after COMMIT.

Real SQLite and PostgreSQL, the store's own schema, a real subprocess killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy import Connection, text
from ulid import ULID

from kernel.timeutil import utc_now
from store.authority.records import Operation
from store.authority.store import Store
from store.claims.claim_sql import claim_intent
from store.groupcommit import (
    BatchNotCommitted,
    ConditionNotMet,
    GroupWriter,
    Intent,
    Lane,
    NestedTurn,
    PgGroupWriter,
    SqliteGroupWriter,
    Statement,
    WriterClosed,
    take_batch,
)
from store.groupcommit.contract import Pending
from tests.support.backends import Backend
from tests.support.factories import offered
from tests.support.processes import ROOT

WAIT_S = 30.0

# an audit row labelled by `actor`; its id shows the order intents ran in
AUDIT = Statement(
    "INSERT INTO audit (operation_id, at, actor, event) "
    "VALUES ('op-test', CURRENT_TIMESTAMP, :actor, 'test') RETURNING id, actor",
)
# a claim for an operation that does not exist: a foreign-key violation on both backends
ORPHAN_CLAIM = (
    "INSERT INTO claims (id, operation_id, confirmation_id, operator_open_id, claimed_at) "
    "VALUES ('orphan', 'no-such-operation', -1, 'ou_x', CURRENT_TIMESTAMP)"
)


async def offered_many(store: Store, count: int) -> list[Operation]:
    """`count` operations awaiting confirmation, a few at a time (PostgreSQL is shared)."""
    gate = asyncio.Semaphore(8)

    async def one() -> Operation:
        async with gate:
            return await offered(store)

    return list(await asyncio.gather(*(one() for _ in range(count))))


def audit(actor: str) -> Statement:
    return Statement(AUDIT.sql, {"actor": actor})


class CommitGate:
    """A before-commit hook that holds every batch until released, and counts batch sizes."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self._held = threading.Event()
        self._open = threading.Event()

    def hold(self, size: int) -> None:  # SQLite: runs on the writer thread
        self.sizes.append(size)
        self._held.set()
        if not self._open.wait(WAIT_S):
            raise TimeoutError("the test never released the commit")

    async def hold_async(self, size: int) -> None:  # PostgreSQL: runs in the writer task
        await asyncio.to_thread(self.hold, size)

    async def held(self) -> None:
        assert await asyncio.to_thread(self._held.wait, WAIT_S), "no batch reached its COMMIT"

    def release(self) -> None:
        self._open.set()


WriterFactory = Callable[..., Any]


@pytest.fixture
async def make_writer(backend: Backend, store: Store) -> AsyncIterator[WriterFactory]:
    """Started writers on the test's database (the store fixture migrated and emptied it)."""
    writers: list[GroupWriter] = []

    async def make(
        gate: CommitGate | None = None,
        batch_limit: int = 256,
        before_commit: Callable[[int], None] | None = None,
        connections: int = 1,  # PostgreSQL: one, so a held batch makes the others queue
    ) -> GroupWriter:
        hook = before_commit or (gate.hold if gate else None)
        writer: GroupWriter
        if backend.name == "sqlite":
            writer = SqliteGroupWriter.for_url(
                backend.url, batch_limit=batch_limit, before_commit=hook
            )
        else:

            async def async_hook(size: int) -> None:
                assert hook is not None
                await asyncio.to_thread(hook, size)

            writer = PgGroupWriter.for_url(
                backend.url,
                backend.schema,
                batch_limit=batch_limit,
                before_commit=async_hook if hook else None,
                connections=connections,
            )
        await writer.start()
        writers.append(writer)
        return writer

    yield make
    for writer in writers:
        await writer.close()


def claim(op: Operation, sqlite: bool, claim_id: str | None = None) -> Intent:
    now = utc_now()
    return claim_intent(
        operation_id=op.id,
        digest=op.confirm_digest,
        operator="ou_alice",
        claim_id=claim_id or str(ULID.from_datetime(now)),
        now=now,
        sqlite=sqlite,
    )


async def scalar(store: Store, sql: str, **params: Any) -> Any:
    """Read through the store's own engine: a connection other than the writer's."""
    async with store.engine.connect() as conn:
        return (await conn.execute(text(sql), params)).scalar_one()


async def until_queued(writer: GroupWriter, count: int) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while writer.waiting < count:
        assert asyncio.get_running_loop().time() < deadline, f"{writer.waiting} queued"
        await asyncio.sleep(0.005)


async def test_a_failing_intent_is_rolled_back_alone_and_raises_to_its_caller_only(
    store: Store, backend: Backend, make_writer: WriterFactory
) -> None:
    sqlite = backend.name == "sqlite"
    first, second = await offered(store), await offered(store)
    gate = CommitGate()
    writer = await make_writer(gate)
    blocker = asyncio.create_task(writer.commit_intent(Intent((audit("blocker"),))))
    await gate.held()  # batch 1 is held at its COMMIT: the next three queue up as one batch
    good_one = asyncio.create_task(writer.commit_intent(claim(first, sqlite)))
    doomed = asyncio.create_task(
        writer.commit_intent(Intent((audit("doomed"), Statement(ORPHAN_CLAIM)), Lane.PEOPLE))
    )
    good_two = asyncio.create_task(writer.commit_intent(claim(second, sqlite)))
    await until_queued(writer, 3)
    gate.release()

    # each claim returns its operation's row as claimed
    assert [(row["id"], row["version"]) for row in (await good_one)[0]] == [
        (first.id, first.version + 1)
    ]
    assert [(row["id"], row["version"]) for row in (await good_two)[0]] == [
        (second.id, second.version + 1)
    ]
    with pytest.raises((sqlite3.IntegrityError, asyncpg.IntegrityConstraintViolationError)):
        await doomed
    await blocker
    assert gate.sizes == [1, 3], "the three intents shared one batch"
    # run first without a savepoint per intent; the failure sent the batch round again
    assert writer.stats.isolated_reruns == 1
    # the good claims are written whole; nothing of the doomed intent is, not even its
    # first (successful) statement: it was rolled back to its savepoint
    claimed = await scalar(
        store,
        "SELECT count(*) FROM claims WHERE operation_id IN (:a, :b)",
        a=first.id,
        b=second.id,
    )
    assert claimed == 2
    assert await scalar(store, "SELECT count(*) FROM claims WHERE id = 'orphan'") == 0
    assert await scalar(store, "SELECT count(*) FROM audit WHERE actor = 'doomed'") == 0
    assert (await store.get(first.id)).state.value == "claimed"  # type: ignore[union-attr]


async def test_a_condition_that_matches_nothing_writes_nothing(
    store: Store, backend: Backend, make_writer: WriterFactory
) -> None:
    sqlite = backend.name == "sqlite"
    op = await offered(store)
    writer = await make_writer()
    await writer.commit_intent(claim(op, sqlite))
    with pytest.raises(ConditionNotMet):
        await writer.commit_intent(claim(op, sqlite, claim_id="second-claim"))
    assert await scalar(store, "SELECT count(*) FROM claims WHERE operation_id = :o", o=op.id) == 1
    confirmations = "SELECT count(*) FROM confirmations WHERE operation_id = :o"
    assert await scalar(store, confirmations, o=op.id) == 1


async def test_no_waiter_is_resolved_before_the_batch_commits(
    store: Store, backend: Backend, make_writer: WriterFactory
) -> None:
    sqlite = backend.name == "sqlite"
    ops = [await offered(store), await offered(store)]
    gate = CommitGate()
    writer = await make_writer(gate)
    claims = [asyncio.create_task(writer.commit_intent(claim(op, sqlite))) for op in ops]
    failing = asyncio.create_task(writer.commit_intent(Intent((Statement(ORPHAN_CLAIM),))))
    await gate.held()
    # every intent of the batch has run; the COMMIT is held: another connection sees nothing,
    # and no waiter, not even the failed one, has been told anything
    claimed_sql = "SELECT count(*) FROM claims WHERE operation_id IN (:a, :b)"
    assert await scalar(store, claimed_sql, a=ops[0].id, b=ops[1].id) == 0
    for _ in range(20):
        await asyncio.sleep(0)  # give any early resolution every chance to land
    assert not any(task.done() for task in [*claims, failing])

    seen_on_ack: list[int] = []

    async def acknowledged_then_read(task: asyncio.Task[Any], op: Operation) -> None:
        await task
        seen_on_ack.append(
            await scalar(store, "SELECT count(*) FROM claims WHERE operation_id = :o", o=op.id)
        )

    gate.release()
    await asyncio.gather(
        *(acknowledged_then_read(t, op) for t, op in zip(claims, ops, strict=True))
    )
    assert seen_on_ack == [1, 1], "an acknowledged claim is visible to every other connection"
    with pytest.raises((sqlite3.IntegrityError, asyncpg.IntegrityConstraintViolationError)):
        await failing


async def test_a_failed_commit_fails_every_intent_and_writes_nothing(
    store: Store, backend: Backend, make_writer: WriterFactory
) -> None:
    sqlite = backend.name == "sqlite"
    op = await offered(store)
    commits = 0

    def fail_first_commit(_size: int) -> None:
        nonlocal commits
        commits += 1
        if commits == 1:
            raise OSError("disk gone")

    writer = await make_writer(before_commit=fail_first_commit)
    with pytest.raises(BatchNotCommitted):
        await writer.commit_intent(claim(op, sqlite))
    assert await scalar(store, "SELECT count(*) FROM claims WHERE operation_id = :o", o=op.id) == 0
    # the writer carries on: the next batch commits
    assert (await writer.commit_intent(claim(op, sqlite)))[0][0]["id"] == op.id


async def test_concurrent_intents_are_batched_and_each_gets_its_own_result(
    store: Store, backend: Backend, make_writer: WriterFactory
) -> None:
    sqlite = backend.name == "sqlite"
    ops = await offered_many(store, 60)
    writer = await make_writer()

    async def claim_and_label(i: int, op: Operation) -> None:
        lane = Lane.PEOPLE if i % 2 else Lane.BACKGROUND
        claim_rows = (await writer.commit_intent(claim(op, sqlite)))[0]
        assert [(row["id"], row["version"]) for row in claim_rows] == [(op.id, op.version + 1)]
        (label_rows,) = await writer.commit_intent(Intent((audit(f"task-{i}"),), lane))
        assert [row["actor"] for row in label_rows] == [f"task-{i}"]

    await asyncio.gather(*(claim_and_label(i, op) for i, op in enumerate(ops)))
    assert writer.stats.intents == 120
    assert writer.stats.batches < writer.stats.intents, writer.stats
    assert writer.stats.largest_batch > 1
    assert await scalar(store, "SELECT count(*) FROM claims") == 60


async def test_people_go_first_and_background_is_not_starved(
    store: Store, make_writer: WriterFactory
) -> None:
    gate = CommitGate()
    writer = await make_writer(gate, batch_limit=4)
    blocker = asyncio.create_task(writer.commit_intent(Intent((audit("blocker"),))))
    await gate.held()
    # while batch 1 is held, five background intents queue up, THEN five people intents
    tasks = [
        asyncio.create_task(writer.commit_intent(Intent((audit(f"b{i}"),), Lane.BACKGROUND)))
        for i in range(1, 6)
    ]
    await until_queued(writer, 5)
    tasks += [
        asyncio.create_task(writer.commit_intent(Intent((audit(f"p{i}"),), Lane.PEOPLE)))
        for i in range(1, 6)
    ]
    await until_queued(writer, 10)
    gate.release()
    await asyncio.gather(blocker, *tasks)

    async with store.engine.connect() as conn:
        order = (
            (await conn.execute(text("SELECT actor FROM audit WHERE event = 'test' ORDER BY id")))
            .scalars()
            .all()
        )
    # batches of 4: people first, but one slot each batch for the oldest background intent
    assert order == ["blocker", "p1", "p2", "p3", "b1", "p4", "p5", "b2", "b3", "b4", "b5"]
    assert gate.sizes == [1, 4, 4, 2]


def test_take_batch_keeps_one_slot_for_background() -> None:
    loop = asyncio.new_event_loop()
    try:

        def pending(lane: Lane) -> Pending:
            return Pending(Intent((audit("x"),), lane), loop, loop.create_future())

        people = deque(pending(Lane.PEOPLE) for _ in range(10))
        background = deque(pending(Lane.BACKGROUND) for _ in range(10))
        lanes = [p.intent.lane for p in take_batch(people, background, 4)]
        assert lanes == [Lane.PEOPLE] * 3 + [Lane.BACKGROUND]
        only_background = take_batch(deque(), background, 4)
        assert [p.intent.lane for p in only_background] == [Lane.BACKGROUND] * 4
        assert len(take_batch(people, deque(), 4)) == 4  # no background waiting: all people
    finally:
        loop.close()


async def test_close_drains_what_is_queued_and_then_refuses(
    store: Store, make_writer: WriterFactory
) -> None:
    gate = CommitGate()
    writer = await make_writer(gate)
    first = asyncio.create_task(writer.commit_intent(Intent((audit("first"),))))
    await gate.held()
    queued = [
        asyncio.create_task(writer.commit_intent(Intent((audit(f"q{i}"),)))) for i in range(3)
    ]
    await until_queued(writer, 3)
    closing = asyncio.create_task(writer.close())
    await asyncio.sleep(0)
    with pytest.raises(WriterClosed):
        await writer.commit_intent(Intent((audit("late"),)))
    gate.release()
    await closing
    assert [(await task)[0][0]["actor"] for task in [first, *queued]] == ["first", "q0", "q1", "q2"]
    assert await scalar(store, "SELECT count(*) FROM audit WHERE actor = 'late'") == 0


def parse_acks(output: bytes) -> dict[str, str]:
    """operation id -> claim id, for every whole `acked` line the claimer printed."""
    acks: dict[str, str] = {}
    for line in output.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "acked":
            acks[parts[1]] = parts[2]
    return acks


@pytest.mark.parametrize("round_", range(5))
async def test_sigkill_mid_stream_loses_no_acknowledged_claim_and_acks_nothing_uncommitted(
    store: Store, backend: Backend, round_: int
) -> None:
    # far more than the kill waits for (at most 40 acks), so the claimer is still streaming
    # when it lands, however fast this machine is (ciD: 200 were all claimed first once)
    ops = await offered_many(store, 800)
    # plain Popen, read in threads: under load asyncio's child watcher lost a SIGKILLed
    # child's status here ("Unknown child process ... returncode 255")
    proc = subprocess.Popen(  # noqa: ASYNC220
        [sys.executable, "-m", "tests.support.groupcommit_claimer", "4"],
        cwd=ROOT,
        env={**os.environ, **backend.env()},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps([[op.id, op.confirm_digest] for op in ops]).encode() + b"\n")
        proc.stdin.flush()
        output = b""
        while len(parse_acks(output)) < 20 + 5 * round_:  # kill at a different point each round
            line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), WAIT_S)
            assert line, f"the claimer ended early: {output.decode()[-500:]}"
            output += line
        proc.send_signal(signal.SIGKILL)
        output += await asyncio.to_thread(proc.stdout.read)  # what it printed before it died
    finally:
        proc.kill()
        await asyncio.to_thread(proc.wait, WAIT_S)
    assert proc.returncode == -signal.SIGKILL
    assert b"done" not in output, "the claimer finished before the kill: nothing was tested"

    acked = parse_acks(output)
    async with store.engine.connect() as conn:
        if backend.name == "postgresql":
            # One snapshot for the three reads: the server may still commit the killed
            # process's last transaction a moment after the kill (its backend finishes a
            # COMMIT it had received), and it must not land between two of them.
            conn = await conn.execution_options(isolation_level="REPEATABLE READ")
            await conn.begin()
        stored = dict((await conn.execute(text("SELECT operation_id, id FROM claims"))).all())
        claimed_ops = set(
            (await conn.execute(text("SELECT id FROM operations WHERE state = 'claimed'")))
            .scalars()
            .all()
        )
        confirmations = (
            await conn.execute(text("SELECT count(*) FROM confirmations WHERE accepted"))
        ).scalar_one()
    # every acknowledged claim is there, with the id the process printed
    assert {op: stored.get(op) for op in acked} == acked
    # nothing there the process did not submit; each claim whole (state, confirmation, claim)
    assert set(stored) <= {op.id for op in ops}
    assert claimed_ops == set(stored)
    assert confirmations == len(stored)


@pytest.mark.parametrize("connections", [1, 4])
async def test_a_turn_has_the_database_alone_until_it_is_given_back(
    store: Store, make_writer: WriterFactory, connections: int
) -> None:
    """A rare SQLAlchemy write takes a turn: intents queued meanwhile commit after it (on
    PostgreSQL with several connections too: none of them starts a batch meanwhile)."""
    order: list[str] = []
    writer = await make_writer(
        before_commit=lambda _size: order.append("batch"), connections=connections
    )
    async with writer.turn(Lane.BACKGROUND):
        waiting = asyncio.create_task(writer.commit_intent(Intent((audit("after-turn"),))))
        await until_queued(writer, 1)
        async with store.engine.connect() as conn, conn.begin():
            await conn.execute(
                text(
                    "INSERT INTO audit (operation_id, at, actor, event) "
                    "VALUES ('op-test', CURRENT_TIMESTAMP, 'in-turn', 'test')"
                )
            )
        order.append("turn")
        for _ in range(20):  # the loop is free: a writer that ignored the turn would commit now
            await asyncio.sleep(0)
        assert not waiting.done()
    await waiting
    assert order == ["turn", "batch"]
    concat = "group_concat(actor, ',')" if store.sqlite else "string_agg(actor, ',')"
    ids = await scalar(
        store,
        f"SELECT {concat} FROM (SELECT actor FROM audit "
        "WHERE actor IN ('in-turn', 'after-turn') ORDER BY id) AS written",
    )
    assert ids == "in-turn,after-turn"


async def test_a_turn_given_up_while_waiting_does_not_wedge_the_writer(
    make_writer: WriterFactory,
) -> None:
    writer = await make_writer()
    async with writer.turn(Lane.BACKGROUND):
        gave_up = asyncio.create_task(_hold_a_turn(writer))
        await until_queued(writer, 1)
        gave_up.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gave_up
    # the cancelled turn was handed over and given straight back: the writer goes on
    assert (await writer.commit_intent(Intent((audit("still-writing"),))))[0][0]["actor"] == (
        "still-writing"
    )


async def _hold_a_turn(writer: GroupWriter) -> None:
    async with writer.turn(Lane.BACKGROUND):
        raise AssertionError("this turn was given up before it came")


async def test_writing_through_the_writer_inside_a_turn_is_refused_not_deadlocked(
    make_writer: WriterFactory,
) -> None:
    writer = await make_writer()
    async with writer.turn(Lane.PEOPLE):
        with pytest.raises(NestedTurn):
            await writer.commit_intent(Intent((audit("nested"),)))
        with pytest.raises(NestedTurn):
            async with writer.turn(Lane.PEOPLE):
                pass
    assert (await writer.commit_intent(Intent((audit("after"),))))[0][0]["actor"] == "after"


async def test_a_statement_runs_only_if_an_earlier_one_matched_as_it_says(
    store: Store, backend: Backend, make_writer: WriterFactory
) -> None:
    """One intent branches: the claim, else a refusal row, without a trip back to Python."""
    op = await offered(store)
    writer = await make_writer()
    miss = Statement("SELECT id FROM operations WHERE id = 'no-such-operation'")
    hit = Statement("SELECT id FROM operations WHERE id = :id", {"id": op.id})
    results = await writer.commit_intent(
        Intent(
            (
                miss,
                hit,
                Statement(AUDIT.sql, {"actor": "on-miss"}, only_if=(0, False)),
                Statement(AUDIT.sql, {"actor": "on-hit"}, only_if=(1, True)),
                Statement(AUDIT.sql, {"actor": "never"}, only_if=(1, False)),
            )
        )
    )
    assert [bool(rows) for rows in results] == [False, True, True, True, False]
    written = "SELECT count(*) FROM audit WHERE actor IN ('on-miss', 'on-hit', 'never')"
    assert await scalar(store, written) == 2
    with pytest.raises(ValueError, match="earlier statement"):
        Intent((Statement(AUDIT.sql, {"actor": "x"}, only_if=(0, True)),))


def audit_work(actor: str, fail: bool = False) -> Callable[[Connection], Any]:
    """A `Work` item: SQLAlchemy on the writer's thread, writing one audit row (then failing,
    if asked: the row must not survive)."""

    def work(conn: Connection) -> Any:
        row = conn.execute(text(AUDIT.sql), {"actor": actor}).mappings().one()
        if fail:
            raise LookupError(f"{actor} failed after writing")
        return dict(row)

    return work


async def test_work_rides_a_batch_with_intents_and_a_failing_one_sinks_alone(
    store: Store, backend: Backend, make_writer: WriterFactory
) -> None:
    if backend.name != "sqlite":
        writer = await make_writer()
        with pytest.raises(TypeError):  # PostgreSQL's writer runs intents only
            await writer.run(audit_work("pg"))
        return
    gate = CommitGate()
    writer = await make_writer(gate)
    blocker = asyncio.create_task(writer.commit_intent(Intent((audit("blocker"),))))
    await gate.held()
    good_work = asyncio.create_task(writer.run(audit_work("good-work")))
    doomed = asyncio.create_task(writer.run(audit_work("doomed-work", fail=True)))
    intent = asyncio.create_task(writer.commit_intent(Intent((audit("intent"),))))
    await until_queued(writer, 3)
    for _ in range(20):
        await asyncio.sleep(0)
    assert not any(task.done() for task in (good_work, doomed, intent)), "told before COMMIT"
    gate.release()

    assert (await good_work)["actor"] == "good-work"
    assert (await intent)[0][0]["actor"] == "intent"
    with pytest.raises(LookupError):
        await doomed
    await blocker
    assert gate.sizes == [1, 3], "work and intents shared one batch"
    assert writer.stats.work == 2  # both work items were in the committed batch
    actors = "SELECT count(*) FROM audit WHERE actor IN ('good-work', 'intent')"
    assert await scalar(store, actors) == 2
    assert await scalar(store, "SELECT count(*) FROM audit WHERE actor = 'doomed-work'") == 0


async def test_a_transaction_of_the_store_commits_whole_or_not_at_all(
    store: Store,
) -> None:
    """`Store.transact` on either backend: what the function returns once committed; if it
    raises, nothing it wrote stays."""
    row = await store.transact(audit_work("kept"))
    assert row["actor"] == "kept"
    with pytest.raises(LookupError):
        await store.transact(audit_work("dropped", fail=True))
    assert await scalar(store, "SELECT count(*) FROM audit WHERE actor = 'kept'") == 1
    assert await scalar(store, "SELECT count(*) FROM audit WHERE actor = 'dropped'") == 0


async def test_a_store_transaction_inside_a_write_is_refused_on_sqlite_not_deadlocked(
    store: Store, backend: Backend
) -> None:
    """SQLite has one writer: a transaction asked for inside the turn a task holds would wait
    for itself, so it is refused. PostgreSQL has no turns: it is a transaction of its own."""
    async with store.write():
        if backend.name == "sqlite":
            with pytest.raises(NestedTurn):
                await store.transact(audit_work("nested"))
        else:
            assert (await store.transact(audit_work("nested")))["actor"] == "nested"
    assert (await store.transact(audit_work("after")))["actor"] == "after"
    nested = await scalar(store, "SELECT count(*) FROM audit WHERE actor = 'nested'")
    assert nested == (0 if backend.name == "sqlite" else 1)


def _turnstile_held(database: Path) -> bool:
    """Whether some writer holds `<database>-turn` (a people batch is waiting or writing)."""
    fd = os.open(f"{database}-turn", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the lock if we took it
    return False


async def test_a_person_waits_for_one_background_transaction_of_another_writer_not_its_backlog(
    tmp_path: Path,
) -> None:
    """Two writers on one SQLite file, as the bot and its worker process are: the worker's
    backlog of background batches must not keep taking SQLite's (unfair) write lock ahead of
    a click's claim waiting in the other writer."""
    database = tmp_path / "shared.sqlite"
    with sqlite3.connect(database) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE written (id INTEGER PRIMARY KEY AUTOINCREMENT, who TEXT)")

    def written(who: str) -> Statement:
        return Statement("INSERT INTO written (who) VALUES (:who)", {"who": who})

    gate = CommitGate()
    worker = SqliteGroupWriter(str(database), batch_limit=2, before_commit=gate.hold)
    bot = SqliteGroupWriter(str(database))
    await worker.start()
    await bot.start()
    try:
        first = asyncio.create_task(worker.commit_intent(Intent((written("background-0"),))))
        await gate.held()  # the worker holds SQLite's write lock at its first COMMIT
        backlog = [
            asyncio.create_task(worker.commit_intent(Intent((written(f"background-{n}"),))))
            for n in range(1, 7)
        ]
        await until_queued(worker, 6)
        person = asyncio.create_task(bot.commit_intent(Intent((written("person"),), Lane.PEOPLE)))
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while not _turnstile_held(database):  # the bot's batch is in line, waiting on BEGIN
            assert asyncio.get_running_loop().time() < deadline, "the person never got in line"
            await asyncio.sleep(0.005)
        gate.release()
        await asyncio.wait_for(asyncio.gather(first, person, *backlog), WAIT_S)
    finally:
        gate.release()
        await bot.close()
        await worker.close()
    with sqlite3.connect(database) as conn:
        order = [who for (who,) in conn.execute("SELECT who FROM written ORDER BY id")]
    assert order[:2] == ["background-0", "person"], order
    assert sorted(order[2:]) == [f"background-{n}" for n in range(1, 7)]


async def _waiting_on_locks(store: Store, count: int) -> None:
    """Until `count` of the writer's backends wait on a lock (a row's or the test's gate)."""
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while True:
        waiting = await scalar(
            store,
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        if waiting >= count:
            return
        assert asyncio.get_running_loop().time() < deadline, f"{waiting} waiting on locks"
        await asyncio.sleep(0.01)


async def test_batches_writing_the_same_operations_in_opposite_orders_do_not_deadlock(
    store: Store, backend: Backend, make_writer: WriterFactory
) -> None:
    """PostgreSQL commits batches on several connections at once. Batch A writes x then y,
    batch B y then x; each first write is held at a gate until both batches are in. Queued
    in those orders they would deadlock (PostgreSQL fails one after deadlock_timeout and it
    runs again); the writer runs a batch in operation order, so B waits for A and neither
    batch fails. (SQLite has one writer committing one batch at a time: there the four writes
    just commit, in the order queued.)"""
    x, y = await offered_many(store, 2)
    gate_key = 7_141_001
    touch = "UPDATE operations SET version = version WHERE id = :operation_id RETURNING id"
    gate = Statement(
        "SELECT 1 AS passed FROM (SELECT pg_advisory_xact_lock_shared(:gate)) AS held",
        {"gate": gate_key},
    )

    def write(op: Operation, gated: bool) -> Intent:
        statements = (Statement(touch, {"operation_id": op.id}), *((gate,) if gated else ()))
        return Intent(statements)

    writer = await make_writer(batch_limit=2, connections=2)
    if store.sqlite:
        ran = [await writer.commit_intent(write(op, False)) for op in (x, y, y, x)]
        assert [rows[0][0]["id"] for rows in ran] == [x.id, y.id, y.id, x.id]
        return
    holder = await asyncpg.connect(PgGroupWriter.for_url(backend.url)._dsn)
    try:
        await holder.execute("SELECT pg_advisory_lock($1)", gate_key)
        async with writer.turn(Lane.BACKGROUND):  # nothing is taken until all four are queued
            written = [
                asyncio.create_task(writer.commit_intent(intent))
                for intent in (write(x, True), write(y, False), write(y, True), write(x, False))
            ]
            await until_queued(writer, 4)
        await _waiting_on_locks(store, 2)  # A at the gate; B at the gate or at x's row
        await holder.execute("SELECT pg_advisory_unlock($1)", gate_key)
        results = await asyncio.wait_for(asyncio.gather(*written), WAIT_S)
    finally:
        await holder.close()
    assert [rows[0][0]["id"] for rows in results] == [x.id, y.id, y.id, x.id]
    assert writer.stats.isolated_reruns == 0, "a batch failed (deadlock) and ran again"
    assert writer.stats.batches == 2
