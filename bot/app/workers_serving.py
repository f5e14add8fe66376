"""`countersign worker` and the worker child (`bot.app.worker_main`): the workers alone, with
what `run` shares with them (the store opened from the config, the stop signals, the Lark API
client). Kept apart from `bot/app/server.py` so the worker child imports no HTTP app and no
ingress (tests/bot/lark/test_namespaces.py holds it)."""

from __future__ import annotations

import asyncio
import logging
import signal
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
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    return stop


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
