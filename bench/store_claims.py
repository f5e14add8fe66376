"""Claim throughput and latency of the store, on SQLite and on PostgreSQL.

For each backend and each number of concurrent claimers (1, 10, 50):

* distinct: N operations are prepared in `awaiting_confirmation` (not timed), then C
  asyncio workers take the next operation from a shared queue and claim it with
  `Store.confirm_and_claim`, given the operation as read before (as the click consumer
  does: it reads it for its checks). Every operation is claimed exactly once (checked).
* same-op (C > 1 only): for each of R rounds one fresh operation is prepared, then C
  claimers click confirm on it at the same moment. Exactly one must win (asserted, both
  from the results and from the claim rows); the others get a refusal, which the store
  also writes down, so every click is a write transaction.

* floor (distinct only): the same claims written by the bare driver, in the same run, right
  after the store's level at the same concurrency: raw sqlite3, one durable commit per
  claim, C threads with a connection each; raw asyncpg, the claim as one statement, C
  connections (see bench/claim_floor.py for exactly what they write and why that way).
  The last table is store/floor per level, next to the issue's targets: SQLite >= 1.5x raw
  sqlite3 and PostgreSQL >= 1.0x raw asyncpg, both at 50 claimers.

claims/s = clicks / wall time of the timed phase; p50/p99 are per-click latencies.

PostgreSQL runs in a throwaway schema (`cs_bench_<pid>_<hex>`) that is dropped at the end;
SQLite runs on a fresh file in a temporary directory.

* groupcommit (`--writer groupcommit`): instead of the store, the floor's own hand-written
  claim (store.claims.claim_sql) as intents through the group-commit writer (store.groupcommit), C
  asyncio claimers on one writer; same-op is skipped (it measures the store's refusals).

    .venv/bin/python bench/store_claims.py [--backend sqlite|postgresql|both] [--ops N]
        [--writer store|groupcommit]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select, text
from ulid import ULID

from kernel.reasons import Reason
from store import (
    Claimed,
    ClaimRow,
    Click,
    Counted,
    Draft,
    GroupWriter,
    Operation,
    Refused,
    State,
    Store,
    claim_intent,
    create_engine,
    open_store,
    open_writer,
    upgrade,
)

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling module
from claim_floor import FloorRun, Target, asyncpg_floor, finance_draft, sqlite_floor

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
CONCURRENCY: tuple[int, ...] = (1, 10, 50)
OPERATOR = "ou_alice"
PREPARE_PARALLELISM = 10
# The issue's targets: store claims/s over the bare driver's, at 50 concurrent claimers.
TARGETS: dict[str, tuple[str, float]] = {"sqlite": ("sqlite3", 1.5), "postgresql": ("asyncpg", 1.0)}
TARGET_CLAIMERS = 50
GROUP_COMMIT = "groupcommit"  # --writer and the mode of its rows

# Runs the floor on prepared operations with C claimers.
Floor = Callable[[list[Target], int], Awaitable[FloorRun]]

HEADER = (
    f"{'backend':<11} {'mode':<9} {'claimers':>8} {'claims':>7} {'claims/s':>9} "
    f"{'p50_ms':>8} {'p99_ms':>8}  {'winners':<7}"
)


@dataclass(frozen=True)
class Result:
    backend: str
    mode: str
    claimers: int
    clicks: int
    wall_s: float
    latencies_ms: list[float]
    winners: str

    @property
    def rate(self) -> float:
        return self.clicks / self.wall_s if self.wall_s > 0 else math.inf

    def p(self, q: float) -> float:
        return percentile(sorted(self.latencies_ms), q)

    def line(self) -> str:
        return (
            f"{self.backend:<11} {self.mode:<9} {self.claimers:>8} {self.clicks:>7} "
            f"{self.rate:>9.1f} {self.p(50):>8.2f} {self.p(99):>8.2f}  {self.winners:<7}"
        )


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted sequence."""
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


class Preparer:
    """Makes operations that are waiting for a confirm click, with unique request ids."""

    def __init__(self, store: Store, tag: str) -> None:
        self.store = store
        self.tag = tag
        self.counter = 0

    def draft(self) -> Draft:
        self.counter += 1
        i = self.counter
        return finance_draft(
            f"req-{self.tag}-{i}",
            {"side": "buy", "symbol": "SIM-USD", "quantity": f"{i}.25", "limit_price": "101.50"},
            {"title": "x", "terms": []},
            expires_in_s=900,
            index=i,
        )

    async def one(self) -> Operation:
        proposed = await self.store.propose(self.draft())
        assert proposed.created, "request ids must be unique within a run"
        op = await self.store.mark_card_sent(proposed.operation.id, "om_x")
        assert op.state is State.AWAITING_CONFIRMATION, op.state
        return op

    async def many(self, count: int) -> list[Operation]:
        gate = asyncio.Semaphore(PREPARE_PARALLELISM)

        async def guarded() -> Operation:
            async with gate:
                return await self.one()

        return list(await asyncio.gather(*(guarded() for _ in range(count))))


def click_for(op: Operation) -> Click:
    return Click(
        operation_id=op.id,
        action="confirm",
        digest=op.confirm_digest,
        operator_open_id=OPERATOR,
    )


async def warm_pool(store: Store, connections: int) -> None:
    """Open `connections` pooled connections up front so no timed click pays for a connect."""
    hold = asyncio.Event()
    opened = 0

    async def hold_one() -> None:
        nonlocal opened
        async with store.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
            opened += 1
            if opened == connections:
                hold.set()
            await hold.wait()

    await asyncio.gather(*(hold_one() for _ in range(connections)))


# Claims one prepared operation, raising if it was not claimed.
ClaimOne = Callable[[Operation], Awaitable[None]]


def store_claim(store: Store) -> ClaimOne:
    async def claim(op: Operation) -> None:
        outcome = await store.confirm_and_claim(click_for(op))
        if not isinstance(outcome, Claimed):
            raise AssertionError(f"{op.id}: expected a claim, got {outcome!r}")

    return claim


def group_commit_claim(writer: GroupWriter, sqlite: bool) -> ClaimOne:
    """The floor's hand-written claim (store.claims.claim_sql) as an intent on the people lane."""

    async def claim(op: Operation) -> None:
        now = datetime.now(UTC)
        intent = claim_intent(
            operation_id=op.id,
            digest=op.confirm_digest,
            operator=OPERATOR,
            claim_id=str(ULID.from_datetime(now)),
            now=now,
            sqlite=sqlite,
        )
        rows = (await writer.commit_intent(intent))[0]
        if [row["id"] for row in rows] != [op.id]:
            raise AssertionError(f"{op.id}: the writer answered another claim's rows {rows!r}")

    return claim


async def run_distinct(
    preparer: Preparer, claim: ClaimOne, backend: str, mode: str, claimers: int, ops: int
) -> Result:
    prepared = await preparer.many(ops)
    queue: asyncio.Queue[Operation] = asyncio.Queue()
    for op in prepared:
        queue.put_nowait(op)
    latencies: list[float] = []
    claimed_ids: list[str] = []

    async def worker() -> None:
        while True:
            try:
                op = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            started = time.perf_counter()
            await claim(op)
            latencies.append((time.perf_counter() - started) * 1000)
            claimed_ids.append(op.id)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(claimers)))
    wall = time.perf_counter() - started

    assert len(claimed_ids) == ops and set(claimed_ids) == {op.id for op in prepared}
    return Result(backend, mode, claimers, ops, wall, latencies, "-")


async def run_same_op(
    store: Store, preparer: Preparer, backend: str, claimers: int, rounds: int
) -> Result:
    targets = await preparer.many(rounds)
    latencies: list[float] = []
    wall = 0.0

    for op in targets:
        go = asyncio.Event()
        click = click_for(op)

        async def claimer(
            click: Click = click, go: asyncio.Event = go
        ) -> Claimed | Counted | Refused:
            await go.wait()
            started = time.perf_counter()
            outcome = await store.confirm_and_claim(click)
            latencies.append((time.perf_counter() - started) * 1000)
            return outcome

        tasks = [asyncio.create_task(claimer()) for _ in range(claimers)]
        await asyncio.sleep(0)  # let every claimer reach the gate
        started = time.perf_counter()
        go.set()
        outcomes = await asyncio.gather(*tasks)
        wall += time.perf_counter() - started

        winners = sum(isinstance(outcome, Claimed) for outcome in outcomes)
        assert winners == 1, f"{op.id}: {winners} claimers won, expected exactly 1"
        assert all(
            isinstance(outcome, Claimed)
            or (isinstance(outcome, Refused) and outcome.reason is Reason.ALREADY_CLAIMED)
            for outcome in outcomes
        ), outcomes
        assert await store.claim_count(op.id) == 1, f"{op.id}: more than one claim row"

    return Result(backend, "same-op", claimers, rounds * claimers, wall, latencies, "1")


async def run_floor(
    store: Store, preparer: Preparer, floor: Floor, backend: str, claimers: int, ops: int
) -> Result:
    """The same distinct claims by the bare driver, on operations the store prepared."""
    prepared = await preparer.many(ops)
    targets = [Target(op.id, op.confirm_digest, OPERATOR) for op in prepared]
    # The store's pooled connections close first: the floor opens its own C, and PostgreSQL
    # allows 100 in all. The store's next level warms its pool again.
    await store.engine.dispose()
    run = await floor(targets, claimers)
    async with store.engine.connect() as conn:
        claims = (
            await conn.execute(
                select(func.count())
                .select_from(ClaimRow)
                .where(ClaimRow.operation_id.in_([op.id for op in prepared]))
            )
        ).scalar_one()
    assert claims == ops and len(run.latencies_ms) == ops, (claims, len(run.latencies_ms))
    return Result(backend, TARGETS[backend][0], claimers, ops, run.wall_s, run.latencies_ms, "-")


async def bench_store(
    store: Store, backend: str, ops: int, rounds: int, floor: Floor, writer: GroupWriter | None
) -> list[Result]:
    """Per concurrency: the store's distinct claims (or the group-commit writer's, with
    `--writer groupcommit`), then the floor's right after (the machine is shared and noisy;
    neighbours in time see the same noise)."""
    preparer = Preparer(store, f"{os.getpid()}-{uuid.uuid4().hex[:8]}")
    if writer is None:
        claim, mode = store_claim(store), "distinct"
    else:
        claim, mode = group_commit_claim(writer, backend == "sqlite"), GROUP_COMMIT
    await run_distinct(preparer, claim, backend, mode, 1, min(ops, 20))  # warm-up, not reported
    await run_floor(store, preparer, floor, backend, 1, min(ops, 20))  # warm-up, not reported
    results: list[Result] = []
    for claimers in CONCURRENCY:
        await warm_pool(store, claimers)
        result = await run_distinct(preparer, claim, backend, mode, claimers, ops)
        print(result.line(), flush=True)
        results.append(result)
        result = await run_floor(store, preparer, floor, backend, claimers, ops)
        print(result.line(), flush=True)
        results.append(result)
    if writer is not None:
        print(f"# group commit: {writer.stats}", flush=True)
        return results  # same-op measures the store's refusals, which the writer does not write
    await warm_pool(store, max(CONCURRENCY))
    for claimers in CONCURRENCY:
        if claimers < 2:
            continue
        result = await run_same_op(store, preparer, backend, claimers, rounds)
        print(result.line(), flush=True)
        results.append(result)
    return results


@asynccontextmanager
async def maybe_writer(
    use: bool, url: str, schema: str | None
) -> AsyncIterator[GroupWriter | None]:
    if not use:
        yield None
        return
    writer = await open_writer(url, schema=schema)
    try:
        yield writer
    finally:
        await writer.close()


async def bench_sqlite(ops: int, rounds: int, group_commit: bool) -> list[Result]:
    with tempfile.TemporaryDirectory(prefix="cs-bench-") as directory:
        path = os.path.join(directory, "store.db")
        url = f"sqlite+aiosqlite:///{path}"
        store = await open_store(url, pool_size=max(CONCURRENCY) + 5)

        async def floor(targets: list[Target], claimers: int) -> FloorRun:
            return await asyncio.to_thread(sqlite_floor, path, targets, claimers)

        try:
            async with maybe_writer(group_commit, url, None) as writer:
                return await bench_store(store, "sqlite", ops, rounds, floor, writer)
        finally:
            await store.close()


@asynccontextmanager
async def private_schema(url: str) -> AsyncIterator[str]:
    """A fresh PostgreSQL schema at the head migration, dropped on the way out."""
    schema = f"cs_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url)
    try:
        migrator = create_engine(url, schema=schema)
        try:
            await upgrade(migrator, schema=schema)
        finally:
            await migrator.dispose()
        yield schema
    finally:
        try:
            async with admin.begin() as conn:
                await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            print(f"# dropped schema {schema}", flush=True)
        finally:
            await admin.dispose()


async def bench_postgresql(url: str, ops: int, rounds: int, group_commit: bool) -> list[Result]:
    async with private_schema(url) as schema:
        store = await open_store(url, schema=schema, pool_size=max(CONCURRENCY) + 5)

        async def floor(targets: list[Target], claimers: int) -> FloorRun:
            return await asyncpg_floor(url, schema, targets, claimers)

        try:
            async with store.engine.connect() as conn:
                version = (await conn.execute(text("SHOW server_version"))).scalar_one()
                commit = (await conn.execute(text("SHOW synchronous_commit"))).scalar_one()
            print(
                f"# postgresql {version}, synchronous_commit {commit}, schema {schema}", flush=True
            )
            async with maybe_writer(group_commit, url, schema) as writer:
                return await bench_store(store, "postgresql", ops, rounds, floor, writer)
        finally:
            await store.close()


def ratio_table(results: Sequence[Result]) -> str:
    """store/floor per backend and concurrency, with the issue's target beside it."""
    lines = [
        "# store/floor, distinct claims (> 1 is the store faster; with --writer groupcommit "
        "'store' is the group-commit writer); the issue's target is "
        f"claims/s at {TARGET_CLAIMERS} claimers",
        f"{'backend':<11} {'floor':<9} {'claimers':>8} {'store/s':>9} {'floor/s':>9} "
        f"{'ratio':>6} {'p50 s/f':>8} {'p99 s/f':>8}  target",
    ]
    found = {(r.backend, r.mode, r.claimers): r for r in results}
    for (backend, mode, claimers), store in found.items():
        if mode not in ("distinct", GROUP_COMMIT):
            continue
        floor_name, target = TARGETS[backend]
        floor = found[(backend, floor_name, claimers)]
        ratio = store.rate / floor.rate
        verdict = ""
        if claimers == TARGET_CLAIMERS:
            verdict = f">= {target:.1f}x {'met' if ratio >= target else 'MISSED'}"
        lines.append(
            f"{backend:<11} {floor_name:<9} {claimers:>8} {store.rate:>9.1f} {floor.rate:>9.1f} "
            f"{ratio:>5.2f}x {store.p(50) / floor.p(50):>8.2f} "
            f"{store.p(99) / floor.p(99):>8.2f}  {verdict}"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument(
        "--ops", type=int, default=200, help="operations claimed per distinct run (default 200)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="operations contended for per same-op run (default 10)",
    )
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL, help="postgresql+asyncpg:// URL")
    parser.add_argument(
        "--writer",
        choices=("store", GROUP_COMMIT),
        default="store",
        help="claim through Store.confirm_and_claim (default) or the floor's hand-written "
        "claim through the group-commit writer (store.groupcommit)",
    )
    args = parser.parse_args(argv)
    if args.ops < 1 or args.rounds < 1:
        parser.error("--ops and --rounds must be at least 1")
    return args


async def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    print(
        f"# python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, "
        f"cpus {os.cpu_count()}, ops {args.ops}, same-op rounds {args.rounds}",
        flush=True,
    )
    print(HEADER, flush=True)
    group_commit = args.writer == GROUP_COMMIT
    started = time.perf_counter()
    results: list[Result] = []
    for backend in backends:
        if backend == "sqlite":
            results += await bench_sqlite(args.ops, args.rounds, group_commit)
        else:
            results += await bench_postgresql(args.pg_url, args.ops, args.rounds, group_commit)
    print(
        "# distinct: each claimer claims the next of N waiting operations; "
        "same-op: C claimers click one operation at once, per round, "
        "exactly one wins (asserted); claims counts clicks; "
        "sqlite3/asyncpg: the floor, the same distinct claims by the bare driver",
        flush=True,
    )
    print(ratio_table(results), flush=True)
    print(f"# total {time.perf_counter() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
