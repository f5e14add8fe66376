"""The bot as `countersign run` in its own process for bench/history.py, and the few hundred
real operations it drives through it before the store is multiplied (growth.md "Method").

The mix, repeated until `count` operations are filed: filled orders (some replied to in
their source conversation, one with a protective stop-loss, one first clicked by a person who
may not decide), 2-of-2 quorum orders, an order the pre-check refuses after its claim,
rejects with and without a reason, a proposer's cancel, an expiry, message drafts sent, and a
draft returned with "Request changes". Not in it yet: signed result webhooks, text commands,
and counterparty texts (signals): those tables stay as the drive leaves them (signals: empty)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling benches
from callback_ack import TOKEN, bot_environ, free_port, settings_data
from replicas import toml_document
from sandbox_process import SandboxProcess, wait_until

from workers.domains.finance.demo import order_payload

COUNTERSIGN = Path(sys.executable).with_name("countersign")
READY_DEADLINE_S = 300.0
SETTLE_DEADLINE_S = 300.0
EXPIRES_S = 30  # the shortest expiry a proposal may ask for
PLAIN: dict[str, Any] = order_payload()  # fills at once, nothing left working
PROTECTED: dict[str, Any] = order_payload(protective={"stop_loss": "57000"})
LARGE: dict[str, Any] = order_payload(quantity="0.050")  # above QUORUM_ABOVE: 2 of 2
PRE_CHECK_REFUSES: dict[str, Any] = order_payload(
    side="sell", quantity="0.100", reduce_only=True, max_fee="3.5"
)
QUORUM_ABOVE = "1000"
DRAFT: dict[str, Any] = {
    "destination": "acme",
    "counterparty": "acme-supplier",
    "text": "Hello Acme, we confirm the delivery window of Friday 10:00-12:00.",
    "priority": "P2",
}
# (kind, payload, what happens to its card, routed to a conversation)
MIX: tuple[tuple[str, dict[str, Any], str, bool], ...] = (
    ("finance.order", PLAIN, "confirm", True),
    ("finance.order", PLAIN, "confirm", False),
    ("finance.order", PLAIN, "refused_then_confirm", True),
    ("finance.order", PLAIN, "confirm", False),
    ("finance.order", PROTECTED, "confirm", False),
    ("finance.order", LARGE, "quorum", True),
    ("finance.order", LARGE, "quorum", False),
    ("finance.order", PRE_CHECK_REFUSES, "quorum", True),  # its notional is above too
    ("finance.order", PLAIN, "reject_reason", True),
    ("finance.order", PLAIN, "reject", False),
    ("finance.order", PLAIN, "cancel", True),
    ("finance.order", PLAIN, "expire", False),
    ("message.send", DRAFT, "confirm", False),
    ("message.send", DRAFT, "confirm", True),
    ("message.send", DRAFT, "request_changes", False),
)


def config_data(
    sandbox: SandboxProcess, data: Path, store: dict[str, Any], port: int, name: str
) -> dict[str, Any]:
    """The bot's config: bench/callback_ack.py's, with a 2-of-2 rule for large orders and a
    message destination; workers in their own process, as `run` has them by default; a
    simulated venue of its own for each run, so no run inherits another's orders."""
    settings = settings_data(sandbox, data, port, {"workers": "process"}, store)
    venue = data / f"venue-{name}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{venue}{suffix}").unlink(missing_ok=True)
    settings["domains"]["finance"]["venue_path"] = str(venue)
    settings["approval_rules"] = [
        {
            "name": "large",
            "kinds": ["finance.order"],
            "above": QUORUM_ABOVE,
            "currency": "USDC",
            "required_confirmations": 2,
        }
    ]
    settings["domains"]["message"] = {
        "destinations": [{"name": "acme", "chat_id": "oc_acme", "counterparty": "acme-supplier"}]
    }
    return settings


@dataclass
class BotProcess:
    url: str
    process: asyncio.subprocess.Process
    log: Path
    started: float  # monotonic, at spawn
    ready_s: float = 0.0

    @property
    def pid(self) -> int:
        return self.process.pid

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def worker_pids(self) -> list[int]:
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        return [
            int(c)
            for c in children
            if b"bot.app.worker_main" in Path(f"/proc/{c}/cmdline").read_bytes()
        ]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def start_bot(
    http: aiohttp.ClientSession,
    sandbox: SandboxProcess,
    data: Path,
    store: dict[str, Any],
    name: str,
) -> BotProcess:
    """`countersign run` on `store`, until /readyz answers 200 and a worker child runs."""
    port = free_port()
    config = data / f"{name}.toml"
    config.write_text(toml_document(config_data(sandbox, data, store, port, name)))
    log = data / f"{name}.log"
    started = time.monotonic()
    with log.open("wb") as sink:
        process = await asyncio.create_subprocess_exec(
            str(COUNTERSIGN),
            "run",
            "--config",
            str(config),
            env={**os.environ, **bot_environ(sandbox)},
            stdout=sink,
            stderr=sink,
        )
    bot = BotProcess(f"http://127.0.0.1:{port}", process, log, started)

    async def ready() -> bool:
        if process.returncode is not None:
            raise RuntimeError(f"the bot exited ({process.returncode}):\n{bot.tail()}")
        try:
            async with http.get(f"{bot.url}/readyz") as response:
                return response.status == 200 and bool(bot.worker_pids())
        except aiohttp.ClientError:
            return False

    try:
        await wait_until(ready, READY_DEADLINE_S, f"{name}: /readyz 200")
    except BaseException:
        await stop_bot(bot)
        raise
    bot.ready_s = time.monotonic() - started
    return bot


async def stop_bot(bot: BotProcess) -> None:
    if bot.process.returncode is None:
        bot.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(bot.process.wait(), 60)
        except TimeoutError:
            bot.process.kill()
            await bot.process.wait()


# -- the mix -------------------------------------------------------------------------------------


def plan(count: int) -> Iterator[tuple[int, tuple[str, dict[str, Any], str, bool]]]:
    for index in range(count):
        yield index, MIX[index % len(MIX)]


async def propose(
    http: aiohttp.ClientSession, bot: BotProcess, body: dict[str, Any]
) -> dict[str, Any]:
    """File `body`; a draft to a destination whose last send is still in flight is refused
    (active_claim) until it resolves: filed again then."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    deadline = time.monotonic() + SETTLE_DEADLINE_S
    while True:
        async with http.post(f"{bot.url}/api/v1/operations", json=body, headers=auth) as r:
            answer: dict[str, Any] = await r.json()  # the API's JSON (not a typed view)
        if r.status == 201:
            return answer
        busy = r.status == 409 and answer.get("error", {}).get("code") == "active_claim"
        if not busy or time.monotonic() > deadline:
            raise RuntimeError(f"proposal refused: {r.status} {answer}")
        await asyncio.sleep(0.2)


async def card_of(http: aiohttp.ClientSession, bot: BotProcess, op_id: str) -> str:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    found: list[str] = []

    async def shown() -> bool:
        async with http.get(f"{bot.url}/api/v1/operations/{op_id}", headers=auth) as r:
            card = (await r.json()).get("card") or {}
        found[:] = [card["message_id"]] if card.get("message_id") else []
        return bool(found)

    await wait_until(shown, SETTLE_DEADLINE_S, f"the card of {op_id}")
    return found[0]


async def click(
    http: aiohttp.ClientSession, sandbox: SandboxProcess, card: str, who: str, **body: Any
) -> dict[str, Any]:
    url = f"{sandbox.base_url}/sandbox/api/messages/{card}/click"
    async with http.post(url, json={"operator": who, **body}) as response:
        reply: dict[str, Any] = await response.json()
        if response.status != 200:
            raise RuntimeError(f"click refused by the sandbox: {response.status} {reply}")
        return reply


async def thread(http: aiohttp.ClientSession, sandbox: SandboxProcess) -> str:
    """A message in the ops chat an agent's proposal answers to (its conversation)."""
    url = f"{sandbox.base_url}/sandbox/api/chats/oc_ops/messages"
    async with http.post(url, json={"sender": "ou_alice", "text": "agent: BTC"}) as response:
        return str((await response.json())["message_id"])


async def one(
    http: aiohttp.ClientSession,
    sandbox: SandboxProcess,
    bot: BotProcess,
    index: int,
    step: tuple[str, dict[str, Any], str, bool],
    run: str,
    drafts: asyncio.Lock,
) -> None:
    """One operation of the mix, filed and decided. Drafts one at a time: a new draft to a
    destination supersedes the one still awaiting a decision there."""
    if step[0] == "message.send":
        async with drafts:
            await decided(http, sandbox, bot, index, step, run)
    else:
        await decided(http, sandbox, bot, index, step, run)


async def decided(
    http: aiohttp.ClientSession,
    sandbox: SandboxProcess,
    bot: BotProcess,
    index: int,
    step: tuple[str, dict[str, Any], str, bool],
    run: str,
) -> None:
    kind, payload, fate, routed = step
    body: dict[str, Any] = {
        "request_id": f"hist-{run}-{index}",
        "kind": kind,
        "payload": dict(payload),
        "audience": "ops",
        "expires_in_s": EXPIRES_S if fate == "expire" else 3600,
    }
    if kind == "message.send":  # the same text to the same counterparty supersedes a draft
        body["payload"]["text"] = f"{payload['text']} (#{index})"
    if routed:
        body["source"] = {
            "conversation": {"chat_id": "oc_ops", "message_id": await thread(http, sandbox)}
        }
    filed = await propose(http, bot, body)
    if fate == "cancel":
        auth = {"Authorization": f"Bearer {TOKEN}"}
        url = f"{bot.url}/api/v1/operations/{filed['id']}/cancel"
        async with http.post(url, headers=auth) as response:
            if response.status != 200:
                raise RuntimeError(f"cancel refused: {response.status} {await response.text()}")
        return
    if fate == "expire":
        return
    card = await card_of(http, bot, filed["id"])
    if fate == "refused_then_confirm":
        await click(http, sandbox, card, "ou_mallory", button="confirm")
    if fate in ("confirm", "refused_then_confirm"):
        await click(http, sandbox, card, "ou_alice", button="confirm")
    elif fate == "quorum":
        await click(http, sandbox, card, "ou_alice", button="confirm")
        await click(http, sandbox, card, "ou_bob", button="confirm")
    elif fate == "reject_reason":
        await click(http, sandbox, card, "ou_bob", button="reject", form={"reason": "too big"})
    elif fate == "reject":
        await click(http, sandbox, card, "ou_bob", button="reject_no_reason")
    elif fate == "request_changes":
        note = {"reason": "Say Saturday, not Friday."}
        await click(http, sandbox, card, "ou_bob", button="request_changes", form=note)


async def drive(
    http: aiohttp.ClientSession,
    sandbox: SandboxProcess,
    bot: BotProcess,
    count: int,
    in_flight: int = 10,
) -> float:
    """File and decide `count` operations of the mix, `in_flight` at a time; seconds taken
    (the bot settles them afterwards, and the expiries need EXPIRES_S)."""
    started = time.monotonic()
    run = f"{os.getpid()}-{time.monotonic_ns()}"
    queue = list(plan(count))
    queue.reverse()
    drafts = asyncio.Lock()

    async def worker() -> None:
        while queue:
            index, step = queue.pop()
            await one(http, sandbox, bot, index, step, run, drafts)

    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return time.monotonic() - started
