"""A stuck callback consumer is answered for by its transport: in time, in its own words.

Everything is real: the callback consumer (bot/ingress/callbacks.py, cards in zh) behind the
port bot/app/server.py builds (`Ingress`), its store, the transports, and Lark as the sandbox
(the unmodified lark-oapi ws client, or the sandbox's webhook pusher). As in production, the
consumer runs on a main loop of its own (here a thread; Lark keeps the test's loop). That
loop is then stalled, and the transport must ack within Lark's 3 s with the consumer's own
"processing" toast, at the deadline the one budget (`lark.answer_budget_s`) gives; once the
loop moves again, the consumer decides the click, once, as the toast promised.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.app.server import Ingress
from bot.app.workforce import RetryingLark
from bot.ingress.ack import AckTerms
from bot.ingress.callbacks import CallbackConsumer, CallbackSettings
from bot.ingress.text import TextListener, TextSettings
from bot.lark.api import LarkApi
from bot.lark.webhook import add_webhook_routes
from bot.lark.ws import WsTransport
from bot.lark.ws_client import close_sdk_loop
from cards.render import render_card
from larksandbox import App, WebhookPusher
from store import Operation, State, Store, open_store, operation_view
from tests.support.backends import Backend
from tests.support.clicks import APP_ID, OUR_TENANT, click_on
from tests.support.factories import draft, offered
from tests.support.sandbox import Sandbox, card_content, create_request, lark_client, sdk
from tests.support.waiting import eventually
from tests.support.ws_world import World, click

T = TypeVar("T")

PROCESSING_ZH = "已收到，处理中"
STALL_LIMIT_S = 30.0  # a stall its test failed to end ends here, not never


class MainLoop:
    """The bot's main loop, on a thread of its own, so it can be stuck while Lark goes on."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="bot-main-loop")
        self._thread.start()
        self._releases: list[threading.Event] = []

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        # what is left (the cache cron of the probe client WsTransport.start builds) is
        # ended, as on the SDK's own loop
        close_sdk_loop(self.loop, None)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    async def stall(self) -> threading.Event:
        """Block the loop, as a consumer stuck in it would, until the returned event is set."""
        release, stalled = threading.Event(), threading.Event()

        def stuck() -> None:
            stalled.set()
            release.wait(STALL_LIMIT_S)

        self._releases.append(release)
        self.loop.call_soon_threadsafe(stuck)
        assert await asyncio.to_thread(stalled.wait, 10), "the main loop never ran the stall"
        return release

    def close(self) -> None:
        for release in self._releases:
            release.set()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


@dataclass
class Bot:
    """What bot/app/server.py wires for callbacks, on the main loop: store, consumer, port."""

    main: MainLoop
    store: Store
    consumer: CallbackConsumer
    port: Ingress
    api: LarkApi

    async def close(self) -> None:
        async def closing() -> None:
            await self.consumer.stop()
            await self.api.close()
            await self.store.close()

        await self.main.run(closing())


async def _nothing() -> dict[str, Any]:
    return {}


@pytest.fixture
async def main_loop() -> AsyncIterator[MainLoop]:
    main = MainLoop()
    yield main
    main.close()


async def wired(main: MainLoop, backend: Backend, app: App, lark_url: str, budget_s: float) -> Bot:
    """The consumer as bot/app/server.py builds it, with cards.lang = zh and the budget given."""

    async def build() -> Bot:
        store = await open_store(backend.url, schema=backend.schema)
        settings = CallbackSettings(
            app.app_id, frozenset({app.tenant_key}), "zh", answer_budget_s=budget_s
        )
        consumer = CallbackConsumer(store, settings)
        api = LarkApi(app.app_id, app.app_secret, lark_url)
        text = TextListener(store, RetryingLark(api), TextSettings(lang="zh"), _nothing)
        return Bot(main, store, consumer, Ingress(consumer, text), api)

    return await main.run(build())


def net_deadlines(logs: pytest.LogCaptureFixture) -> list[float]:
    """The deadline each transport ack for a consumer that had not answered was sent at."""
    return [
        float(record.args[2])  # type: ignore[index]
        for record in logs.records
        if record.name == "countersign.lark.ingress" and "not answered within" in record.msg
    ]


async def claimed_once(store: Store, op: Operation) -> None:
    async def claimed() -> bool:
        now = await store.get(op.id)
        return now is not None and now.state is State.CLAIMED

    await eventually(claimed)
    assert await store.claim_count(op.id) == 1

    # Lark got "processing", not the card the consumer's answer carried: whatever that
    # answer recorded as shown, the card is due, so the card worker patches it
    async def card_due() -> bool:
        now = await store.get(op.id)
        return now is not None and now.card_due_at is not None

    await eventually(card_due)


def the_processing_toast(toast: dict[str, Any], consumer: CallbackConsumer) -> None:
    assert toast == consumer.processing()["toast"] == AckTerms(lang="zh").processing()["toast"]
    assert toast["content"] == PROCESSING_ZH
    assert toast["i18n"] == {"zh_cn": PROCESSING_ZH, "en_us": "Received, processing"}


async def posted_card(store: Store, sandbox: Sandbox) -> tuple[Operation, str]:
    """An operation awaiting confirmation, its card (zh) posted in its audience's chat."""
    op = (await store.propose(draft())).operation
    card = render_card(operation_view(op), lang="zh", now=store.clock())
    created = await sdk(
        lark_client(sandbox).im.v1.message.create, create_request("oc_ops", card_content(card))
    )
    assert created.success(), created.msg
    message_id: str = created.data.message_id
    return await store.mark_card_sent(op.id, message_id), message_id


@pytest.mark.parametrize("budget_s", [0.3, 0.6])
async def test_ws_acks_a_stuck_consumer_with_its_processing_toast_at_its_deadline(
    world: World,
    main_loop: MainLoop,
    backend: Backend,
    store: Store,
    logs: pytest.LogCaptureFixture,
    budget_s: float,
) -> None:
    sandbox = world.sandbox
    bot = await wired(main_loop, backend, sandbox.app, sandbox.base_url, budget_s)
    transport = WsTransport(
        sandbox.app.app_id,
        sandbox.app.app_secret,
        sandbox.base_url,
        bot.port,
        main_loop.loop,
        on_fatal=lambda _reason: None,
    )

    async def start() -> None:  # on its main loop, as bot/app/server.py does
        transport.start()

    await main_loop.run(start())
    try:
        await connected_as(world, transport)
        op, message_id = await posted_card(store, sandbox)
        release = await main_loop.stall()
        try:
            reply = await click(sandbox, message_id, operator="ou_alice")
            seen = bot.consumer.stats.events  # read while the main loop is still stuck
        finally:
            release.set()
        assert seen == 0  # acked for the consumer before it even saw the click
        assert reply["status"] == "answered" and "client_error" not in reply
        assert not reply["card_changed"]
        the_processing_toast(reply["toast"], bot.consumer)
        # one budget: the transport waited as long as the consumer's setting says
        assert net_deadlines(logs) == [AckTerms(budget_s).transport_deadline_s]
        assert bot.consumer.transport_deadline_s == AckTerms(budget_s).transport_deadline_s
        # once its loop moves, the consumer decides the click "processing" promised, once
        await claimed_once(store, op)
    finally:
        assert await main_loop.run(transport.stop())
        await bot.close()


async def connected_as(world: World, transport: WsTransport) -> None:
    longconn = world.sandbox.hub.longconn
    app_id = world.sandbox.app.app_id

    async def up() -> bool:
        return longconn.connected(app_id) == 1 and transport.status()["state"] == "connected"

    await eventually(up)


@dataclass
class OnMainLoop:
    """The port bot/app/server.py builds, reached from the webhook's loop the way the ws
    transport reaches it from the SDK's: so the webhook can answer while the consumer's
    loop is stuck (in production both share one loop, and a stuck loop stops both)."""

    ingress: Ingress
    main: MainLoop

    @property
    def callbacks(self) -> CallbackConsumer:
        return self.ingress.callbacks

    async def on_callback(self, envelope: dict[str, Any], transport: str) -> dict[str, Any]:
        return await self.main.run(self.ingress.on_callback(envelope, transport))

    def on_event(self, envelope: dict[str, Any], transport: str) -> None:
        self.main.loop.call_soon_threadsafe(self.ingress.on_event, envelope, transport)


async def test_the_webhook_acks_a_stuck_consumer_with_its_processing_toast(
    main_loop: MainLoop,
    backend: Backend,
    store: Store,
    pusher: WebhookPusher,
    logs: pytest.LogCaptureFixture,
) -> None:
    app = App(
        app_id=APP_ID,
        app_secret="secret",
        tenant_key=OUR_TENANT,
        encrypt_key=f"ek-{secrets.token_hex(8)}",
        verification_token="v_token",  # what tests/support/clicks.py envelopes carry
    )
    bot = await wired(main_loop, backend, app, "http://127.0.0.1:9", 0.3)
    application = web.Application()
    add_webhook_routes(
        application,
        port=OnMainLoop(bot.port, main_loop),
        encrypt_key=app.encrypt_key,
        verification_token=app.verification_token,
    )
    server = TestServer(application, host="127.0.0.1")
    await server.start_server()
    try:
        op = await offered(store)
        release = await main_loop.stall()
        try:
            reply = await pusher.post(
                f"http://127.0.0.1:{server.port}/lark/card", app, click_on(op, "ev-stuck")
            )
            seen = bot.consumer.stats.events
        finally:
            release.set()
        assert seen == 0
        assert reply.status == 200 and reply.json() == bot.consumer.processing()
        the_processing_toast(reply.json()["toast"], bot.consumer)
        assert net_deadlines(logs) == [AckTerms(0.3).transport_deadline_s]
        await claimed_once(store, op)
    finally:
        await server.close()
        await bot.close()
