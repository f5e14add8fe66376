"""Confirm -> outcome: how long from a click to the executor starting and to the final card.

For 1, 10 and 100 operations confirmed at once (each its own order and card), this prints
click -> executor start and click -> final card patched, p50/p99, through the real path: the
sandbox (in its own process, bench/sandbox_process.py) pushes each click over the long
connection to `bot.server.serve` (in this process, lark mode ws, SQLite in a temporary
directory, the simulated venue in its own file); the
executor preflights, reserves, submits (a limit buy at the mark fills at once) and records
the outcome; the card worker patches the original card.

* click: when the control API was asked to click (wall clock, before the push); all at once,
  from a process of their own (bench/clickers.py), as real clicks come from Lark.
* executor start: the audit row of the operation's first execution step (preflight).
* final card patched: the card delivery that showed the operation's final version.

Before the table, where the time went at each level: click -> claim -> each execution step
-> the outcome -> the final card, from the audit rows (p50 / p90 / max).

The issue's targets are printed beside the figures: at 100 operations, executor start
p99 <= 0.5 s and final card p99 <= 1 s.

    .venv/bin/python bench/confirm_to_outcome.py [--levels 1,10,100] [--concurrency 8]
        [--workers inline|process]

`--concurrency` is the executor's window (`[execution] concurrency`, passes in flight);
`--workers process` runs the bot's workers in a second process (`[execution] workers`).
`--card-lock-ms` is how long after a click's answer the sandbox refuses patches of that card
("card action is lock", 230099/11310). Lark documents the lock but not its length; the
sandbox assumes 1000 ms (its default here too). The final card cannot come sooner than that
after the answer, so 0 shows countersign's own part of the time.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import aiohttp
from sqlalchemy import select

from bot.server import serve
from store.authority import Store
from store.models import AuditRow, CardDeliveryRow, OperationRow
from store.opening import open_store

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling bench
from callback_ack import (
    CONNECT_DEADLINE_S,
    bot_config,
    click_level,
    free_port,
    offered_cards,
)
from clickers import percentile
from sandbox_process import SandboxProcess

SETTLE_DEADLINE_S = 300.0
# an operation's way from the click to its final card: audit events between the two
STAGES = (
    "click",
    "confirmed",
    "execution:preflight",
    "execution:reserved",
    "execution:dispatching",
    "outcome:filled",
    "card",
)
CONCURRENCY = 8  # executor passes in flight (`[execution] concurrency`; its default is 4)
EXECUTION: dict[str, float] = {"poll_s": 0.2, "venue_tick_s": 0.5, "concurrency": CONCURRENCY}
# The targets, at TARGET_LEVEL operations confirmed at once.
TARGET_LEVEL = 100
TARGET_START_P99_MS = 500.0
TARGET_CARD_P99_MS = 1000.0


@dataclass(frozen=True)
class Row:
    operations: int
    start_p50: float
    start_p99: float
    card_p50: float
    card_p99: float
    seconds: float


async def measure(store: Store, clicked: Mapping[str, datetime]) -> tuple[list[float], list[float]]:
    """Wait until the operation of every clicked card (message id -> click time) is executed
    and its card shows its final version; click -> executor start and click -> final card
    patched, each sorted, in ms."""
    cards = list(clicked)
    deadline = time.monotonic() + SETTLE_DEADLINE_S
    while True:
        async with store.read() as conn:
            rows = (
                await conn.execute(
                    select(
                        OperationRow.id,
                        OperationRow.version,
                        OperationRow.card_version,
                        OperationRow.exec_due_at,
                        OperationRow.execution_state,
                        OperationRow.card_message_id,
                    ).where(OperationRow.card_message_id.in_(cards))
                )
            ).all()
        done = [
            r
            for r in rows
            if r.execution_state == "completed"
            and r.exec_due_at is None
            and r.card_version == r.version
        ]
        if len(done) == len(cards):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(done)} of {len(cards)} operations settled")
        await asyncio.sleep(0.05)
    ids = [r.id for r in rows]
    final = {r.id: r.version for r in rows}
    clicked_at = {r.id: clicked[r.card_message_id] for r in rows}
    async with store.read() as conn:
        starts = (
            await conn.execute(
                select(AuditRow.operation_id, AuditRow.at).where(
                    AuditRow.operation_id.in_(ids), AuditRow.event == "execution:preflight"
                )
            )
        ).all()
        patches = (
            await conn.execute(
                select(
                    CardDeliveryRow.operation_id, CardDeliveryRow.version, CardDeliveryRow.at
                ).where(CardDeliveryRow.operation_id.in_(ids), CardDeliveryRow.ok.is_(True))
            )
        ).all()
        steps = (
            await conn.execute(
                select(AuditRow.operation_id, AuditRow.event, AuditRow.at).where(
                    AuditRow.operation_id.in_(ids), AuditRow.event.in_(STAGES[1:-1])
                )
            )
        ).all()
    reached: dict[str, dict[str, datetime]] = {i: {"click": clicked_at[i]} for i in ids}
    for step in steps:
        reached[step.operation_id].setdefault(step.event, step.at)
    for patch in patches:
        if patch.version == final[patch.operation_id]:
            reached[patch.operation_id]["card"] = patch.at
    print(stage_table(reached), flush=True)
    start_ms = sorted(
        (row.at - clicked_at[row.operation_id]).total_seconds() * 1000 for row in starts
    )
    card_ms = sorted(
        (row.at - clicked_at[row.operation_id]).total_seconds() * 1000
        for row in patches
        if row.version == final[row.operation_id]
    )
    return start_ms, card_ms


def stage_table(reached: Mapping[str, Mapping[str, datetime]]) -> str:
    """Where the time went: each stage's p50 / p90 / max across the operations, in ms."""
    lines = [f"{'stage':>46} | {'p50':>7} {'p90':>7} {'max':>7}"]
    for before, after in itertools.pairwise(STAGES):
        spans = sorted(
            (times[after] - times[before]).total_seconds() * 1000
            for times in reached.values()
            if before in times and after in times
        )
        if spans:
            lines.append(
                f"{before + ' -> ' + after:>46} | {percentile(spans, 0.5):7.0f} "
                f"{percentile(spans, 0.9):7.0f} {spans[-1]:7.0f}"
            )
    return "\n".join(lines)


async def run_level(
    http: aiohttp.ClientSession, sandbox: SandboxProcess, bot_url: str, store_url: str, count: int
) -> Row:
    cards = await offered_cards(http, bot_url, count)
    print(f"{count} cards shown; clicking", flush=True)
    clicked: dict[str, datetime] = {}
    started = time.perf_counter()
    level = await click_level(sandbox, cards, count, "success", clicked)
    if level.failed:
        raise RuntimeError(f"{level.failed} of {count} clicks not answered with success")
    store = await open_store(store_url)
    try:
        start_ms, card_ms = await measure(store, clicked)
    finally:
        await store.close()
    seconds = time.perf_counter() - started
    if len(start_ms) != count or len(card_ms) != count:
        raise RuntimeError(f"{count} operations: {len(start_ms)} starts, {len(card_ms)} cards")
    return Row(
        count,
        percentile(start_ms, 0.5),
        percentile(start_ms, 0.99),
        percentile(card_ms, 0.5),
        percentile(card_ms, 0.99),
        seconds,
    )


def verdict(row: Row) -> str:
    if row.operations != TARGET_LEVEL:
        return ""
    start = "met" if row.start_p99 <= TARGET_START_P99_MS else "MISSED"
    card = "met" if row.card_p99 <= TARGET_CARD_P99_MS else "MISSED"
    return (
        f"start p99 <= {TARGET_START_P99_MS:.0f}ms {start}; "
        f"card p99 <= {TARGET_CARD_P99_MS:.0f}ms {card}"
    )


async def main(
    levels: Sequence[int],
    concurrency: int = CONCURRENCY,
    workers: str = "inline",
    card_lock_ms: int | None = None,
) -> int:
    sandbox = await SandboxProcess.start()
    rows: list[Row] = []
    lock = "the sandbox's default" if card_lock_ms is None else f"{card_lock_ms} ms"
    try:
        with tempfile.TemporaryDirectory(prefix="cs-bench-") as tmp:
            port = free_port()
            execution = {**EXECUTION, "concurrency": concurrency, "workers": workers}
            config = bot_config(sandbox, Path(tmp), port, execution)
            store_url = config.settings.store.url
            stop = asyncio.Event()
            ready = asyncio.Event()
            bot = asyncio.create_task(serve(config, stop=stop, on_ready=lambda _url: ready.set()))
            connector = aiohttp.TCPConnector(limit=0)
            try:
                async with aiohttp.ClientSession(connector=connector) as http:
                    await asyncio.wait_for(ready.wait(), CONNECT_DEADLINE_S)
                    await sandbox.wait_connections(http, 1, "the bot's long connection")
                    if card_lock_ms is not None:
                        faults = {"card_lock_after_answer_ms": card_lock_ms}
                        url = f"{sandbox.base_url}/sandbox/api/faults"
                        async with http.post(url, json=faults) as response:
                            assert response.status == 200, await response.text()
                    bot_url = f"http://127.0.0.1:{port}"
                    await run_level(http, sandbox, bot_url, store_url, 5)  # warm-up
                    for count in levels:
                        print(f"{count} operations confirmed at once ...", flush=True)
                        rows.append(await run_level(http, sandbox, bot_url, store_url, count))
            finally:
                stop.set()
                await asyncio.wait_for(bot, 60)
    finally:
        logging.getLogger("Lark").setLevel(logging.CRITICAL)
        await sandbox.stop()
    print(
        "confirm -> outcome (SQLite, simulated venue, sandbox over ws), latency from the click; "
        f"executor concurrency {concurrency}, workers {workers}; card lock after an answer: "
        f"{lock}"
    )
    print(
        f"{'operations':>10} | {'start p50':>10} {'start p99':>10} | "
        f"{'card p50':>9} {'card p99':>9} | {'all done s':>10}  target"
    )
    for r in rows:
        print(
            f"{r.operations:>10} | {r.start_p50:>8.0f}ms {r.start_p99:>8.0f}ms | "
            f"{r.card_p50:>7.0f}ms {r.card_p99:>7.0f}ms | {r.seconds:>10.2f}  {verdict(r)}"
        )
    print(
        f"targets at {TARGET_LEVEL} operations: executor start p99 <= "
        f"{TARGET_START_P99_MS / 1000:.1f} s, final card patched p99 <= "
        f"{TARGET_CARD_P99_MS / 1000:.0f} s",
        flush=True,
    )
    return 0


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--levels", default="1,10,100", help="operations confirmed at once")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=CONCURRENCY,
        help="executor passes in flight",
    )
    parser.add_argument(
        "--workers",
        choices=("inline", "process"),
        default="process",
        help="the bot's [execution] workers: a second process (run's default) or inline",
    )
    parser.add_argument(
        "--card-lock-ms",
        type=int,
        help="the sandbox's card lock after a click's answer (default: its own, 1000)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    code = asyncio.run(main(levels, args.concurrency, args.workers, args.card_lock_ms))
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    cli()
