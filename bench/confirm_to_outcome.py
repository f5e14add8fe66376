"""Confirm -> outcome: how long from a click to the executor starting and to the final card.

For 1, 10 and 100 operations confirmed at once (each its own order and card), this prints
click -> executor start and click -> final card patched, p50/p99, through the real path: the
sandbox (in its own process, bench/sandbox_process.py) pushes each click over the long
connection to `bot.app.server.serve` (in this process, lark mode ws, SQLite in a temporary
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
        [--workers inline|process] [--venue sim|hyperliquid]

`--venue hyperliquid` also starts hlsandbox (the local Hyperliquid) in this process, adds a
funded account on it to the bot's config, and runs each level (default: 100) on the simulated
venue and then on the emulator, in the same run and the same bot, printing the figures side
by side with the venue request weight the emulator charged (Hyperliquid allows 1200 per
minute per IP; `--hl-ip-limit` raises the emulator's limit, and the output says so).

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
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import aiohttp
from sqlalchemy import select

import bot.app.demo
from bot.app.server import serve
from bot.config import parse, resolve
from store import AuditRow, CardDeliveryRow, OperationRow, Store, open_store

if not hasattr(bot.app.demo, "order_payload"):  # moved; callback_ack.py still imports it there
    from workers.domains.finance.demo import order_payload

    bot.app.demo.order_payload = order_payload  # type: ignore[attr-defined]

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling bench
# the repo's own packages, last: an editable install made before hlsandbox/ existed lacks it
sys.path.append(str(Path(__file__).resolve().parent.parent))
from callback_ack import (
    CONNECT_DEADLINE_S,
    ORDER,
    TOKEN,
    bot_environ,
    click_level,
    free_port,
    offered_cards,
    settings_data,
)
from clickers import percentile
from hl_venue import HL_ORDER, HlBenchVenue
from outcome_rows import Row, print_table
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
    http: aiohttp.ClientSession,
    sandbox: SandboxProcess,
    bot_url: str,
    store_url: str,
    count: int,
    hl: HlBenchVenue | None = None,
) -> Row:
    """One level on the simulated venue, or on the emulator when `hl` is given (its request
    weight counted from the proposals to the last card)."""
    mark = len(hl.weights.charged) if hl is not None else 0
    kinds = len(hl.weights.kinds) if hl is not None else 0
    refused_before = hl.weights.refused if hl is not None else 0
    cards = await offered_cards(http, bot_url, count, ORDER if hl is None else HL_ORDER, TOKEN)
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
        if hl is not None:
            print(f"emulator /info weight by type: {hl.weights.by_kind(kinds)}", flush=True)
    seconds = time.perf_counter() - started
    if len(start_ms) != count or len(card_ms) != count:
        raise RuntimeError(f"{count} operations: {len(start_ms)} starts, {len(card_ms)} cards")
    row = Row(
        count,
        percentile(start_ms, 0.5),
        percentile(start_ms, 0.99),
        percentile(card_ms, 0.5),
        percentile(card_ms, 0.99),
        seconds,
    )
    if hl is None:
        return row
    weight, refused = hl.weights.since(mark)
    peak = hl.weights.peak_per_minute(mark)
    return replace(
        row, venue="emulator", weight=weight, peak=peak, refused=refused - refused_before
    )


async def main(
    levels: Sequence[int],
    concurrency: int = CONCURRENCY,
    workers: str = "inline",
    card_lock_ms: int | None = None,
    venue: str = "sim",
    hl_ip_limit: int | None = None,
) -> int:
    sandbox = await SandboxProcess.start()
    hl = await HlBenchVenue.start(free_port(), hl_ip_limit) if venue == "hyperliquid" else None
    rows: list[Row] = []
    lock = "the sandbox's default" if card_lock_ms is None else f"{card_lock_ms} ms"
    try:
        with tempfile.TemporaryDirectory(prefix="cs-bench-") as tmp:
            port = free_port()
            execution = {**EXECUTION, "concurrency": concurrency, "workers": workers}
            data = settings_data(sandbox, Path(tmp), port, execution)
            environ = bot_environ(sandbox)
            if hl is not None:
                data = hl.add_to(data, poll_s=EXECUTION["venue_tick_s"])
                environ |= hl.environ()
                os.environ.update(hl.environ())  # the venue opens with the process's environment
            config = resolve(parse(data), environ)
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
                    if hl is not None:
                        await run_level(http, sandbox, bot_url, store_url, 5, hl)
                    for count in levels:
                        print(f"{count} operations confirmed at once ...", flush=True)
                        rows.append(await run_level(http, sandbox, bot_url, store_url, count))
                        if hl is not None:
                            await hl.quiet_minute()
                            print(f"{count} on the emulator ...", flush=True)
                            row = await run_level(http, sandbox, bot_url, store_url, count, hl)
                            rows.append(row)
            finally:
                stop.set()
                await asyncio.wait_for(bot, 60)
    finally:
        logging.getLogger("Lark").setLevel(logging.CRITICAL)
        await sandbox.stop()
        if hl is not None:
            await hl.stop()
    raised_to = hl.raised_to if hl is not None else None
    print_table(rows, concurrency, workers, lock, raised_to, weights=hl is not None)
    return 0


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--levels",
        help="operations confirmed at once (default 1,10,100; with --venue hyperliquid 100)",
    )
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
    parser.add_argument(
        "--venue",
        choices=("sim", "hyperliquid"),
        default="sim",
        help="hyperliquid: each level on the simulated venue and then on hlsandbox, side by side",
    )
    parser.add_argument(
        "--hl-ip-limit",
        type=int,
        help="raise hlsandbox's per-IP weight limit (default: Hyperliquid's 1200 per minute)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    default_levels = "100" if args.venue == "hyperliquid" else "1,10,100"
    levels = [int(x) for x in (args.levels or default_levels).split(",") if x.strip()]
    code = asyncio.run(
        main(
            levels,
            args.concurrency,
            args.workers,
            args.card_lock_ms,
            args.venue,
            args.hl_ip_limit,
        )
    )
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    cli()
