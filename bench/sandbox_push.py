"""How fast the sandbox's long connection pushes card callbacks through the unmodified SDK.

Starts a `LongConnHub` on a free loopback port, connects one lark-oapi `ws.Client` (in a thread
with its own loop, docs/lark-reference.md §2.8 mode D) whose card.action.trigger handler answers a constant
toast, then pushes N callbacks per concurrency level (1, 10, 100 in flight) and prints
callbacks/s and the push->ack latency p50/p99. Later benchmarks read this to know the harness is
not their bottleneck. Every callback must come back acked 200 with the toast (checked).

    .venv/bin/python bench/sandbox_push.py [--callbacks N] [--levels 1,10,100]

The SDK has no stop(), so the script ends with os._exit once the table is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import lark_oapi as lark  # type: ignore[import-untyped]
import lark_oapi.ws.client as lark_ws_client  # type: ignore[import-untyped]
from aiohttp import web

from larksandbox.entities import App
from larksandbox.longconn import LongConnHub
from larksandbox.state import DEFAULT_APP_ID, default_state

TOAST = {"toast": {"type": "success", "content": "ok"}}
WARMUP = 50


@dataclass(frozen=True)
class Result:
    in_flight: int
    callbacks: int
    seconds: float
    p50_ms: float
    p99_ms: float
    failures: int


def start_sdk_client(
    app_id: str,
    app_secret: str,
    domain: str,
    answer: dict[str, Any] | Callable[[Any], dict[str, Any]] | None = None,
) -> threading.Thread:
    """A bare SDK client in its own thread and loop, answering every callback with `answer`
    (or what `answer(data)` returns for the SDK's P2CardActionTrigger `data`).

    It runs until the process exits (the SDK has no stop).
    """
    constant = TOAST if answer is None else answer

    def on_card(data: Any) -> dict[str, Any]:
        return constant(data) if callable(constant) else constant

    def run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        lark_ws_client.loop = loop  # the SDK schedules on this module global
        handler = (
            lark.EventDispatcherHandler.builder("", "")
            .register_p2_card_action_trigger(on_card)
            .build()
        )
        client = lark.ws.Client(
            app_id,
            app_secret,
            event_handler=handler,
            domain=domain,
            log_level=lark.LogLevel.WARNING,
        )
        client.start()

    thread = threading.Thread(target=run, name="lark-ws", daemon=True)
    thread.start()
    return thread


def callback(app: App, n: int) -> bytes:
    envelope = {
        "schema": "2.0",
        "header": {
            "event_id": f"bench-{n}",
            "token": "",
            "create_time": str(int(time.time() * 1e6)),
            "event_type": "card.action.trigger",
            "tenant_key": app.tenant_key,
            "app_id": app.app_id,
        },
        "event": {
            "operator": {"tenant_key": app.tenant_key, "open_id": "ou_alice"},
            "token": "c-bench",
            "action": {"value": {"op": f"op_{n}", "action": "confirm"}, "tag": "button"},
            "host": "im_message",
            "context": {"open_message_id": "om_bench", "open_chat_id": "oc_ops"},
        },
    }
    return json.dumps(envelope).encode()


def percentile(sorted_values: Sequence[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]


async def run_level(hub: LongConnHub, app: App, total: int, in_flight: int) -> Result:
    payloads = [callback(app, i) for i in range(total)]  # built before the clock starts
    latencies: list[float] = []
    failures = 0
    next_index = 0

    async def worker() -> None:
        nonlocal next_index, failures
        while next_index < total:
            payload = payloads[next_index]
            next_index += 1
            started = time.perf_counter()
            ack = await hub.push(app.app_id, payload, timeout_s=10.0)
            latencies.append((time.perf_counter() - started) * 1000)
            if ack is None or ack.code != 200 or json.loads(ack.data or b"{}") != TOAST:
                failures += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    seconds = time.perf_counter() - started
    latencies.sort()
    return Result(
        in_flight,
        total,
        seconds,
        percentile(latencies, 0.50),
        percentile(latencies, 0.99),
        failures,
    )


async def main(total: int, levels: Sequence[int]) -> int:
    state = default_state()
    app = state.apps[DEFAULT_APP_ID]
    hub = LongConnHub(state)
    web_app = web.Application()
    hub.add_routes(web_app)
    runner = web.AppRunner(web_app, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]

    start_sdk_client(app.app_id, app.app_secret, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 30
    while hub.connected(app.app_id) == 0:
        if time.monotonic() > deadline:
            print("the SDK client did not connect within 30 s", file=sys.stderr)
            return 1
        await asyncio.sleep(0.01)

    await run_level(hub, app, WARMUP, 10)
    results = [await run_level(hub, app, total, level) for level in levels]

    print(f"sandbox long connection, 1 lark-oapi ws.Client, {total} card callbacks per level")
    print(
        f"{'in_flight':>9} {'callbacks':>9} {'cb/s':>8} {'p50_ms':>8} {'p99_ms':>8} {'failed':>6}"
    )
    for r in results:
        print(
            f"{r.in_flight:>9} {r.callbacks:>9} {r.callbacks / r.seconds:>8.0f} "
            f"{r.p50_ms:>8.2f} {r.p99_ms:>8.2f} {r.failures:>6}"
        )
    logging.getLogger("Lark").setLevel(logging.CRITICAL)  # it logs the close as an error
    await runner.cleanup()
    return 1 if any(r.failures for r in results) else 0


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--callbacks", type=int, default=2000, help="callbacks per level")
    parser.add_argument("--levels", default="1,10,100", help="comma-separated in-flight counts")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",") if x.strip()]
    code = asyncio.run(main(args.callbacks, levels))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the SDK thread has no stop(); don't wait on it at interpreter exit


if __name__ == "__main__":
    cli()
