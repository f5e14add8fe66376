"""Our webhook routes on a loopback port, with an IngressPort double behind them.

The only double is the IngressPort (FakePort); the terms of its ack are the consumer's real
ones (bot/ingress/ack.py `AckTerms`). The fixtures (app, port, serve, pusher, http) are
exposed by tests/bot/lark/conftest.py.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.lark.webhook import add_webhook_routes
from larksandbox import App, WebhookPusher
from tests.support.fake_ack import FakeAck

ANSWER: dict[str, Any] = {
    "toast": {"type": "success", "content": "Confirmed"},
    "card": {"type": "raw", "data": {"schema": "2.0", "body": {"elements": []}}},
}


class FakePort:
    """A test double of the IngressPort: records calls, answers from a script."""

    def __init__(self) -> None:
        self.callbacks = FakeAck()  # the consumer's ack terms: the transport's net
        self.clicks: list[tuple[dict[str, Any], str, threading.Thread]] = []
        self.events: list[tuple[dict[str, Any], str]] = []
        self.answer: dict[str, Any] = ANSWER
        self.delay_s = 0.0
        self.hold: asyncio.Event | None = None  # set: on_callback answers only once it is set
        self.fail = False
        self.finished = asyncio.Event()

    async def on_callback(self, envelope: dict[str, Any], transport: str) -> dict[str, Any]:
        self.clicks.append((envelope, transport, threading.current_thread()))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.hold is not None:
            await self.hold.wait()
        self.finished.set()
        if self.fail:
            raise RuntimeError("consumer bug")
        return self.answer

    def on_event(self, envelope: dict[str, Any], transport: str) -> None:
        self.events.append((envelope, transport))

    @property
    def called(self) -> bool:
        return bool(self.clicks or self.events)


Serve = Callable[..., Awaitable[str]]


@pytest.fixture
def app() -> App:
    return App(
        app_id="cli_webhook_test",
        app_secret="secret",
        tenant_key="tenant-1",
        encrypt_key=f"ek-{secrets.token_hex(8)}",
        verification_token=f"vt-{secrets.token_hex(8)}",
    )


@pytest.fixture
def port() -> FakePort:
    return FakePort()


@pytest.fixture
async def serve(app: App, port: FakePort) -> AsyncIterator[Serve]:
    """Start our routes on a loopback port; keyword options go to add_webhook_routes."""
    servers: list[TestServer] = []

    async def start(**options: Any) -> str:
        options.setdefault("encrypt_key", app.encrypt_key)
        options.setdefault("verification_token", app.verification_token)
        application = web.Application()
        add_webhook_routes(application, port=port, **options)
        server = TestServer(application, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    yield start
    for server in servers:
        await server.close()


@pytest.fixture
async def pusher() -> AsyncIterator[WebhookPusher]:
    pusher = WebhookPusher()
    yield pusher
    await pusher.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def post(
    http: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str]
) -> tuple[int, str]:
    async with http.post(url, data=body, headers=headers) as response:
        return response.status, await response.text()


def no_secrets(app: App, text: str) -> bool:
    return app.encrypt_key not in text and app.verification_token not in text
