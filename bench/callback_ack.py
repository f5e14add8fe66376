"""Click -> answer through the sandbox: the real bot against a bare lark-oapi handler (the floor).

For 1, 10 and 100 concurrent clickers, each clicking Confirm on a DISTINCT card through the
sandbox control API (`POST /sandbox/api/messages/{id}/click`), this prints the callback's
push -> answer latency p50/p99 as the sandbox measures it (what Lark would see) and answers/s.

* bot: the sandbox and `bot.server.serve` in this process (the bot's lark-oapi ws client in
  its own thread, as in production), lark mode ws, a SQLite store in a temporary directory.
  Operations are proposed through the HTTP API and their cards posted by the bot before the
  clock starts. Every click must come back with the success toast and the card (else it
  counts under "late" (a "processing" toast: the claim took over 2 s) or "failed").
* floor: after the bot has stopped (one lark ws client per process), an unmodified
  lark-oapi `ws.Client` whose card.action.trigger handler returns a constant toast, on cards
  put straight into the sandbox state. Lark itself is not faster than this.

The ratio column is bot/floor of p50, p99 and answers/s per level. The sandbox's 5 messages/s
per chat limit is lifted for the run: posting hundreds of cards is setup, not what is measured.

    .venv/bin/python bench/callback_ack.py [--clicks N] [--levels 1,10,100]

The floor's SDK thread has no stop(), so the script ends with os._exit once the table is out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.config import parse, resolve
from bot.demo import order_payload
from bot.sandbox import state as sandbox_state
from bot.sandbox.app import SandboxOptions, build_sandbox
from bot.sandbox.control import HUB_KEY
from bot.sandbox.longconn import ClientConfig
from bot.sandbox.state import DEFAULT_APP_ID, App, Message, SandboxState, default_state
from bot.server import serve

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling bench
from sandbox_push import start_sdk_client

TOKEN = "bench-proposer-token-123456"
OPERATORS = ("ou_alice", "ou_bob")
FLOOR_TOAST: dict[str, Any] = {"toast": {"type": "success", "content": "ok"}}
ORDER: dict[str, Any] = order_payload()
CONNECT_DEADLINE_S = 30.0
CARDS_DEADLINE_S = 300.0


@dataclass(frozen=True)
class Level:
    in_flight: int
    clicks: int
    seconds: float
    p50_ms: float
    p99_ms: float
    late: int
    failed: int

    @property
    def per_s(self) -> float:
        return self.clicks / self.seconds


def percentile(sorted_values: Sequence[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]


# -- the sandbox --------------------------------------------------------------------------------


@dataclass
class Sandbox:
    base_url: str
    state: SandboxState
    app: App
    runner: web.AppRunner

    def connections(self) -> int:
        return self.runner.app[HUB_KEY].longconn.connected(self.app.app_id)


async def start_sandbox() -> Sandbox:
    state = default_state()
    options = SandboxOptions(
        client_config=ClientConfig(reconnect_nonce_s=0, reconnect_interval_s=1)
    )
    runner = web.AppRunner(build_sandbox(state, options), access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return Sandbox(f"http://127.0.0.1:{port}", state, state.apps[DEFAULT_APP_ID], runner)


async def wait_for(check: Any, deadline_s: float, what: str) -> None:
    deadline = time.monotonic() + deadline_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {deadline_s:.0f} s")
        await asyncio.sleep(0.01)


async def click_level(
    http: aiohttp.ClientSession, sandbox: Sandbox, cards: list[str], in_flight: int, answer: str
) -> Level:
    """Click each card once with `in_flight` clickers; `answer` is the toast expected."""
    queue = list(reversed(cards))
    latencies: list[float] = []
    late = failed = 0

    async def clicker(index: int) -> None:
        nonlocal late, failed
        while queue:
            message_id = queue.pop()
            async with http.post(
                f"{sandbox.base_url}/sandbox/api/messages/{message_id}/click",
                json={"operator": OPERATORS[index % 2], "button": "confirm"},
            ) as response:
                reply = await response.json()
            if response.status != 200 or reply.get("status") != "answered":
                failed += 1
                continue
            latencies.append(float(reply["latency_ms"]))
            toast = (reply.get("toast") or {}).get("type")
            if toast == "info":
                late += 1  # "received, processing": the claim took longer than the budget
            elif toast != answer:
                failed += 1

    started = time.perf_counter()
    await asyncio.gather(*(clicker(index) for index in range(in_flight)))
    seconds = time.perf_counter() - started
    latencies.sort()
    if not latencies:
        return Level(in_flight, len(cards), seconds, math.nan, math.nan, late, failed)
    return Level(
        in_flight,
        len(cards),
        seconds,
        percentile(latencies, 0.50),
        percentile(latencies, 0.99),
        late,
        failed,
    )


# -- the bot ------------------------------------------------------------------------------------


def bot_config(
    sandbox: Sandbox, data_dir: Path, port: int, execution: dict[str, Any] | None = None
) -> Any:
    settings = parse(
        {
            "store": {"url": f"sqlite+aiosqlite:///{data_dir / 'bench.db'}", "pool_size": 20},
            "http": {"port": port, "proposer_rate_per_s": 100_000, "proposer_burst": 100_000},
            "lark": {
                "mode": "ws",
                "app_id": sandbox.app.app_id,
                "tenant_keys": [sandbox.app.tenant_key],
                "base_url": sandbox.base_url,
            },
            "audiences": [
                {"name": "ops", "chat_id": "oc_ops", "operators": list(OPERATORS)},
            ],
            "proposers": [{"name": "bench", "token_env": "BENCH_TOKEN"}],
            "domains": {
                "finance": {
                    "accounts": [{"name": "sim-main", "venue": "sim", "budget": "1000000000"}],
                    "venue_path": str(data_dir / "venue.db"),
                }
            },
            "execution": execution or {},
        }
    )
    return resolve(
        settings,
        {
            "BENCH_TOKEN": TOKEN,
            "COUNTERSIGN_LARK_APP_SECRET": sandbox.app.app_secret,
            "COUNTERSIGN_LARK_ENCRYPT_KEY": sandbox.app.encrypt_key,
            "COUNTERSIGN_LARK_VERIFICATION_TOKEN": sandbox.app.verification_token,
        },
    )


async def offered_cards(http: aiohttp.ClientSession, bot_url: str, count: int) -> list[str]:
    """Propose `count` orders; the card message ids once the bot has posted every card."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    run = f"{os.getpid()}-{time.monotonic_ns()}"

    async def propose(index: int) -> None:
        body = {
            "request_id": f"bench-{run}-{index}",
            "kind": "finance.order",
            "payload": ORDER,
            "audience": "ops",
            "expires_in_s": 3600,
        }
        async with http.post(f"{bot_url}/api/v1/operations", json=body, headers=auth) as r:
            if r.status != 201:
                raise RuntimeError(f"proposal refused: {r.status} {await r.text()}")

    for start in range(0, count, 50):
        await asyncio.gather(*(propose(i) for i in range(start, min(count, start + 50))))

    deadline = time.monotonic() + CARDS_DEADLINE_S
    while True:
        cards: list[str] = []
        cursor = ""
        while True:
            query = "state=awaiting_confirmation&limit=50" + (f"&cursor={cursor}" if cursor else "")
            async with http.get(f"{bot_url}/api/v1/operations?{query}", headers=auth) as r:
                page = await r.json()
            cards += [item["card"]["message_id"] for item in page["items"]]
            if not page["has_more"]:
                break
            cursor = page["next_cursor"]
        if len(cards) == count:
            return cards
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(cards)} of {count} cards offered")
        await asyncio.sleep(0.25)


async def cards_settled(http: aiohttp.ClientSession, bot_url: str) -> None:
    """Wait until every card shows its newest version (the bot records that off the ack path)."""
    deadline = time.monotonic() + CARDS_DEADLINE_S
    while True:
        async with http.get(f"{bot_url}/readyz") as response:
            outbox = (await response.json())["components"]["outbox"]
        if outbox.get("card_backlog") == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"card backlog still {outbox.get('card_backlog')}")
        await asyncio.sleep(0.1)


async def bench_bot(
    http: aiohttp.ClientSession, sandbox: Sandbox, clicks: int, levels: Sequence[int], warmup: int
) -> list[Level]:
    with tempfile.TemporaryDirectory(prefix="cs-bench-") as tmp:
        port = free_port()
        config = bot_config(sandbox, Path(tmp), port)
        stop = asyncio.Event()
        ready = asyncio.Event()
        bot = asyncio.create_task(serve(config, stop=stop, on_ready=lambda _url: ready.set()))
        try:
            await asyncio.wait_for(ready.wait(), CONNECT_DEADLINE_S)
            await wait_for(lambda: sandbox.connections() == 1, CONNECT_DEADLINE_S, "bot connect")
            bot_url = f"http://127.0.0.1:{port}"
            total = warmup + clicks * len(levels)
            print(f"bot: proposing {total} orders and waiting for their cards ...", flush=True)
            cards = await offered_cards(http, bot_url, total)
            await click_level(http, sandbox, cards[:warmup], 10, "success")
            results = []
            offset = warmup
            for in_flight in levels:
                batch = cards[offset : offset + clicks]
                offset += clicks
                results.append(await click_level(http, sandbox, batch, in_flight, "success"))
            await cards_settled(http, bot_url)
            return results
        finally:
            stop.set()
            await asyncio.wait_for(bot, 60)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# -- the floor ----------------------------------------------------------------------------------


def start_floor_client(app: App, domain: str) -> threading.Thread:
    """A bare lark-oapi ws.Client answering every callback with a constant toast."""
    return start_sdk_client(app, domain, FLOOR_TOAST)


def floor_cards(state: SandboxState, app: App, count: int) -> list[str]:
    """Cards with a Confirm button, as if the app had sent them (no bot involved)."""
    card = {
        "schema": "2.0",
        "header": {"template": "orange", "title": {"tag": "plain_text", "content": "Confirm"}},
        "body": {
            "elements": [
                {
                    "tag": "button",
                    "element_id": "confirm",
                    "text": {"tag": "plain_text", "content": "Confirm"},
                    "behaviors": [{"type": "callback", "value": {"action": "confirm"}}],
                }
            ]
        },
    }
    content = json.dumps(card)
    ids = []
    for _ in range(count):
        message = Message(
            message_id=state.new_message_id(),
            chat_id="oc_ops",
            msg_type="interactive",
            content=content,
            sender_type="app",
            sender_id=app.app_id,
            created_at=state.now().isoformat(),
        )
        state.add_message(message, app.app_id)
        ids.append(message.message_id)
    return ids


async def bench_floor(
    http: aiohttp.ClientSession, sandbox: Sandbox, clicks: int, levels: Sequence[int], warmup: int
) -> list[Level]:
    start_floor_client(sandbox.app, sandbox.base_url)
    await wait_for(lambda: sandbox.connections() == 1, CONNECT_DEADLINE_S, "floor client connect")
    cards = floor_cards(sandbox.state, sandbox.app, warmup + clicks * len(levels))
    await click_level(http, sandbox, cards[:warmup], 10, "success")
    results = []
    offset = warmup
    for in_flight in levels:
        batch = cards[offset : offset + clicks]
        offset += clicks
        results.append(await click_level(http, sandbox, batch, in_flight, "success"))
    return results


# -- main ---------------------------------------------------------------------------------------


def table(bot: Sequence[Level], floor: Sequence[Level], clicks: int) -> str:
    lines = [
        f"click -> answer through the sandbox (push -> ack as the sandbox measures it), "
        f"{clicks} clicks per level, each on its own card",
        f"{'in_flight':>9} | {'who':<5} {'p50_ms':>8} {'p99_ms':>8} {'ans/s':>8} "
        f"{'late':>5} {'failed':>6}",
    ]
    for b, f in zip(bot, floor, strict=True):
        for who, r in (("bot", b), ("floor", f)):
            lines.append(
                f"{r.in_flight:>9} | {who:<5} {r.p50_ms:>8.1f} {r.p99_ms:>8.1f} {r.per_s:>8.0f} "
                f"{r.late:>5} {r.failed:>6}"
            )
        lines.append(
            f"{'':>9} | {'ratio':<5} {b.p50_ms / f.p50_ms:>8.1f} {b.p99_ms / f.p99_ms:>8.1f} "
            f"{b.per_s / f.per_s:>8.2f}   (bot/floor)"
        )
    return "\n".join(lines)


async def main(clicks: int, levels: Sequence[int], warmup: int) -> int:
    # Posting hundreds of cards into one chat is setup, not what is measured.
    sandbox_state.CHAT_SEND_LIMIT_PER_S = 1_000_000
    sandbox = await start_sandbox()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        bot = await bench_bot(http, sandbox, clicks, levels, warmup)
        print("bot done; floor: a bare lark-oapi ws client answering a constant toast", flush=True)
        floor = await bench_floor(http, sandbox, clicks, levels, warmup)
    print(table(bot, floor, clicks))
    logging.getLogger("Lark").setLevel(logging.CRITICAL)  # it logs the close as an error
    await sandbox.runner.cleanup()
    return 1 if any(r.failed for r in (*bot, *floor)) else 0


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clicks", type=int, default=200, help="clicks per level")
    parser.add_argument("--levels", default="1,10,100", help="comma-separated clickers in flight")
    parser.add_argument("--warmup", type=int, default=20, help="clicks before the first level")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    logging.basicConfig(level=logging.ERROR)
    code = asyncio.run(main(args.clicks, levels, args.warmup))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the floor's SDK thread has no stop(); don't wait on it at exit


if __name__ == "__main__":
    cli()
