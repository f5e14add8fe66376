"""A year of history, measured honestly (issue 34 item 5): the figures of an empty store and
of one grown to N finished operations, side by side with their ratio and the targets.

Growing: `countersign run` (its own process, workers in a child, lark mode ws) against the
sandbox (bench/sandbox_process.py) drives `--base` real operations of a mix end to end
(bench/history_grow.py); the few still working after (orders whose stop-loss still works)
are dropped, and the rest are copied in SQL until there are N (bench/history_multiply.py).
On PostgreSQL the grown database is VACUUMed and ANALYZEd, as its autovacuum would have done
in a year (else the first reads of the copied rows set their hint bits, writing as they read).

Measuring, for each store (a fresh copy of it): `countersign run` -> /readyz 200 and RSS of
the bot and its worker child at rest; 120 orders proposed; the read endpoints, one warm-up
then up to 30 requests in about 10 s (at least 5); `countersign --version` and `list`; 20
warm-up clicks at 10 in flight and 100 at 100 (bench/clickers.py, its own process; the
sandbox's push -> answer), claim -> filled of those 100 from the claims and outcomes rows;
then a burst of `--burst` clicks at 100 in flight and RSS after it. Floors: `python -c pass`
and one bare lark-oapi process holding a long connection (bench/history_floors.py).

    .venv/bin/python bench/history.py [--backend sqlite|postgresql] [--n 10000]
        [--base 300] [--burst 1000] [--keep DIR]

`--keep DIR` keeps the stores in DIR (SQLite files; PostgreSQL databases named in
DIR/stores.json) and reuses a grown store of the same N on the next run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling benches
from callback_ack import BUSY, PROCESSING, TOKEN, cards_settled, offered_cards
from clickers import click_level, percentile
from history_floors import cli_times, floors
from history_grow import BotProcess, drive, rss_mb, start_bot, stop_bot
from history_multiply import multiply
from history_stores import StoreAt, clone, create, disk_mb, drop, engine_of
from sandbox_process import SandboxProcess, wait_until

from store import link_pending, open_store

WARMUP, CLICKS, IN_FLIGHT = 20, 100, 100
LINK_LIKE_A_YEAR = 20_000  # audit entries linked per transaction while growing
READS = {
    "ops": "/ops",
    "ops_id": "/ops/{id}",
    "api_list": "/api/v1/operations?limit=50",
    "metrics": "/metrics",
    "readyz": "/readyz",
}
READ_BUDGET_S, READ_MIN, READ_MAX = 10.0, 5, 30
REST_S = 3.0
FILLED_DEADLINE_S = 600.0
SETTLE_DEADLINE_S = 120.0
WITHIN = 1.5  # the ratio target


async def reads(http: aiohttp.ClientSession, bot: BotProcess, op_id: str) -> dict[str, float]:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    found: dict[str, float] = {}
    for name, path in READS.items():
        url = bot.url + path.format(id=op_id)
        samples: list[float] = []
        started = time.monotonic()
        for index in range(READ_MAX + 1):
            begun = time.perf_counter()
            async with http.get(url, headers=auth) as response:
                await response.read()
                if response.status != 200:
                    raise RuntimeError(f"{path}: HTTP {response.status}")
            if index:  # the first is the warm-up
                samples.append(1000 * (time.perf_counter() - begun))
            if len(samples) >= READ_MIN and time.monotonic() - started > READ_BUDGET_S:
                break
        samples.sort()
        found[f"{name}_p50_ms"] = percentile(samples, 0.50)
        found[f"{name}_p99_ms"] = percentile(samples, 0.99)
    return found


async def awaiting_ids(store: StoreAt, cards: Sequence[str]) -> list[str]:
    """The operations on `cards`, read before they are clicked: while they await
    confirmation the state index finds them among the open ones, not among all history."""
    marks = ", ".join(f"'{c}'" for c in cards)
    sql = text(
        "SELECT id FROM operations WHERE state = 'awaiting_confirmation' "
        f"AND card_message_id IN ({marks})"
    )
    engine = engine_of(store)
    try:
        async with engine.connect() as conn:
            ids = [row[0] for row in (await conn.execute(sql)).all()]
    finally:
        await engine.dispose()
    assert len(ids) == len(cards), f"{len(ids)} of {len(cards)} cards found awaiting"
    return ids


async def claim_to_filled(store: StoreAt, op_ids: Sequence[str]) -> list[float]:
    """Claim -> first filled outcome of these operations, in ms, once all have one. Polled
    by operation id (seeks on claims and outcomes), so the poll itself costs the same at any
    size of history and takes nothing from the executor it times."""
    ids = ", ".join(f"'{op_id}'" for op_id in op_ids)
    sql = text(
        "SELECT c.claimed_at, min(o.observed_at) FROM claims c "
        "JOIN outcomes o ON o.operation_id = c.operation_id AND o.status = 'filled' "
        f"WHERE c.operation_id IN ({ids}) GROUP BY c.operation_id, c.claimed_at"
    )
    rows: list[Any] = []
    engine = engine_of(store)
    try:

        async def all_filled() -> bool:
            async with engine.connect() as conn:
                rows[:] = (await conn.execute(sql)).all()
            return len(rows) == len(op_ids)

        await wait_until(all_filled, FILLED_DEADLINE_S, f"{len(op_ids)} orders filled")
    finally:
        await engine.dispose()
    return sorted(1000 * (as_time(b) - as_time(a)) for a, b in rows)


def as_time(value: Any) -> float:
    from datetime import UTC, datetime

    if isinstance(value, str):  # SQLite: naive UTC text
        value = datetime.fromisoformat(value).replace(tzinfo=UTC)
    return float(value.timestamp())


def rss(bot: BotProcess) -> tuple[float, float]:
    return rss_mb(bot.pid), sum(rss_mb(pid) for pid in bot.worker_pids())


async def suite(
    http: aiohttp.ClientSession, sandbox: SandboxProcess, store: StoreAt, data: Path, burst: int
) -> dict[str, float]:
    bot = await start_bot(http, sandbox, data, store.settings(), store.name)
    figures: dict[str, float] = {"ready_s": bot.ready_s}
    try:
        await sandbox.wait_connections(http, 1, "the bot's long connection")
        await asyncio.sleep(REST_S)
        figures["rss_bot_rest_mb"], figures["rss_worker_rest_mb"] = rss(bot)
        cards = await offered_cards(http, bot.url, WARMUP + CLICKS)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with http.get(f"{bot.url}/api/v1/operations?limit=1", headers=auth) as response:
            op_id = (await response.json())["items"][0]["id"]
        figures |= await reads(http, bot, op_id)
        figures |= cli_times(bot.url, TOKEN)
        clicks = dict(processing=PROCESSING, busy=BUSY)
        timed = await awaiting_ids(store, cards[WARMUP:])
        await click_level(sandbox.base_url, cards[:WARMUP], 10, "success", **clicks)
        level = await click_level(sandbox.base_url, cards[WARMUP:], IN_FLIGHT, "success", **clicks)
        figures |= {"click_p50_ms": level.p50_ms, "click_p99_ms": level.p99_ms}
        figures["click_not_definitive"] = level.processing + level.busy + level.failed
        filled = await claim_to_filled(store, timed)
        figures["filled_p50_ms"] = percentile(filled, 0.50)
        figures["filled_p99_ms"] = percentile(filled, 0.99)
        if burst:
            many = await offered_cards(http, bot.url, burst)
            level = await click_level(sandbox.base_url, many, IN_FLIGHT, "success", **clicks)
            figures["burst_p99_ms"] = level.p99_ms
            await cards_settled(http, bot.url)
            figures["rss_bot_burst_mb"], figures["rss_worker_burst_mb"] = rss(bot)
    finally:
        await stop_bot(bot)
    return figures


async def settled(store: StoreAt) -> None:
    """Wait until nothing of the drive is still deciding, executing, expiring or delivering
    (an order whose stop-loss still works stays: the multiplication drops it)."""
    sql = text(
        "SELECT count(*) FROM operations WHERE state IN ('awaiting_confirmation', 'claimed', "
        "'prepared') OR card_due_at IS NOT NULL OR id IN "
        "(SELECT operation_id FROM deliveries WHERE due_at IS NOT NULL)"
    )
    engine = engine_of(store)
    try:

        async def quiet() -> bool:
            async with engine.connect() as conn:
                return int((await conn.execute(sql)).scalar() or 0) == 0

        await wait_until(quiet, SETTLE_DEADLINE_S, "the driven operations settled")
    finally:
        await engine.dispose()


async def driven(
    http: aiohttp.ClientSession, sandbox: SandboxProcess, data: Path, real: StoreAt, base: int
) -> float:
    """`base` real operations of the mix through `countersign run`, settled; seconds."""
    bot = await start_bot(http, sandbox, data, real.settings(), "base")
    try:
        await sandbox.wait_connections(http, 1, "the bot's long connection")
        print(f"growing: driving {base} real operations ...", flush=True)
        driven_s = await drive(http, sandbox, bot, base)
        await settled(real)
        return driven_s
    finally:
        await stop_bot(bot)


async def linked_like_a_year(grown: StoreAt) -> None:
    """Link the copied audit entries into the chain, as a year of the chainer would have
    (else the bot's chainer would be linking millions while it is measured)."""
    store = await open_store(grown.url)
    try:
        total = 0
        while batch := await store.transact(partial(link_pending, limit=LINK_LIKE_A_YEAR)):
            total += batch
            print(f"  linked {total} audit entries", flush=True)
    finally:
        await store.close()


async def settle_like_a_year(engine: Any) -> None:
    """VACUUM (ANALYZE) the grown PostgreSQL database: visibility map, hint bits and
    statistics as a year of autovacuum leaves them (VACUUM cannot run in a transaction)."""
    async with engine.connect() as conn:
        settled = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await settled.execute(text("VACUUM (ANALYZE)"))


async def grow(
    http: aiohttp.ClientSession,
    sandbox: SandboxProcess,
    data: Path,
    backend: str,
    n: int,
    base: int,
) -> tuple[StoreAt, StoreAt, dict[str, Any]]:
    """The store of the real operations, and its copy grown to `n`."""
    started = time.monotonic()
    marker = data / f"base-{backend}-{base}.json"
    if marker.exists():  # --keep: the real operations of an earlier run, for any N
        saved = json.loads(marker.read_text())
        real, driven_s = StoreAt(**saved["store"]), float(saved["driven_s"])
        print(f"growing: reusing the {base} real operations in {marker}", flush=True)
    else:
        real = await create(backend, data, "base")
        driven_s = await driven(http, sandbox, data, real, base)
        marker.write_text(json.dumps({"store": real.saved(), "driven_s": driven_s}))
    grown = await clone(real, data, f"grown{n}")
    engine = engine_of(grown)
    try:
        async with engine.connect() as conn:
            result = await multiply(conn, n, log=True)
        await linked_like_a_year(grown)
        if backend == "postgresql":
            await settle_like_a_year(engine)
    finally:
        await engine.dispose()
    info = {
        "driven_s": round(driven_s, 1),
        "base_operations": result.base_operations,
        "dropped_working": result.dropped_working,
        "copies": result.copies,
        "multiply_s": round(result.seconds, 1),
        "grow_s": round(time.monotonic() - started, 1),
        "rows": result.rows,
        "disk_mb": round(await disk_mb(grown), 1),
    }
    return real, grown, info


ROWS: tuple[tuple[str, str, str], ...] = (
    ("click -> answer p50, 100 in flight", "click_p50_ms", "ms"),
    ("click -> answer p99, 100 in flight", "click_p99_ms", "ms"),
    ("click -> answer p99, burst at 100 in flight", "burst_p99_ms", "ms"),
    ("claim -> filled p50 (executor)", "filled_p50_ms", "ms"),
    ("claim -> filled p99", "filled_p99_ms", "ms"),
    ("/ops p50", "ops_p50_ms", "ms"),
    ("/ops/{id} p50", "ops_id_p50_ms", "ms"),
    ("/api/v1/operations?limit=50 p50", "api_list_p50_ms", "ms"),
    ("/metrics p50", "metrics_p50_ms", "ms"),
    ("/metrics p99", "metrics_p99_ms", "ms"),
    ("/readyz p50", "readyz_p50_ms", "ms"),
    ("/readyz p99", "readyz_p99_ms", "ms"),
    ("countersign run -> ready", "ready_s", "s"),
    ("RSS bot at rest", "rss_bot_rest_mb", "MB"),
    ("RSS worker child at rest", "rss_worker_rest_mb", "MB"),
    ("RSS bot after the burst", "rss_bot_burst_mb", "MB"),
    ("RSS worker child after the burst", "rss_worker_burst_mb", "MB"),
    ("countersign --version", "cli_version_s", "s"),
    ("countersign list", "cli_list_s", "s"),
)


def target(
    key: str, empty: dict[str, float], at_n: dict[str, float], floor: dict[str, float]
) -> str:
    """The issue's targets for one figure at N (its "Targets")."""
    value = at_n[key]
    met = {True: "met", False: "MISSED"}
    if key.startswith("rss_"):
        return f"bare lark-oapi process {floor['bare_sdk_rss_mb']:.0f} MB (sum: below)"
    if key == "cli_version_s":
        limit = 3 * floor["python_pass_s"]
        return f"<= 3x python -c pass = {limit:.2f} s: {met[value <= limit]}"
    if key == "cli_list_s":  # its HTTP round trip: the API list it asks for, at this size
        limit = 0.3 + at_n["api_list_p50_ms"] / 1000
        return f"<= 0.3 s + API list p50 = {limit:.2f} s: {met[value <= limit]}"
    ratio = value / empty[key] if empty.get(key) else math.nan
    parts = [f"<= {WITHIN}x: {met[ratio <= WITHIN]}"]
    if key == "readyz_p99_ms":
        parts.append(f"<= 20 ms: {met[value <= 20]}")
    if key == "metrics_p99_ms":
        parts.append(f"<= 50 ms: {met[value <= 50]}")
    return "; ".join(parts)


def fmt(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "—"
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def table(
    backend: str, n: int, empty: dict[str, float], at_n: dict[str, float], floor: dict[str, float]
) -> str:
    lines = [
        f"## bench/history.py — {backend}, empty vs {n:,} finished operations",
        "",
        f"| figure | empty | {n:,} | ratio | target |",
        "|---|---|---|---|---|",
    ]
    for label, key, unit in ROWS:
        if key not in empty or key not in at_n:
            continue
        ratio = at_n[key] / empty[key] if empty[key] else math.nan
        mark = f"**{ratio:.1f}x**" if ratio > WITHIN else f"{ratio:.1f}x"
        lines.append(
            f"| {label} ({unit}) | {fmt(empty[key])} | {fmt(at_n[key])} | {mark} | "
            f"{target(key, empty, at_n, floor)} |"
        )
    for name, figures in (("empty", empty), (f"{n:,}", at_n)):
        both = figures["rss_bot_rest_mb"] + figures["rss_worker_rest_mb"]
        limit = 1.5 * floor["bare_sdk_rss_mb"]
        verdict = "met" if both <= limit else "MISSED"
        lines.append(
            f"RSS at rest, bot + worker, {name}: {both:.0f} MB; target <= 1.5 x bare lark-oapi "
            f"process ({floor['bare_sdk_rss_mb']:.0f} MB) = {limit:.0f} MB: {verdict}"
        )
    lines.append(f"python -c pass: {floor['python_pass_s']:.3f} s")
    lines.append(
        f"clicks answered other than definitively: empty {empty['click_not_definitive']:.0f}, {n:,} {at_n['click_not_definitive']:.0f}"
    )
    return "\n".join(lines)


async def main(backend: str, n: int, base: int, burst: int, keep: Path | None) -> int:
    sandbox = await SandboxProcess.start()
    made: list[StoreAt] = []
    with tempfile.TemporaryDirectory(prefix="cs-history-") as scratch:
        data = keep or Path(scratch)
        data.mkdir(parents=True, exist_ok=True)
        marker = data / f"grown-{backend}-{n}.json"
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
                floor = await floors(sandbox)
                if keep and marker.exists():
                    saved = json.loads(marker.read_text())
                    grown, info = StoreAt(**saved["store"]), saved["info"]
                    print(f"reusing the grown store in {marker}", flush=True)
                else:
                    real, grown, info = await grow(http, sandbox, data, backend, n, base)
                    if keep:
                        marker.write_text(json.dumps({"store": grown.saved(), "info": info}))
                    else:
                        made += [real, grown]
                print(f"grown: {json.dumps(info)}", flush=True)
                empty_store = await create(backend, data, "empty")
                made.append(empty_store)
                print("measuring the empty store ...", flush=True)
                empty = await suite(http, sandbox, empty_store, data, burst)
                run_store = await clone(grown, data, "run")
                made.append(run_store)
                print(f"measuring the store of {n:,} ...", flush=True)
                at_n = await suite(http, sandbox, run_store, data, burst)
            print(table(backend, n, empty, at_n, floor), flush=True)
            print(f"raw: {json.dumps({'empty': empty, 'n': at_n, 'floors': floor})}")
        finally:
            await sandbox.stop()
            for store in made:
                await drop(store)
    return 0


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--n", type=int, default=10_000, help="finished operations to grow to")
    parser.add_argument("--base", type=int, default=300, help="real operations driven first")
    parser.add_argument("--burst", type=int, default=1000, help="clicks in the burst (0: none)")
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the stores in this directory")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    sys.exit(asyncio.run(main(args.backend, args.n, args.base, args.burst, args.keep)))


if __name__ == "__main__":
    cli()
