"""Replicas: 1, 2 and 3 bot processes on one PostgreSQL database, against one sandbox process.

For each level K (1, 2, 3): K `countersign run --config FILE --port P` subprocesses (lark
mode ws, the same config but the port; the simulated venue is one file they share) on one
PostgreSQL database, in a private schema (`cs_bench_<pid>_<hex>`, migrated once, dropped at
the end); the sandbox runs in its own process (bench/sandbox_process.py) and hands each click
to one of the K long connections in turn (round robin). Per level:

* setup (not timed): N + 5*K orders proposed through the first bot's API, their cards posted
  by the bots; 5*K of them clicked and settled as a warm-up.
* timed: the N cards clicked with C clickers in flight through the sandbox control API; then
  wait until every operation is executed and its final card patched.

Printed per level: answers/s (N clicks / wall time of the clicking), push -> answer p50/p99
as the sandbox measures it, "processing"/"busy" answers, click -> executor start p50/p99
(audit row of the first execution step) and click -> final card p99; CPU seconds per bot
(its process tree, from /proc/<pid>/stat, over the timed phase), of the sandbox and of this
process, and how busy the whole machine was (/proc/stat); duplicates, which must be 0:
operations with more than one claim, venue client ids submitted more than once, and
operations of the level without exactly one venue order.

The issue's target: 2 replicas >= 1.5x the answers/s of one, unless both cores are saturated
(then the CPU figures say so); 0 duplicate claims or executions. Linux only (/proc).

    .venv/bin/python bench/replicas.py [--ops N] [--in-flight C] [--replicas 1,2,3]
        [--workers inline|process]

Each bot runs its workers inline unless `--workers process`: the bots stand for hosts of
their own, and on a 2-core machine three bots with a worker process each (six interpreters)
answer some clicks "busy" (not on record within the ack budget; Lark's user clicks again),
which this bench does not do, so those operations never settle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
from sqlalchemy import text

from store import Store, open_store

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling benches
from callback_ack import (
    bot_environ,
    click_level,
    free_port,
    offered_cards,
    settings_data,
)
from clickers import Level, percentile
from confirm_to_outcome import EXECUTION, measure
from sandbox_process import SandboxProcess, wait_until
from store_claims import private_schema

DEFAULT_PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
COUNTERSIGN = Path(sys.executable).with_name("countersign")
WARMUP_PER_BOT = 5
START_DEADLINE_S = 60.0
STOP_DEADLINE_S = 60.0
TARGET_SPEEDUP = 1.5  # 2 replicas over 1, answers/s
# Per bot (SQLAlchemy adds as many overflow): 3 bots stay within PostgreSQL's 100 connections,
# which the machine's other users share.
POOL_SIZE = 10
SATURATED = 0.9  # machine busy share above which "both cores saturated" is said
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# -- CPU from /proc ------------------------------------------------------------------------------


def proc_stat(pid: int) -> tuple[int, float]:
    """(parent pid, user+system CPU seconds) of a live process."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # the name in () may hold spaces
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def tree(root: int) -> Iterator[int]:
    """`root` and its live descendants (a bot may supervise worker processes)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = proc_stat(int(entry))[0]
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
    found = {root}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    yield from found


def tree_cpu_s(root: int) -> float:
    total = 0.0
    for pid in tree(root):
        try:
            total += proc_stat(pid)[1]
        except (OSError, IndexError, ValueError):
            continue
    return total


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine since boot."""
    with open("/proc/stat", encoding="ascii") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])  # guest time is already in user
    return total - idle, total


def process_cpu_s(pid: int) -> float:
    return proc_stat(pid)[1]


@dataclass
class CpuMeter:
    """CPU seconds per named reading (a process, or a bot's process tree), and the machine's
    busy share, from `start()` on."""

    readings: dict[str, Callable[[], float]]
    before: dict[str, float]
    machine: tuple[int, int]

    @classmethod
    def start(cls, readings: dict[str, Callable[[], float]]) -> CpuMeter:
        before = {name: read() for name, read in readings.items()}
        return cls(readings, before, machine_ticks())

    def read(self) -> tuple[dict[str, float], float]:
        spent = {name: read() - self.before[name] for name, read in self.readings.items()}
        busy, total = machine_ticks()
        share = (busy - self.machine[0]) / max(1, total - self.machine[1])
        return spent, share


# -- the bots ------------------------------------------------------------------------------------


def toml_value(value: Any) -> str:
    """A TOML value: JSON's strings, numbers and arrays are TOML's; tables are inline."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def toml_document(data: Mapping[str, Any]) -> str:
    lines: list[str] = []
    for section, body in data.items():
        if isinstance(body, list):
            for item in body:
                lines += [f"[[{section}]]", *(f"{k} = {toml_value(v)}" for k, v in item.items())]
        else:
            lines += [f"[{section}]", *(f"{k} = {toml_value(v)}" for k, v in body.items())]
    return "\n".join(lines) + "\n"


@dataclass
class Bot:
    url: str
    process: asyncio.subprocess.Process
    log: Path

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


async def start_bot(config: Path, environ: dict[str, str], port: int, log: Path) -> Bot:
    with log.open("wb") as sink:  # the child keeps its own descriptor
        process = await asyncio.create_subprocess_exec(
            str(COUNTERSIGN),
            "run",
            "--config",
            str(config),
            "--port",
            str(port),
            env={**os.environ, **environ},
            stdout=sink,
            stderr=sink,
        )
    return Bot(f"http://127.0.0.1:{port}", process, log)


async def answers(http: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with http.get(f"{url}/readyz") as response:
            return response.status < 500
    except aiohttp.ClientError:
        return False


async def stop_bots(bots: Sequence[Bot]) -> None:
    for bot in bots:
        if bot.process.returncode is None:
            bot.process.send_signal(signal.SIGTERM)
    for bot in bots:
        try:
            await asyncio.wait_for(bot.process.wait(), STOP_DEADLINE_S)
        except TimeoutError:
            bot.process.kill()
            await bot.process.wait()


@asynccontextmanager
async def running_bots(
    http: aiohttp.ClientSession, sandbox: SandboxProcess, config: Path, count: int, logs: Path
) -> AsyncIterator[list[Bot]]:
    bots: list[Bot] = []
    try:
        for index in range(count):
            log = logs / f"bot-{count}-{index}.log"
            bots.append(await start_bot(config, bot_environ(sandbox), free_port(), log))
        for bot in bots:

            async def up(bot: Bot = bot) -> bool:
                if bot.process.returncode is not None:
                    raise RuntimeError(f"a bot exited ({bot.process.returncode}):\n{bot.tail()}")
                return await answers(http, bot.url)

            await wait_until(up, START_DEADLINE_S, f"{bot.url} answering")
        await sandbox.wait_connections(http, count, f"{count} long connections")
        yield bots
    finally:
        await stop_bots(bots)


# -- one level -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    bots: int
    clicks: Level
    start_ms: list[float]
    card_ms: list[float]
    seconds: float
    cpu_s: dict[str, float]
    machine_busy: float
    duplicate_claims: int
    duplicate_submits: int
    unexecuted: int


async def duplicates(store: Store, venue: Path, ids: Sequence[str]) -> tuple[int, int, int]:
    """(operations with more than one claim, venue client ids submitted more than once) over
    the whole schema and venue, and how many operations of `ids` the venue has no order for
    (an attempt's client id is unique, so an operation reaches the venue at most once)."""
    async with store.read() as conn:
        claims = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM (SELECT operation_id FROM claims "
                    "GROUP BY operation_id HAVING count(*) > 1) AS twice"
                )
            )
        ).scalar_one()
        client_ids = {
            row.operation_id: row.client_id
            for row in await conn.execute(text("SELECT operation_id, client_id FROM attempts"))
        }
    with closing(sqlite3.connect(venue)) as db:
        resubmitted = db.execute("SELECT count(*) FROM orders WHERE submit_count > 1").fetchone()[0]
        orders = {
            client_id
            for (client_id,) in db.execute(
                "SELECT client_id FROM orders WHERE role = ?", ("order",)
            )
        }
    unexecuted = sum(1 for op in ids if client_ids.get(op) not in orders)
    return int(claims), int(resubmitted), unexecuted


async def run_level(
    http: aiohttp.ClientSession,
    sandbox: SandboxProcess,
    store: Store,
    venue: Path,
    bots: list[Bot],
    ops: int,
    in_flight: int,
) -> Row:
    warmup = WARMUP_PER_BOT * len(bots)
    print(f"{len(bots)} bot(s): proposing {warmup + ops} orders ...", flush=True)
    cards = await offered_cards(http, bots[0].url, warmup + ops)
    warm: dict[str, datetime] = {}
    await click_level(sandbox, cards[:warmup], len(bots), "success", warm)
    await measure(store, warm)

    timed = cards[warmup:]
    clicked: dict[str, datetime] = {}
    # The bots and the sandbox are this process's children: it counts only itself.
    meter = CpuMeter.start(
        {
            **{f"bot{i + 1}": partial(tree_cpu_s, bot.process.pid) for i, bot in enumerate(bots)},
            "sandbox": partial(process_cpu_s, sandbox.pid),
            "bench": partial(process_cpu_s, os.getpid()),
        }
    )
    started = time.perf_counter()
    level = await click_level(sandbox, timed, in_flight, "success", clicked)
    start_ms, card_ms = await measure(store, clicked)
    seconds = time.perf_counter() - started
    cpu_s, busy = meter.read()
    async with store.read() as conn:
        ids = [
            row.id
            for row in await conn.execute(
                text("SELECT id FROM operations WHERE card_message_id = ANY(:cards)"),
                {"cards": timed},
            )
        ]
    claims, submits, unexecuted = await duplicates(store, venue, ids)
    return Row(
        len(bots), level, start_ms, card_ms, seconds, cpu_s, busy, claims, submits, unexecuted
    )


# -- main ----------------------------------------------------------------------------------------


def table(rows: Sequence[Row], ops: int, in_flight: int, schema: str) -> str:
    lines = [
        f"replicas on one PostgreSQL database (schema {schema}), one sandbox process; "
        f"{ops} operations per level, clicked {in_flight} in flight, round robin over the "
        "bots' long connections",
        f"{'bots':>4} | {'ans/s':>6} {'ack p50':>8} {'ack p99':>8} {'proc':>4} {'busy':>4} "
        f"{'fail':>4} | {'start p50':>9} {'start p99':>9} {'card p99':>9} {'done s':>6} | "
        f"{'machine':>7} CPU s (timed phase) | dup claims  dup submits  unexecuted",
    ]
    for r in rows:
        c = r.clicks
        cpu = " ".join(f"{name} {value:.2f}" for name, value in r.cpu_s.items())
        lines.append(
            f"{r.bots:>4} | {c.per_s:>6.1f} {c.p50_ms:>6.0f}ms {c.p99_ms:>6.0f}ms "
            f"{c.processing:>4} {c.busy:>4} {c.failed:>4} | "
            f"{percentile(r.start_ms, 0.5):>7.0f}ms {percentile(r.start_ms, 0.99):>7.0f}ms "
            f"{percentile(r.card_ms, 0.99):>7.0f}ms {r.seconds:>6.1f} | "
            f"{100 * r.machine_busy:>6.0f}% {cpu} | "
            f"{r.duplicate_claims:>10} {r.duplicate_submits:>12} {r.unexecuted:>11}"
        )
    by_bots = {r.bots: r for r in rows}
    if 1 in by_bots:
        one = by_bots[1].clicks.per_s
        for r in rows[1:]:
            speedup = r.clicks.per_s / one
            note = ""
            if r.bots == 2:
                met = speedup >= TARGET_SPEEDUP
                saturated = r.machine_busy >= SATURATED
                note = f"  target >= {TARGET_SPEEDUP}x: {'met' if met else 'MISSED'}" + (
                    f" (machine {100 * r.machine_busy:.0f}% busy: both cores saturated)"
                    if saturated and not met
                    else ""
                )
            lines.append(f"answers/s, {r.bots} bots over 1: {speedup:.2f}x{note}")
    clean = all(r.duplicate_claims == r.duplicate_submits == r.unexecuted == 0 for r in rows)
    lines.append(
        f"target: 0 duplicate claims or executions: {'met' if clean else 'MISSED'}; "
        f"2 replicas >= {TARGET_SPEEDUP}x the answers/s of one unless both cores are saturated"
    )
    return "\n".join(lines)


async def main(url: str, ops: int, in_flight: int, levels: Sequence[int], workers: str) -> int:
    rows: list[Row] = []
    sandbox = await SandboxProcess.start()
    try:
        async with private_schema(url) as schema:
            store = await open_store(url, schema=schema)
            try:
                with tempfile.TemporaryDirectory(prefix="cs-bench-") as tmp:
                    data = Path(tmp)
                    store_settings = {"url": url, "schema": schema, "pool_size": POOL_SIZE}
                    config = data / "countersign.toml"
                    # port 0 is a placeholder: every bot gets its own with --port
                    config.write_text(
                        toml_document(
                            settings_data(
                                sandbox, data, 0, {**EXECUTION, "workers": workers}, store_settings
                            )
                        )
                    )
                    async with aiohttp.ClientSession(
                        connector=aiohttp.TCPConnector(limit=0)
                    ) as http:
                        for count in levels:
                            async with running_bots(http, sandbox, config, count, data) as bots:
                                venue = data / "venue.db"
                                rows.append(
                                    await run_level(
                                        http, sandbox, store, venue, bots, ops, in_flight
                                    )
                                )
            finally:
                await store.close()
    finally:
        await sandbox.stop()
    print(table(rows, ops, in_flight, schema), flush=True)
    bad = any(r.duplicate_claims or r.duplicate_submits or r.unexecuted for r in rows)
    return 1 if bad or any(r.clicks.failed for r in rows) else 0


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ops", type=int, default=100, help="operations clicked per level")
    parser.add_argument("--in-flight", type=int, default=50, help="clickers in flight")
    parser.add_argument("--replicas", default="1,2,3", help="comma-separated bot counts")
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL, help="postgresql+asyncpg:// URL")
    parser.add_argument(
        "--workers",
        choices=("inline", "process"),
        default="inline",
        help="each bot's [execution] workers; inline by default: the K bots stand for K "
        "hosts, and a child each would put 2K interpreters on this machine's cores",
    )
    args = parser.parse_args()
    levels = [int(x) for x in args.replicas.split(",") if x.strip()]
    if args.ops < 1 or args.in_flight < 1 or not levels or min(levels) < 1:
        parser.error("--ops, --in-flight and every --replicas count must be at least 1")
    logging.basicConfig(level=logging.ERROR)
    sys.exit(asyncio.run(main(args.pg_url, args.ops, args.in_flight, levels, args.workers)))


if __name__ == "__main__":
    cli()
