"""`countersign worker` and the worker child (`bot.app.worker_main`): the workers alone, with
what `run` shares with them (the store opened from the config, the stop signals, the Lark API
client). Kept apart from `bot/app/server.py` so the worker child imports no HTTP app and no
ingress (tests/bot/lark/test_namespaces.py holds it)."""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from bot.app.heap import startup_heap_frozen
from bot.app.workforce import Workforce, build_workforce, start_workforce
from bot.config import Config
from bot.lark.api import LarkApi
from kernel.timeutil import Clock, utc_now
from store import Store, open_store

log = logging.getLogger("countersign")

SHUTDOWN_GRACE_S = 5.0
# A stop asked for by a signal ends within this, whatever hangs: the graces above add up to
# well under it, and what a cut-short stop leaves is recovered on start, as after a crash.
STOP_BOUND_S = 25.0
# Before the bound, the tasks still pending are logged, so a hang names where it waits.
TASKS_LOGGED_BEFORE_S = 3.0


async def open_configured_store(config: Config, clock: Clock) -> Store:
    settings = config.settings.store
    return await open_store(
        settings.url, schema=settings.schema_name, pool_size=settings.pool_size, clock=clock
    )


def stop_on_signals(stop: asyncio.Event | None) -> asyncio.Event:
    """The given stop event, or one that SIGTERM/SIGINT set."""
    if stop is not None:
        return stop
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stop_within_bound() -> None:
        if stop.is_set():
            return
        stop.set()
        loop.call_later(STOP_BOUND_S - TASKS_LOGGED_BEFORE_S, log_pending_tasks)
        # a thread of the interpreter's own: it fires even if this loop or a thread is stuck,
        # prints every thread's stack to stderr and exits 1
        faulthandler.dump_traceback_later(STOP_BOUND_S, exit=True, file=sys.stderr)

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop_within_bound)
    return stop


def log_pending_tasks() -> None:
    """What stopping still waits on: each pending task and the innermost calls it awaits."""
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    log.warning("still stopping: %d tasks pending", len(tasks))
    for task in tasks:
        log.warning("pending: %s awaits %s", task.get_name(), awaited_calls(task.get_coro()))


def awaited_calls(coro: object, innermost: int = 4) -> str:
    """The chain a coroutine awaits down (`cr_await`), its innermost calls first."""
    calls: list[str] = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            calls.append(f"{frame.f_code.co_name} ({frame.f_code.co_filename}:{frame.f_lineno})")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return " < ".join(reversed(calls[-innermost:])) or "nothing (not started)"


def lark_api(config: Config) -> LarkApi | None:
    lark = config.settings.lark
    if lark.mode == "off":
        return None
    return LarkApi(lark.app_id, config.lark.app_secret.get_secret_value(), lark.base_url)


async def serve_workers(
    config: Config,
    *,
    on_ready: Callable[[], None] | None = None,
    stop: asyncio.Event | None = None,
    clock: Clock = utc_now,
    link: Callable[[Workforce, asyncio.Event], Coroutine[Any, Any, None]] | None = None,
) -> int:
    """`countersign worker`: the card worker, executor, reconciler, expiry and venue clock
    alone, without HTTP or Lark ingress. Safe next to `run` processes: every worker leases
    its operations in the store. `link`: the worker process's tie to the `run` that started
    it (`bot.app.worker_main`)."""
    store = await open_configured_store(config, clock)
    stop = stop_on_signals(stop)
    api = lark_api(config)
    force = await build_workforce(config, store, api, clock=clock)
    try:
        start_workforce(force, config, store, stop)
        if link is not None:
            force.tasks.append(asyncio.create_task(link(force, stop), name="parent-link"))
        with startup_heap_frozen():
            if on_ready is not None:
                on_ready()
            await stop.wait()
        log.info("stopping workers")
    finally:
        stop.set()
        await force.close(SHUTDOWN_GRACE_S)
        if api is not None:
            await api.close()
        await store.close()
    return 0
