"""Run the bot process: store, HTTP API, workers; stop cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable

from aiohttp import web

from bot.api.app import create_app
from bot.config import Config
from store.opening import open_store
from workers.expiry import run_expiry

log = logging.getLogger("countersign")


async def serve(config: Config, *, on_ready: Callable[[str], None] | None = None) -> None:
    settings = config.settings
    if settings.lark.mode != "off":
        raise SystemExit(
            f"lark.mode = {settings.lark.mode!r} is not available in this build yet; "
            'set lark.mode = "off" (the Lark transports land with the ingress work)'
        )
    store = await open_store(
        settings.store.url, schema=settings.store.schema_name, pool_size=settings.store.pool_size
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    runner = web.AppRunner(create_app(config, store), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, settings.http.host, settings.http.port)
    expiry = asyncio.create_task(
        run_expiry(store, settings.operations.expiry_sweep_s, stop), name="expiry"
    )
    try:
        await site.start()
        url = f"http://{settings.http.host}:{settings.http.port}"
        if on_ready:
            on_ready(url)
        await stop.wait()
        log.info("stopping")
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await expiry
        await runner.cleanup()
        await store.close()
