"""A developer's webhook server as Lark sees it: the unmodified SDK behind aiohttp."""

from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import lark_oapi as lark  # type: ignore[import-untyped]
from aiohttp import web
from aiohttp.test_utils import TestServer
from lark_oapi.core.model import RawRequest  # type: ignore[import-untyped]

from larksandbox import App

CardHandler = Callable[[Any], Any]


@dataclass
class Receiver:
    url: str
    cards: queue.Queue[Any] = field(default_factory=queue.Queue)
    messages: queue.Queue[Any] = field(default_factory=queue.Queue)
    # what the card handler answers; tests swap it
    answer: CardHandler = lambda _data: {}
    # an HTTP status to answer instead of running the SDK (e.g. 503), or a raw body
    override_status: int | None = None
    override_body: bytes | None = None
    # events: fail this many deliveries with HTTP 500 before acking
    fail_events: int = 0


@asynccontextmanager
async def webhook_receiver(app: App) -> AsyncIterator[Receiver]:
    receiver = Receiver(url="")

    def on_card(data: Any) -> Any:
        receiver.cards.put(data)
        return receiver.answer(data)

    def on_message(data: Any) -> None:
        receiver.messages.put(data)

    handler = (
        lark.EventDispatcherHandler.builder(app.encrypt_key, app.verification_token)
        .register_p2_card_action_trigger(on_card)
        .register_p2_im_message_receive_v1(on_message)
        .build()
    )

    async def serve(request: web.Request) -> web.Response:
        raw = RawRequest()
        raw.uri = request.path
        raw.body = await request.read()
        raw.headers = request.headers
        if request.path.endswith("/events") and receiver.fail_events > 0:
            receiver.fail_events -= 1
            return web.Response(status=500, text="try later")
        if request.path.endswith("/card") and receiver.override_status is not None:
            return web.Response(status=receiver.override_status, body=receiver.override_body or b"")
        if request.path.endswith("/card") and receiver.override_body is not None:
            return web.Response(status=200, body=receiver.override_body)
        answer = await asyncio.get_running_loop().run_in_executor(None, handler.do, raw)
        return web.Response(status=answer.status_code, body=answer.content)

    application = web.Application()
    for path in ("/card", "/events", "/lark/card", "/lark/events"):  # the bot's: bot/devstack
        application.router.add_post(path, serve)
    server = TestServer(application, host="127.0.0.1")
    await server.start_server()
    receiver.url = f"http://127.0.0.1:{server.port}"
    try:
        yield receiver
    finally:
        await server.close()
