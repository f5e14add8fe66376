"""Assemble the sandbox: OpenAPI subset, web sign-in, long connection, webhook push, control API,
web UI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from larksandbox import control, control_requests, history, oauth, openapi
from larksandbox.hub import LARK_RETRY_SCHEDULE_S, Hub
from larksandbox.longconn import LongConnHub
from larksandbox.longconn_wire import ClientConfig
from larksandbox.state import SandboxState
from larksandbox.webhook import URL_VERIFY_TIMEOUT_S, WebhookPusher

log = logging.getLogger("countersign.sandbox")
UI_DIR = Path(__file__).with_name("ui")
SAVE_DEBOUNCE_S = 0.5


@dataclass
class SandboxOptions:
    state_file: Path | None = None
    # which connected client gets each push: "random" as Lark (docs/lark-reference.md §2.7), or
    # "round_robin" (in turn) for tests that need to know
    dispatch: str = "random"
    time_scale: float = 1.0
    retry_schedule_s: tuple[float, ...] = LARK_RETRY_SCHEDULE_S
    callback_timeout_s: float = 3.0
    # Lark's 1 s for the url_verification echo; tests about other things may be lenient
    # so a loaded CI machine cannot fail their setup.
    url_verify_timeout_s: float = URL_VERIFY_TIMEOUT_S
    fragment_bytes: int = 64 * 1024
    client_config: ClientConfig | None = None


async def stream(request: web.Request) -> web.StreamResponse:
    """Server-sent events: one line per state change, so the UI refreshes only what changed."""
    state = request.app[openapi.STATE_KEY]
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    queue = state.subscribe()
    try:
        await response.write(b": connected\n\n")
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), 15)
                if event.get("type") == "shutdown":  # end the stream so shutdown need not wait
                    break
                await response.write(f"data: {json.dumps(event)}\n\n".encode())
            except TimeoutError:
                await response.write(b": keep-alive\n\n")
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        state.unsubscribe(queue)
    return response


async def ui_index(_request: web.Request) -> web.FileResponse:
    return web.FileResponse(UI_DIR / "index.html")


def build_sandbox(state: SandboxState, options: SandboxOptions | None = None) -> web.Application:
    options = options or SandboxOptions()
    app = web.Application(middlewares=[openapi.lark_errors, control_requests.control_errors])
    longconn = LongConnHub(
        state,
        dispatch="round_robin" if options.dispatch == "round_robin" else "random",
        fragment_bytes=options.fragment_bytes,
        client_config=options.client_config,
    )
    webhooks = WebhookPusher(url_verify_timeout_s=options.url_verify_timeout_s)
    hub = Hub(
        state,
        longconn,
        webhooks,
        retry_schedule_s=options.retry_schedule_s,
        time_scale=options.time_scale,
        callback_timeout_s=options.callback_timeout_s,
    )
    app[openapi.STATE_KEY] = state
    app[control_requests.HUB_KEY] = hub
    openapi.add_routes(app)
    history.add_routes(app)
    oauth.add_routes(app)
    longconn.add_routes(app)
    control.add_routes(app)
    app.router.add_get("/sandbox/api/stream", stream)
    app.router.add_get("/sandbox", ui_index)
    app.router.add_get("/sandbox/", ui_index)
    if UI_DIR.is_dir():
        app.router.add_static("/sandbox/static", UI_DIR)

    async def lifecycle(_app: web.Application) -> AsyncIterator[None]:
        saver = None
        if options.state_file is not None:
            saver = asyncio.create_task(_save_on_change(state, options.state_file))
        yield
        if saver is not None:
            saver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await saver
            state.save(options.state_file)  # type: ignore[arg-type]
        await hub.close()
        await longconn.close()
        await webhooks.close()

    async def end_streams(_app: web.Application) -> None:
        state.publish({"type": "shutdown"})

    app.on_shutdown.append(end_streams)
    app.cleanup_ctx.append(lifecycle)
    return app


async def _save_on_change(state: SandboxState, path: Path) -> None:
    queue = state.subscribe()
    try:
        while True:
            await queue.get()
            await asyncio.sleep(SAVE_DEBOUNCE_S)  # coalesce a burst of changes into one write
            while not queue.empty():
                queue.get_nowait()
            state.save(path)
    finally:
        state.unsubscribe(queue)
