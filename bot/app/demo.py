"""The demo: sandbox + bot on SQLite, with sample operations of every domain to click.

Each registered domain says how it shows itself (`Domain.demo`): its config table, what it
runs beside the bot (the simulated venue's hand on the mark, a loopback service) and the
proposals to file, with the card phrases each must reach once confirmed. `countersign demo`
files them all (for the built-in domains: an order that fills, one that rests and then fills
in parts as the mark moves, one the preflight refuses once confirmed, an outbound message
draft), prints the sandbox UI and dashboard URLs, and leaves the clicking to you.
`countersign demo --script` tells the same story without a person: it clicks through the
sandbox control API, prints each card transition, and exits 0 only if every step behaved as
expected.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp

from bot.agents.client import ApiError, Client
from bot.app.demo_story import CHATS, PEOPLE, Sample, Story, Tally, how_to_decide, story
from bot.app.devstack import (
    DEFAULT_HL_PORT,
    SandboxApp,
    embedded_sandbox,
    emulated_hyperliquid,
    emulator_domains,
    register_sign_in,
    sandbox_config,
    with_domains,
)
from bot.app.logs import redact
from bot.app.server import serve
from bot.app.workforce import running
from bot.config.profiles import DEFAULT_DEV_DIR, DEV_TOKEN, DEV_TOKEN_ENV
from store import OperationView
from workers.domains.base import DemoDecision, DemoSetup

DEFAULT_BOT_URL = "http://127.0.0.1:8080"
STEP_DEADLINE_S = 30.0
METRICS_DEADLINE_S = 5.0


class Demo:
    def __init__(self, bot_url: str, sandbox: SandboxApp, told: Story) -> None:
        self.bot_url = bot_url
        self.sandbox = sandbox
        self.told = told
        self.http = aiohttp.ClientSession()  # the sandbox's control API and the bot's pages
        self.api = Client(bot_url, DEV_TOKEN)  # the proposers' API, as any proposer calls it
        self.run_id = str(int(time.time()))

    async def close(self) -> None:
        await self.http.close()
        await self.api.close()

    async def propose(self, sample: Sample) -> OperationView:
        body = {
            "request_id": f"demo-{self.run_id}-{sample.name.replace(' ', '-')}",
            "kind": sample.kind,
            "payload": sample.payload,
            "audience": "ops",
            "expires_in_s": 3600,
        }
        try:
            filed = await self.api.propose(body)
        except ApiError as refused:
            raise RuntimeError(f"{sample.name}: proposal refused: {refused}") from None
        return filed.operation

    async def card_of(self, operation_id: str) -> dict[str, Any] | None:
        async with self.http.get(
            f"{self.sandbox.base_url}/sandbox/api/chats/{CHATS['ops']}/messages"
        ) as response:
            listed = await response.json()
        for message in listed["items"]:
            if message.get("msg_type") == "interactive" and operation_id in json.dumps(message):
                found: dict[str, Any] = message
                return found
        return None

    async def wait_for(
        self, what: str, check: Callable[[], Awaitable[Any]], deadline_s: float = STEP_DEADLINE_S
    ) -> Any:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            found = await check()
            if found:
                return found
            await asyncio.sleep(0.2)
        raise RuntimeError(f"timed out waiting for {what}")

    async def card_shows(self, operation_id: str, phrase: str) -> None:
        async def shows() -> bool:
            card = await self.card_of(operation_id)
            return card is not None and phrase in json.dumps(card, ensure_ascii=False)

        await self.wait_for(f"the card to show {phrase!r}", shows)

    async def click(self, message_id: str, decision: DemoDecision) -> dict[str, Any]:
        body: dict[str, Any] = {"operator": decision.operator, "button": decision.action}
        if decision.reason is not None:  # typed into the card's reject form
            body["form"] = {"reason": decision.reason}
        async with self.http.post(
            f"{self.sandbox.base_url}/sandbox/api/messages/{message_id}/click", json=body
        ) as response:
            reply: dict[str, Any] = await response.json()
            return reply

    def _card_check(self, operation_id: str) -> Callable[[], Awaitable[Any]]:
        return lambda: self.card_of(operation_id)

    async def metrics(self) -> dict[str, float]:
        """The /metrics samples this story moves, by name and labels."""
        from prometheus_client.parser import text_string_to_metric_families

        async with self.http.get(f"{self.bot_url}/metrics") as response:
            text = await response.text()
        return {
            sample.name + json.dumps(sample.labels, sort_keys=True): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    async def offer_all(self) -> list[tuple[Sample, OperationView, str]]:
        offered = []
        for sample in self.told.samples:
            view = await self.propose(sample)
            card = await self.wait_for(f"the card of {sample.name!r}", self._card_check(view.id))
            offered.append((sample, view, str(card["message_id"])))
        return offered

    async def script(self) -> Tally:
        """Click through every sample; print each transition; count what behaved."""
        tally = Tally()
        before = await self.metrics()
        offered = await self.offer_all()
        for sample, view, message_id in offered:
            print(f"[{sample.name}] card {message_id} offered (operation {view.id})", flush=True)
            for decision in sample.decisions:
                reply = await self.click(message_id, decision)
                toast = (reply.get("toast") or {}).get("type")
                said = f" saying {decision.reason!r}" if decision.reason else ""
                print(
                    f"[{sample.name}] {PEOPLE.get(decision.operator, decision.operator)} clicks "
                    f"{decision.action.capitalize()}{said} -> toast {toast}",
                    flush=True,
                )
            try:
                for phrase in sample.expect:  # what moves the story on runs beside the bot
                    await self.card_shows(view.id, phrase)
                    print(f"[{sample.name}] card -> {phrase}", flush=True)
                    tally.passed()
            except RuntimeError as error:
                print(f"[{sample.name}] FAILED: {error}", flush=True)
                tally.failed(sample.name)
        outside = CHATS["counterparty"]
        async with self.http.get(
            f"{self.sandbox.base_url}/sandbox/api/chats/{outside}/messages"
        ) as r:
            posted = [m for m in (await r.json())["items"] if m.get("sender_type") == "app"]
        print(f"[outside] messages the bot posted in {outside}: {len(posted)}", flush=True)
        tally.check(len(posted) == self.told.outside_posts, "outside")
        wanted = await self.metrics_wanted(offered)
        after = await self.metrics_moved(before, wanted)
        for key, want in wanted.items():
            moved = after.get(key, 0.0) - before.get(key, 0.0)
            print(f"[metrics] {key} moved by {moved:g} (expected {want:g})", flush=True)
            tally.check(moved == want, key)
        return tally

    async def metrics_wanted(
        self, offered: Sequence[tuple[Sample, OperationView, str]]
    ) -> dict[str, float]:
        """What the story must move on /metrics (name + labels as JSON): each click by its
        action and its callback answer, an execution by the outcome each sample ended in."""
        ended: Counter[str] = Counter()
        clicked: Counter[str] = Counter()
        for sample, view, _message_id in offered:
            clicked.update(decision.action for decision in sample.decisions)
            outcome = (await self.api.get(view.id)).outcome
            if outcome is not None:
                ended[outcome.status] += 1
        return {
            **{
                f'countersign_decisions_total{{"action": "{action}", "entry": "lark"}}': float(n)
                for action, n in sorted(clicked.items())
            },
            **{
                f'countersign_executions_total{{"outcome": "{status}"}}': float(times)
                for status, times in sorted(ended.items())
            },
            "countersign_callback_ack_seconds_count{}": float(clicked.total()),
        }

    async def metrics_moved(
        self, before: dict[str, float], wanted: dict[str, float]
    ) -> dict[str, float]:
        """/metrics once it shows what the story moved, or as it is at the deadline: the
        executor's counters come from the worker process a datagram later."""
        deadline = time.monotonic() + METRICS_DEADLINE_S
        while True:
            after = await self.metrics()
            moved = {key: after.get(key, 0.0) - before.get(key, 0.0) for key in wanted}
            if moved == wanted or time.monotonic() >= deadline:
                return after
            await asyncio.sleep(0.2)


VENUES = ("sim", "hyperliquid")


@contextlib.asynccontextmanager
async def venue_setups(
    venue: str, data_dir: Path, host: str, hl_port: int
) -> AsyncIterator[Mapping[str, DemoSetup] | None]:
    """The domains' demos as `venue` changes them: "sim", their own; "hyperliquid", finance
    on the local Hyperliquid served here until the demo ends."""
    if venue == "sim":
        yield None
        return
    async with emulated_hyperliquid(host, hl_port) as emulated:
        print(emulated.banner(), flush=True)
        yield emulator_domains(emulated, data_dir)


async def run_demo(
    data_dir: Path,
    port: int,
    sandbox_port: int,
    host: str = "127.0.0.1",
    *,
    script: bool,
    venue: str = "sim",
    hl_port: int = DEFAULT_HL_PORT,
) -> int:
    await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
    result: list[int] = []
    summary: list[str] = []  # the scripted demo's last line, printed once all stopped
    async with (
        embedded_sandbox(host, sandbox_port, data_dir / "sandbox.json") as sandbox,
        venue_setups(venue, data_dir, host, hl_port) as setups,
    ):
        config = sandbox_config(data_dir, port, sandbox, "ws", host)
        told = story(data_dir, setups)
        # runners read what their tables name (a signing secret) from the environment, and
        # the worker process inherits ours: this process runs the demo and nothing else
        os.environ.update(told.environ)
        redact(told.environ.values())  # the emulator's agent key, a demo service's secret
        config = with_domains(config, told.tables, told.environ, told.approval_rules)
        await register_sign_in(sandbox, config)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        background: list[asyncio.Task[None]] = [
            loop.create_task(running(run, stop)) for run in told.background
        ]

        async def drive(url: str) -> None:
            demo = Demo(url, sandbox, told)
            try:
                await demo.wait_for("the long connection", lambda: connected(demo))
                if script:
                    tally = await demo.script()
                    summary.append(tally.summary())
                    result.append(1 if tally.failures else 0)
                    stop.set()
                    return
                offered = await demo.offer_all()
                offers = [(s.name, v.id, how_to_decide(s)) for s, v, _m in offered]
                print(next_steps(url, sandbox.base_url, data_dir, offers), flush=True)
            except Exception as error:
                print(f"demo failed: {error}", flush=True)
                summary.append(f"FAIL: the demo stopped before its checks ended: {error}")
                result.append(1)
                stop.set()
            finally:
                await demo.close()

        def ready(url: str) -> None:
            print(f"countersign API listening on {url}", flush=True)
            background.append(asyncio.get_running_loop().create_task(drive(url)))

        code = await serve(config, on_ready=ready, stop=stop)
        for task in background:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if script:
        print(summary[0] if summary else f"FAIL: the bot stopped (exit {code})", flush=True)
    return result[0] if result else code


def next_steps(
    bot_url: str, sandbox_url: str, data_dir: Path, offers: list[tuple[str, str, str]]
) -> str:
    """What to do now that the demo runs: where to click, the token, the ids, three commands."""
    client = f" --token {DEV_TOKEN}" + ("" if bot_url == DEFAULT_BOT_URL else f" --url {bot_url}")
    # The operator tools find the default dev directory themselves; any other needs naming.
    data = "" if data_dir == DEFAULT_DEV_DIR else f" --dev --data-dir {data_dir}"
    first = offers[0][1] if offers else "<ID>"
    width = max((len(name) for name, _id, _how in offers), default=0)
    return "\n".join(
        [
            "countersign demo is ready",
            f"  click:      {sandbox_url}/sandbox  (chat Ops, click as Alice)",
            f"  dashboard:  {bot_url}/ops",
            f"  token:      {DEV_TOKEN}  (or export {DEV_TOKEN_ENV}={DEV_TOKEN})",
            "  operations:",
            *(
                f"    {name:<{width}}  {operation_id}{f'  ({how})' if how else ''}"
                for name, operation_id, how in offers
            ),
            "  try, in another shell:",
            f"    .venv/bin/countersign show {first}{client}",
            f"    .venv/bin/countersign propose examples/order.json{client}",
            f"    .venv/bin/countersign venue orders{data}",
        ]
    )


async def connected(demo: Demo) -> bool:
    async with demo.http.get(f"{demo.bot_url}/readyz") as response:
        body = await response.json()
    state = body["components"]["callback_consumer"]["state"]
    return bool(state in ("listening_unverified", "verified"))
