"""Operators clicking cards, in their own process: real clicks come from Lark, never from the
bot's interpreter, so the benches' clickers must not spend the bot's CPU either.

Run as a script it reads one JSON request on stdin, clicks each card once through the
sandbox control API (`POST /sandbox/api/messages/{id}/click`) with `in_flight` clickers and
prints one JSON line: the sandbox's push -> answer latencies, how many answers were
"processing" / "busy" / failed, the seconds the clicking took and each card's click time.

`click_level()` (used by the benches) runs it and returns a `Level`.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp

OPERATORS = ("ou_alice", "ou_bob")
DEADLINE_S = 600.0
# `--pin` (bench/callback_ack.py): the CPUs the stand-ins for Lark and its users (the sandbox
# and the clickers) keep to, so they do not share the bot's core
STAND_IN_CPUS = "BENCH_STAND_IN_CPUS"


def pin_stand_in() -> None:
    """Keep this process to the stand-ins' CPUs, if the bench asked for that."""
    cpus = os.environ.get(STAND_IN_CPUS)
    if cpus:
        os.sched_setaffinity(0, {int(cpu) for cpu in cpus.split(",")})


@dataclass(frozen=True)
class Level:
    in_flight: int
    clicks: int
    seconds: float
    p50_ms: float
    p99_ms: float
    processing: int
    busy: int
    failed: int
    # CPU seconds the answering process spent during the level (all its threads), when the
    # bench measured it: what one core can give decides how far latency can fall
    cpu_s: float = math.nan

    @property
    def per_s(self) -> float:
        return self.clicks / self.seconds

    @property
    def cpu_ms_per_click(self) -> float:
        return 1000 * self.cpu_s / self.clicks

    def share(self, count: int) -> str:
        return f"{100 * count / self.clicks:.0f}%"


def percentile(sorted_values: Sequence[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]


async def click_level(
    base_url: str,
    cards: list[str],
    in_flight: int,
    answer: str,
    *,
    processing: Collection[str],
    busy: Collection[str],
    clicked: dict[str, datetime] | None = None,
) -> Level:
    """Click each card once with `in_flight` clickers (in a child process); `answer` is the
    toast type expected; `processing`/`busy`: the toast texts counted as such. `clicked`,
    when given, gets each card's click time (wall clock, before the request)."""
    request = {
        "base_url": base_url,
        "cards": cards,
        "in_flight": in_flight,
        "answer": answer,
        "processing": sorted(processing),
        "busy": sorted(busy),
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(child.communicate(json.dumps(request).encode()), DEADLINE_S)
    if child.returncode != 0:
        raise RuntimeError(f"the clickers' process failed with {child.returncode}")
    result = json.loads(out)
    if clicked is not None:
        clicked.update({m: datetime.fromisoformat(at) for m, at in result["clicked"].items()})
    latencies = sorted(result["latencies"])
    p50, p99 = (
        (percentile(latencies, 0.50), percentile(latencies, 0.99))
        if latencies
        else (math.nan, math.nan)
    )
    return Level(
        in_flight,
        len(cards),
        result["seconds"],
        p50,
        p99,
        result["processing"],
        result["busy"],
        result["failed"],
    )


async def clickers(request: dict[str, Any]) -> dict[str, Any]:
    base_url: str = request["base_url"]
    queue = list(reversed(request["cards"]))
    processing_texts, busy_texts = set(request["processing"]), set(request["busy"])
    latencies: list[float] = []
    clicked: dict[str, str] = {}
    counts = {"processing": 0, "busy": 0, "failed": 0}

    async def clicker(http: aiohttp.ClientSession, index: int) -> None:
        while queue:
            message_id = queue.pop()
            clicked[message_id] = datetime.now(UTC).isoformat()
            async with http.post(
                f"{base_url}/sandbox/api/messages/{message_id}/click",
                json={"operator": OPERATORS[index % 2], "button": "confirm"},
            ) as response:
                reply = await response.json()
            if response.status != 200 or reply.get("status") != "answered":
                counts["failed"] += 1
                continue
            latencies.append(float(reply["latency_ms"]))
            toast = reply.get("toast") or {}
            if toast.get("content") in processing_texts:
                counts["processing"] += 1
            elif toast.get("content") in busy_texts:
                counts["busy"] += 1
            elif toast.get("type") != request["answer"]:
                counts["failed"] += 1

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        started = time.perf_counter()
        await asyncio.gather(*(clicker(http, i) for i in range(request["in_flight"])))
        seconds = time.perf_counter() - started
    return {"latencies": latencies, "seconds": seconds, "clicked": clicked, **counts}


if __name__ == "__main__":
    pin_stand_in()
    print(json.dumps(asyncio.run(clickers(json.loads(sys.stdin.read())))), flush=True)
