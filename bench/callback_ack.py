"""Click -> answer through the sandbox: the real bot against a bare lark-oapi handler (the floor)
and against that handler doing the answer contract's least work.

For 1, 10 and 100 concurrent clickers, each clicking Confirm on a DISTINCT card through the
sandbox control API (`POST /sandbox/api/messages/{id}/click`), this prints the callback's
push -> answer latency p50/p99 as the sandbox measures it (what Lark would see), answers/s,
and the share of answers that were not the definitive one: "processing" (the click is on
record but its claim missed the 2 s budget) and "busy" (not even on record in time).

* sandbox: in its own process (bench/sandbox_process.py), as the real Lark is remote: it
  does not share the bot's interpreter.
* bot: `bot.server.serve` in this process (its lark-oapi ws client in its own thread, as in
  production), lark mode ws, a SQLite store in a temporary directory. The clickers are
  HTTP calls to the sandbox from this process's loop. Operations are proposed through the
  HTTP API and their cards posted by the bot before the clock starts. Every click must come
  back with the success toast and the card, or "processing"/"busy" (counted), else "failed".
* clickers: in a third process (bench/clickers.py), as real clicks come from Lark's users:
  they spend neither the bot's interpreter nor the floor's.
  `--workers process`: the bot's workers (executor, cards, venue) in a second process, as
  `[execution] workers = "process"` does, so the clicks' answers have this interpreter.
* floor: after the bot has stopped (one lark ws client per process), an unmodified
  lark-oapi `ws.Client` in this process whose card.action.trigger handler returns a
  constant toast, on cards the app sent through the sandbox's OpenAPI. Lark itself is not
  faster than this.
* contract: the same SDK client, on cards of its own, doing in its handler the least a
  countersign answer needs: one durable SQLite commit of the click's inbox entry and the
  claim (the store's schema and SQL, raw sqlite3), the card rendered from the row it
  returned, the toast and that card as the answer (bench/contract_floor.py). What the
  contract itself costs on this machine, before any design of ours.

The ratio rows are bot/floor and contract/floor of p50, p99 and answers/s per level, the
first next to the issue's targets: p99 <= 2x the floor's at 10 and 100 in flight, and no
"processing" at 100.

    .venv/bin/python bench/callback_ack.py [--clicks N] [--levels 1,10,100]
        [--workers inline|process] [--pin]

`--pin` keeps the bot (and later the floor's SDK client) on CPU 0 and the sandbox and the
clickers on the other CPUs, so the stand-ins for Lark and its users do not take the bot's
core (on 2 CPUs they otherwise share both with it).

The floor's SDK thread has no stop(), so the script ends with os._exit once the table is out.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp

from bot.api.wire import OperationPage
from bot.app.server import serve
from bot.config import parse, resolve
from cards.strings import text
from workers.domains.finance.demo import order_payload

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling benches
from clickers import STAND_IN_CPUS, Level
from clickers import click_level as click_cards
from contract_floor import ContractHandler, prepare
from sandbox_process import SandboxProcess, post_cards
from sandbox_push import start_sdk_client

TOKEN = "bench-proposer-token-123456"
OPERATORS = ("ou_alice", "ou_bob")
FLOOR_TOAST: dict[str, Any] = {"toast": {"type": "success", "content": "ok"}}
ORDER: dict[str, Any] = order_payload()
CONNECT_DEADLINE_S = 30.0
CARDS_DEADLINE_S = 300.0


# The targets for this bench.
TARGET_P99_RATIO = 2.0
TARGET_LEVELS = (10, 100)
NO_PROCESSING_AT = 100
# The bot's non-definitive answers, told apart by their text in either language.
PROCESSING = {text("toast.processing", "en"), text("toast.processing", "zh")}
BUSY = {text("toast.busy", "en"), text("toast.busy", "zh")}


async def click_level(
    sandbox: SandboxProcess,
    cards: list[str],
    in_flight: int,
    answer: str,
    clicked: dict[str, datetime] | None = None,
) -> Level:
    """Click each card once with `in_flight` clickers, in their own process (bench/clickers.py);
    `answer` is the toast type expected; `clicked`, when given, gets each card's click time.
    The level's `cpu_s` is this process's: the bot's answering side, or the floor's client."""
    cpu_before = time.process_time()
    level = await click_cards(
        sandbox.base_url,
        cards,
        in_flight,
        answer,
        processing=PROCESSING,
        busy=BUSY,
        clicked=clicked,
    )
    return replace(level, cpu_s=time.process_time() - cpu_before)


# -- the bot ------------------------------------------------------------------------------------


def settings_data(
    sandbox: SandboxProcess,
    data_dir: Path,
    port: int,
    execution: dict[str, Any] | None = None,
    store: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The bot's config (what a TOML file holds); SQLite in `data_dir` unless `store` is given."""
    return {
        "store": store or {"url": f"sqlite+aiosqlite:///{data_dir / 'bench.db'}", "pool_size": 20},
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


def bot_environ(sandbox: SandboxProcess) -> dict[str, str]:
    """The secrets the config names, as the bot reads them from its environment."""
    return {
        "BENCH_TOKEN": TOKEN,
        "COUNTERSIGN_LARK_APP_SECRET": sandbox.app.app_secret,
        "COUNTERSIGN_LARK_ENCRYPT_KEY": sandbox.app.encrypt_key,
        "COUNTERSIGN_LARK_VERIFICATION_TOKEN": sandbox.app.verification_token,
    }


def bot_config(
    sandbox: SandboxProcess, data_dir: Path, port: int, execution: dict[str, Any] | None = None
) -> Any:
    settings = parse(settings_data(sandbox, data_dir, port, execution))
    return resolve(settings, bot_environ(sandbox))


async def offered_cards(
    http: aiohttp.ClientSession,
    bot_url: str,
    count: int,
    payload: Mapping[str, Any] = ORDER,
    token: str = TOKEN,
) -> list[str]:
    """Propose `count` orders of `payload`; the card message ids once the bot has posted every
    card (only cards of this batch: earlier ones are confirmed by then)."""
    auth = {"Authorization": f"Bearer {token}"}
    run = f"{os.getpid()}-{time.monotonic_ns()}"

    async def propose(index: int) -> None:
        body = {
            "request_id": f"bench-{run}-{index}",
            "kind": "finance.order",
            "payload": dict(payload),
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
                page = OperationPage.model_validate(await r.json())
            cards += [str(item.card.message_id) for item in page.items]
            if not page.has_more or page.next_cursor is None:
                break
            cursor = page.next_cursor
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
    http: aiohttp.ClientSession,
    sandbox: SandboxProcess,
    clicks: int,
    levels: Sequence[int],
    warmup: int,
    workers: str = "inline",
) -> list[Level]:
    with tempfile.TemporaryDirectory(prefix="cs-bench-") as tmp:
        port = free_port()
        config = bot_config(sandbox, Path(tmp), port, {"workers": workers})
        stop = asyncio.Event()
        ready = asyncio.Event()
        bot = asyncio.create_task(serve(config, stop=stop, on_ready=lambda _url: ready.set()))
        try:
            await asyncio.wait_for(ready.wait(), CONNECT_DEADLINE_S)
            await sandbox.wait_connections(http, 1, "the bot's long connection")
            pin_worker_process()
            bot_url = f"http://127.0.0.1:{port}"
            total = warmup + clicks * len(levels)
            print(f"bot: proposing {total} orders and waiting for their cards ...", flush=True)
            cards = await offered_cards(http, bot_url, total)
            print(f"bot: {total} cards shown; clicking", flush=True)
            await click_level(sandbox, cards[:warmup], 10, "success")
            results = []
            offset = warmup
            for in_flight in levels:
                batch = cards[offset : offset + clicks]
                offset += clicks
                results.append(await click_level(sandbox, batch, in_flight, "success"))
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


FLOOR_CARD: dict[str, Any] = {
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


@dataclass(frozen=True)
class Floors:
    """Per level: the bare SDK's constant toast, and the same client doing the least the
    answer contract needs (bench/contract_floor.py)."""

    bare: list[Level]
    contract: list[Level]


async def bench_floor(
    http: aiohttp.ClientSession,
    sandbox: SandboxProcess,
    clicks: int,
    levels: Sequence[int],
    warmup: int,
) -> Floors:
    """One bare lark-oapi ws.Client (one per process: the SDK's loop is a module global): on
    the contract floor's cards it answers through `ContractHandler`, on the others with a
    constant toast. Each level clicks the bare floor's cards, then the contract floor's."""
    with tempfile.TemporaryDirectory(prefix="cs-contract-") as directory:
        per_floor = warmup + clicks * len(levels)
        bare_cards = await post_cards(sandbox, FLOOR_CARD, per_floor)
        contract_cards = await post_cards(sandbox, FLOOR_CARD, per_floor)
        path = Path(directory) / "contract.db"
        contract = ContractHandler(path, await prepare(path, contract_cards))

        def answer(data: Any) -> dict[str, Any]:
            if contract.owns(str(data.event.context.open_message_id)):
                return contract.answer(data)
            return FLOOR_TOAST

        start_sdk_client(sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url, answer)
        await sandbox.wait_connections(http, 1, "the floor client's long connection")
        await click_level(sandbox, bare_cards[:warmup], 10, "success")
        await click_level(sandbox, contract_cards[:warmup], 10, "success")
        floors = Floors([], [])
        offset = warmup
        for in_flight in levels:
            window = slice(offset, offset + clicks)
            offset += clicks
            floors.bare.append(await click_level(sandbox, bare_cards[window], in_flight, "success"))
            floors.contract.append(
                await click_level(sandbox, contract_cards[window], in_flight, "success")
            )
        if contract.claimed != per_floor:
            raise RuntimeError(f"the contract floor claimed {contract.claimed} of {per_floor}")
        return floors


# -- main ---------------------------------------------------------------------------------------


def verdict(bot: Level, floor: Level) -> str:
    """The issue's targets where they apply to this level."""
    parts = []
    if bot.in_flight in TARGET_LEVELS:
        met = bot.p99_ms <= TARGET_P99_RATIO * floor.p99_ms
        parts.append(f"p99 <= {TARGET_P99_RATIO:.0f}x floor {'met' if met else 'MISSED'}")
    if bot.in_flight == NO_PROCESSING_AT:
        parts.append(f"no processing {'met' if bot.processing == 0 else 'MISSED'}")
    return "; ".join(parts)


def table(bot: Sequence[Level], floors: Floors, clicks: int) -> str:
    lines = [
        f"click -> answer through the sandbox (its own process; push -> ack as it measures "
        f"it), {clicks} clicks per level, each on its own card",
        f"{'in_flight':>9} | {'who':<8} {'p50_ms':>8} {'p99_ms':>8} {'ans/s':>8} "
        f"{'processing':>10} {'busy':>5} {'failed':>6} {'cpu_ms/click':>12}",
    ]
    for b, f, c in zip(bot, floors.bare, floors.contract, strict=True):
        for who, r in (("bot", b), ("floor", f), ("contract", c)):
            lines.append(
                f"{r.in_flight:>9} | {who:<8} {r.p50_ms:>8.1f} {r.p99_ms:>8.1f} {r.per_s:>8.0f} "
                f"{r.share(r.processing):>10} {r.share(r.busy):>5} {r.failed:>6} "
                f"{r.cpu_ms_per_click:>12.2f}"
            )
        for over, name, says in ((b, "bot/floor", verdict(b, f)), (c, "contract/floor", "")):
            lines.append(
                f"{'':>9} | {'ratio':<8} {over.p50_ms / f.p50_ms:>8.1f} "
                f"{over.p99_ms / f.p99_ms:>8.1f} {over.per_s / f.per_s:>8.2f}   ({name})  {says}"
            )
    lines.append(
        f"targets: p99 <= {TARGET_P99_RATIO:.0f}x the floor's p99 at "
        f"{' and '.join(map(str, TARGET_LEVELS))} in flight; "
        f"no 'processing' answer at {NO_PROCESSING_AT}"
    )
    lines.append(
        "floor: the bare SDK answering a constant toast; contract: the same client doing the "
        "least an answer needs (one durable commit of the inbox entry and the claim, the card "
        "rendered from the row it returned; bench/contract_floor.py)"
    )
    lines.append(
        "cpu_ms/click: CPU of the answering process (all its threads) per click; the bot's "
        "worker process is not in it"
    )
    return "\n".join(lines)


def pin_worker_process() -> None:
    """Under --pin, the bot's worker process (`--workers process`) goes to the stand-ins'
    CPUs: it inherited CPU 0 from this process, where it would take the answers' core. In
    production both cores are the bot's; here the second is shared with Lark's stand-ins."""
    cpus = os.environ.get(STAND_IN_CPUS)
    if not cpus:
        return
    for child in Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split():
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if b"bot.app.worker_main" in cmdline:
            os.sched_setaffinity(int(child), {int(cpu) for cpu in cpus.split(",")})


def pin(cpus: int) -> str:
    """The bot (and the floor's SDK client) on CPU 0, the stand-ins for Lark and its users
    (sandbox, clickers) on the others: Lark is remote, so it should not take the bot's core."""
    if cpus < 2:
        raise SystemExit("--pin needs at least 2 CPUs")
    os.environ[STAND_IN_CPUS] = ",".join(str(cpu) for cpu in range(1, cpus))
    os.sched_setaffinity(0, {0})
    return f"pinned: bot and floor on CPU 0; sandbox and clickers on CPU 1-{cpus - 1}"


async def main(clicks: int, levels: Sequence[int], warmup: int, workers: str) -> int:
    sandbox = await SandboxProcess.start()
    try:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as http:
            bot = await bench_bot(http, sandbox, clicks, levels, warmup, workers)
            print(
                "bot done; floors: a bare lark-oapi ws client answering a constant toast, "
                "and the answer contract's least work in its handler"
            )
            floors = await bench_floor(http, sandbox, clicks, levels, warmup)
        print(f"bot workers: {workers}")
        print(table(bot, floors, clicks), flush=True)
    finally:
        logging.getLogger("Lark").setLevel(logging.CRITICAL)  # it logs the close as an error
        await sandbox.stop()
    return 1 if any(r.failed for r in (*bot, *floors.bare, *floors.contract)) else 0


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clicks", type=int, default=200, help="clicks per level")
    parser.add_argument("--levels", default="1,10,100", help="comma-separated clickers in flight")
    parser.add_argument("--warmup", type=int, default=20, help="clicks before the first level")
    parser.add_argument(
        "--workers",
        choices=("inline", "process"),
        default="process",
        help="the bot's [execution] workers: a second process (run's default) or inline",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the bot on CPU 0, the sandbox and the clickers on the other CPUs",
    )
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    if args.pin:
        print(pin(os.cpu_count() or 1), flush=True)
    logging.basicConfig(level=logging.ERROR)
    code = asyncio.run(main(args.clicks, levels, args.warmup, args.workers))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the floor's SDK thread has no stop(); don't wait on it at exit


if __name__ == "__main__":
    cli()
