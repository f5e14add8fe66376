"""WsTransport's world: the real sandbox (with a Lark outage switch) and an IngressPort double.

The only double is the IngressPort (FakePort): it records what the transport hands over and
answers from a script; the terms of its ack are the consumer's real ones (bot/ingress/ack.py
`AckTerms`). The `world` fixture is exposed by tests/bot/lark/conftest.py.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.lark.ws import WsTransport
from larksandbox import (
    DEFAULT_APP_ID,
    ENDPOINT_PATH,
    HUB_KEY,
    ClientConfig,
    SandboxOptions,
    build_sandbox,
    default_state,
)
from tests.support.fake_ack import FakeAck
from tests.support.sandbox import Sandbox

FRAGMENT_BYTES = 1024  # small, so callbacks and events also travel as fragments


@dataclass
class FakePort:
    """A test double of the IngressPort: records calls, answers from a script."""

    delay_s: float = 0.0
    hold: asyncio.Event | None = None  # set: on_callback answers only once it is set
    fail: bool = False
    answer: Callable[[dict[str, Any]], dict[str, Any]] = lambda _e: {}
    callbacks: FakeAck = field(default_factory=FakeAck)  # the consumer's ack terms
    clicks: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    callback_threads: list[threading.Thread] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)  # event ids whose on_callback returned
    events: asyncio.Queue[tuple[dict[str, Any], str, threading.Thread]] = field(
        default_factory=asyncio.Queue
    )

    async def on_callback(self, envelope: dict[str, Any], transport: str) -> dict[str, Any]:
        self.callback_threads.append(threading.current_thread())
        self.clicks.append((envelope, transport))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.hold is not None:
            await self.hold.wait()
        self.finished.append(envelope["header"]["event_id"])
        if self.fail:
            raise RuntimeError("consumer bug")
        return self.answer(envelope)

    def on_event(self, envelope: dict[str, Any], transport: str) -> None:
        self.events.put_nowait((envelope, transport, threading.current_thread()))


@dataclass
class World:
    sandbox: Sandbox
    server: TestServer
    endpoint_down: list[bool]  # [True] -> the endpoint answers 503 (a Lark outage)
    port: FakePort
    start: Callable[..., Awaitable[WsTransport]]


@pytest.fixture
async def world() -> AsyncIterator[World]:
    state = default_state()
    app = build_sandbox(
        state,
        SandboxOptions(
            fragment_bytes=FRAGMENT_BYTES,
            client_config=ClientConfig(reconnect_nonce_s=0, reconnect_interval_s=1),
        ),
    )
    endpoint_down = [False]

    @web.middleware
    async def outage(request: web.Request, handler: Any) -> web.StreamResponse:
        if endpoint_down[0] and request.path == ENDPOINT_PATH:
            return web.Response(status=503, text="unavailable")  # the SDK retries a non-200
        response: web.StreamResponse = await handler(request)
        return response

    app.middlewares.append(outage)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    base = f"http://127.0.0.1:{server.port}"
    port = FakePort()
    transports: list[WsTransport] = []
    async with aiohttp.ClientSession() as http:
        sandbox = Sandbox(base, state, app[HUB_KEY], http)

        async def start(*, secret: str | None = None, **options: Any) -> WsTransport:
            options.setdefault("on_fatal", lambda _reason: None)
            transport = WsTransport(
                DEFAULT_APP_ID,
                secret or sandbox.app.app_secret,
                base,
                port,
                asyncio.get_running_loop(),
                **options,
            )
            transports.append(transport)
            transport.start()
            return transport

        yield World(sandbox, server, endpoint_down, port, start)
        for transport in transports:
            assert await transport.stop()
    await server.close()


async def click(sandbox: Sandbox, message_id: str, operator: str = "ou_bob") -> dict[str, Any]:
    status, reply = await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": operator, "button": "confirm"}
    )
    assert status == 200, reply
    result: dict[str, Any] = reply
    return result
