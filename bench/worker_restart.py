"""A worker process killed by SIGKILL: how long until every order it had in hand is executed.

`bot.server.serve` runs in this process (lark mode ws against the sandbox in its own
process, bench/sandbox_process.py; SQLite in a temporary directory) with its workers in a
child process (`[execution] workers = "process"`); the simulated venue answers after
`--latency-ms`, so the executor's passes are in flight. N orders (20) are proposed and
confirmed; once the executor holds leases on some of them, the child is killed with SIGKILL.

Printed: SIGKILL -> the restarted child reporting in, and SIGKILL -> all N executed
(every outcome filled), beside the restart backoff (the parent's first wait) and the
executor's lease (2 * submit_timeout_s + 3): the parent releases the dead child's leases at
once, so the second figure should be near the first plus one pass, far below the lease. Also
the rows the parent released and the venue's orders per operation (must all be 1).

    .venv/bin/python bench/worker_restart.py [--orders 20] [--latency-ms 500]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from sqlalchemy import select

from bot.api.wire import OperationPage
from bot.app.server import serve
from bot.app.worker_process import FIRST_RESTART_S
from bot.config import parse, resolve
from store import OperationRow, open_store
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling bench
from callback_ack import (
    CONNECT_DEADLINE_S,
    TOKEN,
    bot_environ,
    click_level,
    free_port,
    offered_cards,
    settings_data,
)
from sandbox_process import SandboxProcess, wait_until

SUBMIT_TIMEOUT_S = 10.0  # the default: the executor's lease is 2 * 10 + 3 = 23 s
LEASE_S = 2 * SUBMIT_TIMEOUT_S + 3
SETTLE_DEADLINE_S = 300.0


async def executor_report(http: aiohttp.ClientSession, bot_url: str) -> dict[str, Any]:
    async with http.get(f"{bot_url}/readyz") as response:
        report: dict[str, Any] = (await response.json())["components"]["executor"]
        return report


async def filled(http: aiohttp.ClientSession, bot_url: str) -> list[str]:
    """Ids of the operations whose outcome is filled (all fit on one page of 50)."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with http.get(f"{bot_url}/api/v1/operations?limit=50", headers=auth) as response:
        page = OperationPage.model_validate(await response.json())
    return [i.id for i in page.items if i.outcome is not None and i.outcome.status == "filled"]


async def venue_orders(venue_path: Path, ids: list[str]) -> list[int]:
    """How many times the venue saw each operation's client id."""
    async with await SimVenue.open(venue_path, create=False) as venue:
        return [
            order.submit_count if (order := await venue.lookup(client_id_for(i))) else 0
            for i in ids
        ]


async def run(orders: int, latency_ms: int) -> int:
    sandbox = await SandboxProcess.start()
    try:
        with tempfile.TemporaryDirectory(prefix="cs-bench-") as tmp:
            port, data_dir = free_port(), Path(tmp)
            execution = {"workers": "process", "poll_s": 0.2, "submit_timeout_s": SUBMIT_TIMEOUT_S}
            data = settings_data(sandbox, data_dir, port, execution)
            data["domains"]["finance"]["sim_faults"] = f"latency_ms={latency_ms}"
            config = resolve(parse(data), bot_environ(sandbox))
            stop, ready = asyncio.Event(), asyncio.Event()
            bot = asyncio.create_task(serve(config, stop=stop, on_ready=lambda _url: ready.set()))
            store = await open_store(config.settings.store.url)
            try:
                async with aiohttp.ClientSession() as http:
                    await asyncio.wait_for(ready.wait(), CONNECT_DEADLINE_S)
                    await sandbox.wait_connections(http, 1, "the bot's long connection")
                    return await measure(
                        http,
                        f"http://127.0.0.1:{port}",
                        sandbox,
                        store,
                        orders,
                        data_dir,
                        latency_ms,
                    )
            finally:
                await store.close()
                stop.set()
                await asyncio.wait_for(bot, 60)
    finally:
        logging.getLogger("Lark").setLevel(logging.CRITICAL)
        await sandbox.stop()


async def measure(
    http: aiohttp.ClientSession,
    bot_url: str,
    sandbox: SandboxProcess,
    store: Any,
    orders: int,
    data_dir: Path,
    latency_ms: int,
) -> int:
    async def child_running(starts: int) -> bool:
        report = await executor_report(http, bot_url)
        return bool(report["state"] == "running" and report["starts"] == starts)

    await wait_until(lambda: child_running(1), CONNECT_DEADLINE_S, "the worker process")
    cards = await offered_cards(http, bot_url, orders)
    level = await click_level(sandbox, cards, 4, "success")
    if level.failed:
        raise RuntimeError(f"{level.failed} of {orders} clicks not answered with success")

    async def leased() -> bool:  # due this far ahead: only the executor's lease puts it there
        beyond = store.clock().timestamp() + LEASE_S / 2
        query = select(OperationRow.exec_due_at).where(OperationRow.exec_due_at.is_not(None))
        async with store.read() as conn:
            dues = (await conn.execute(query)).scalars().all()
        return any(due.timestamp() > beyond for due in dues)

    await wait_until(leased, SETTLE_DEADLINE_S, "a lease held by the executor")
    pid = (await executor_report(http, bot_url))["pid"]
    pending = orders - len(await filled(http, bot_url))
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    await wait_until(lambda: child_running(2), SETTLE_DEADLINE_S, "the restarted worker process")
    restarted = time.monotonic() - killed

    async def all_filled() -> bool:
        return len(await filled(http, bot_url)) == orders

    await wait_until(all_filled, SETTLE_DEADLINE_S, f"all {orders} orders filled")
    executed = time.monotonic() - killed
    report = await executor_report(http, bot_url)
    submits = await venue_orders(data_dir / "venue.db", await filled(http, bot_url))
    print(
        f"worker process SIGKILL with {orders} confirmed orders ({pending} not yet executed, "
        f"venue latency {latency_ms} ms per call; SQLite, sandbox over ws)"
    )
    print(f"  SIGKILL -> restarted child reporting in : {restarted:6.2f} s")
    print(f"  SIGKILL -> all {orders} orders executed     : {executed:6.2f} s")
    print(f"  restart backoff (first)                 : {FIRST_RESTART_S:6.2f} s")
    print(f"  executor lease                          : {LEASE_S:6.2f} s")
    print(f"  rows released by the parent             : {report['leases_released']}")
    once = all(count == 1 for count in submits) and len(submits) == orders
    print(
        f"  venue orders per operation              : {sorted(set(submits))} ({'once each' if once else 'NOT ONCE'})"
    )
    return 0 if once else 1


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--orders", type=int, default=20, help="confirmed orders (default 20)")
    parser.add_argument("--latency-ms", type=int, default=500, help="venue latency per call")
    args = parser.parse_args()
    sys.exit(asyncio.run(run(args.orders, args.latency_ms)))


if __name__ == "__main__":
    cli()
