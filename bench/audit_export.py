"""`countersign audit export` and `audit verify FILE` in bounded memory (issue 35): the peak
RSS of each process at a few chain lengths, side by side. Bounded means the peak does not
grow with the chain: a page of entries is in memory at a time, never the chain.

Each length gets a store of its own with that many audit entries (written in SQL, a few
operations' worth of events each, then linked by the chainer's own code); the real CLI
exports it (JSON lines, then CSV) and verifies the JSON file; each process's peak RSS is its
own high-water mark (`VmHWM` in /proc, read until it exits).

    .venv/bin/python bench/audit_export.py [--backend sqlite|postgresql] [--n 10000 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert, text

from store import AuditChain, AuditRow, create_engine, open_store

PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
CLI = [sys.executable, "-m", "bot.cli"]
EVENTS = (  # one operation's life, as the audit log says it
    ("proposed", None, "awaiting_confirmation"),
    ("card_sent", None, None),
    ("confirmed", "awaiting_confirmation", "claimed"),
    ("dispatching", "claimed", "dispatching"),
    ("outcome", "dispatching", "outcome_observed"),
)
INSERT_BATCH = 5_000


async def grown(url: str, schema: str | None, n: int) -> None:
    """A store whose audit chain is `n` linked entries."""
    store = await open_store(url, schema=schema)
    try:
        start = datetime(2026, 1, 1, tzinfo=UTC)
        rows = [
            {
                "operation_id": f"op-{i // len(EVENTS):08d}",
                "at": start + timedelta(seconds=i),
                "actor": "ou_alice" if i % len(EVENTS) == 2 else "system",
                "event": EVENTS[i % len(EVENTS)][0],
                "from_state": EVENTS[i % len(EVENTS)][1],
                "to_state": EVENTS[i % len(EVENTS)][2],
                "reason_code": None,
            }
            for i in range(n)
        ]
        for first in range(0, n, INSERT_BATCH):
            async with store.engine.begin() as conn:
                await conn.execute(insert(AuditRow), rows[first : first + INSERT_BATCH])
        chain = AuditChain(store)
        while await chain.unlinked():
            await chain.link()
        assert (await chain.head())[0] == n
    finally:
        await store.close()


def peak_rss_mb(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Run `argv`; (seconds, its peak RSS in MB, exit code). The peak is the process's own
    high-water mark (VmHWM), read until it exits: a child's rusage would count the RSS of the
    parent it was forked from."""
    began = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    peak_kb = 0
    while process.poll() is None:
        with contextlib.suppress(OSError, ValueError, IndexError):  # gone, or a zombie
            status = Path(f"/proc/{process.pid}/status").read_text(encoding="utf-8")
            peak_kb = max(peak_kb, int(status.split("VmHWM:")[1].split()[0]))
        time.sleep(0.02)
    return time.perf_counter() - began, peak_kb / 1024, process.returncode


def config_file(directory: Path, url: str, schema: str | None) -> Path:
    path = directory / "countersign.toml"
    schema_line = f'schema = "{schema}"\n' if schema else ""
    path.write_text(f'[store]\nurl = "{url}"\n{schema_line}', encoding="utf-8")
    return path


async def drop_schema(schema: str) -> None:
    engine = create_engine(PG_URL)
    async with engine.begin() as conn:  # a bench: a failure here ends the run anyway
        await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    await engine.dispose()


async def migrated_schema(schema: str) -> None:
    from store import upgrade

    await drop_schema(schema)
    engine = create_engine(PG_URL, schema=schema)
    try:
        await upgrade(engine, schema=schema)
    finally:
        await engine.dispose()


def measure(backend: str, n: int, directory: Path) -> list[tuple[str, float, float, int]]:
    schema: str | None = None
    if backend == "postgresql":
        schema = f"cs_bench_audit_{n}"
        asyncio.run(migrated_schema(schema))
        url = PG_URL
    else:
        url = f"sqlite+aiosqlite:///{directory / f'store-{n}.db'}"
    try:
        asyncio.run(grown(url, schema, n))
        config = str(config_file(directory, url, schema))
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        jsonl, csv = directory / f"audit-{n}.jsonl", directory / f"audit-{n}.csv"
        figures = []
        for what, argv in (
            ("export jsonl", ["audit", "export", "--out", str(jsonl), "--config", config]),
            (
                "export csv",
                ["audit", "export", "--format", "csv", "--out", str(csv), "--config", config],
            ),
            ("verify FILE", ["audit", "verify", str(jsonl)]),
            ("verify --store", ["audit", "verify", "--store", "--config", config]),
        ):
            seconds, peak, code = peak_rss_mb([*CLI, *argv], env)
            assert code == 0, f"{what} exited {code}"
            figures.append((what, seconds, peak, n))
        lines = sum(1 for _ in jsonl.open(encoding="utf-8"))
        assert lines == n, f"the export holds {lines} lines, the chain {n}"
        return figures
    finally:
        if schema is not None:
            asyncio.run(drop_schema(schema))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        rows = [row for n in args.n for row in measure(args.backend, n, Path(temporary))]
    print(f"backend: {args.backend}")
    print(f"{'command':16} {'entries':>9} {'seconds':>8} {'peak RSS MB':>12}")
    for what, seconds, peak, n in rows:
        print(f"{what:16} {n:>9} {seconds:>8.2f} {peak:>12.1f}")
    by_command: dict[str, list[float]] = {}
    for what, _, peak, _ in rows:
        by_command.setdefault(what, []).append(peak)
    smallest, largest = min(args.n), max(args.n)
    for what, peaks in by_command.items():
        print(
            f"{what}: peak at {largest} entries is {peaks[-1] / peaks[0]:.2f}x "
            f"the peak at {smallest} (bounded: about 1x)"
        )


if __name__ == "__main__":
    main()
