"""Run the bot process: store, HTTP API, Lark transports, the two consumers and the workers.

SIGTERM/SIGINT stop intake, let answers in flight finish, then exit; anything left is
recovered on the next start exactly as after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bot.api.app import RUNNER_OPTIONS, create_app
from bot.api.health import Health
from bot.app.heap import startup_heap_frozen
from bot.app.policy_record import announce_policy, policy_actor, record_policy
from bot.app.worker_process import WorkerProcess
from bot.app.workers_serving import (
    SHUTDOWN_GRACE_S,
    lark_api,
    open_configured_store,
    stop_on_signals,
)
from bot.app.workforce import RetryingLark, build_workforce, start_workforce
from bot.config import Config, Settings, zone
from bot.config.policy import policy_digests, second_look_above
from bot.decide.counters import DecisionCounters
from bot.ingress.callbacks import CallbackConsumer, CallbackSettings
from bot.ingress.text import TextListener, TextSettings
from bot.ingress.text_scope import AudienceScope, Scope
from bot.lark.webhook import add_webhook_routes
from bot.lark.ws import WsTransport
from kernel.timeutil import Clock, utc_now
from store import Store

log = logging.getLogger("countersign")

EXIT_WATCHDOG = 3
FATAL_GRACE_S = 5.0


class Ingress:
    """The IngressPort both transports feed: callbacks and text go to separate consumers."""

    def __init__(self, callbacks: CallbackConsumer, text: TextListener) -> None:
        self.callbacks = callbacks
        self.text = text

    async def on_callback(self, envelope: dict[str, Any], transport: str) -> dict[str, Any]:
        return await self.callbacks.on_callback(envelope, transport)

    def on_event(self, envelope: dict[str, Any], transport: str) -> None:
        self.text.on_event(envelope, transport)


def text_scope(settings: Settings) -> Scope:
    """Where text commands may show what: audiences, chats outsiders read, allowed tenants."""
    return Scope(
        audiences=tuple(
            AudienceScope(a.name, a.chat_id, frozenset(a.operators)) for a in settings.audiences
        ),
        destination_chats=frozenset(settings.outside_chats()),
        tenant_keys=frozenset(settings.lark.tenant_keys),
    )


async def announce_quietly(store: Store, lark: RetryingLark, settings: Settings) -> None:
    """Tell the audiences' chats of a policy change; a failure leaves it for the next start."""
    outside = frozenset(settings.outside_chats())
    try:
        await announce_policy(store, lark, outside, settings.cards.lang)
    except Exception:
        log.exception("announcing the policy change failed; the next start tries again")


async def serve(
    config: Config,
    *,
    on_ready: Callable[[str], Awaitable[None] | None] | None = None,
    stop: asyncio.Event | None = None,
    clock: Clock = utc_now,
) -> int:
    """Run until `stop` is set (or SIGTERM/SIGINT); returns the process exit code."""
    settings = config.settings
    lark = settings.lark
    store = await open_configured_store(config, clock)
    # before anything is decided under it: the version operations are filed under
    await record_policy(store, settings, policy_actor())
    loop = asyncio.get_running_loop()
    stop = stop_on_signals(stop)
    exit_code = 0

    tz = zone(settings.cards.timezone)
    callbacks = text = ws = None
    api = lark_api(config)
    force = await build_workforce(config, store, api, clock=clock, tz=tz)
    # "process": the workers run in a child; this process only forwards their wake-ups
    workers = WorkerProcess(config, store) if settings.execution.workers == "process" else None
    kick_cards = workers.kicker("cards") if workers else force.kick_cards
    kick_executor = workers.kicker("executor") if workers else force.executor.kick
    kick_deliveries = workers.kicker("deliveries") if workers else force.deliveries.kick

    def on_proposed() -> None:  # its card is due, and a draft's filing receipt
        kick_cards()
        kick_deliveries()

    decided = DecisionCounters()  # every entry's, read by /metrics
    if api is not None and force.cards is not None:
        callbacks = CallbackConsumer(
            store,
            CallbackSettings(
                lark.app_id,
                frozenset(lark.tenant_keys),
                settings.cards.lang,
                tz,
                answer_budget_s=lark.answer_budget_s,
                policies=policy_digests(settings),
                people=settings.people,
                second_look_above=second_look_above(settings),
            ),
            counters=decided,
            on_card_due=kick_cards,
            on_claimed=kick_executor,
        )

        async def health_report() -> dict[str, Any]:
            return (await health.report())[1]  # `health` is built below, before any text

        text = TextListener(
            store,
            RetryingLark(api),
            TextSettings(
                lark.bot_open_id,
                text_scope(settings),
                settings.cards.lang,
                tz,
                settings.people,
                signal_chats=settings.outside_chats(),
                config=settings,
            ),
            health_report,
        )

    def fatal(reason: str) -> None:
        nonlocal exit_code
        log.critical("exiting so a supervisor restarts us: %s", reason)
        exit_code = EXIT_WATCHDOG
        loop.call_later(FATAL_GRACE_S, os._exit, EXIT_WATCHDOG)  # crash-only if stopping hangs
        stop.set()

    if lark.mode == "ws":
        assert callbacks is not None and text is not None
        ws = WsTransport(
            lark.app_id,
            config.lark.app_secret.get_secret_value(),
            lark.base_url,
            Ingress(callbacks, text),
            loop,
            watchdog_grace_s=lark.watchdog_grace_s,
            exit_after_s=lark.exit_after_s,
            on_fatal=fatal,
        )
    health = Health(
        config,
        store,
        callbacks,
        text,
        ws,
        workers or force.executor,
        None if workers else force.due_listener,
        decisions=decided,
    )
    app = create_app(
        config,
        store,
        health=health,
        on_proposed=on_proposed,
        on_claimed=kick_executor,
        capabilities=force.capability_readers(),
        prechecks=force.precheck_readers(),
    )
    if lark.mode == "webhook":
        assert callbacks is not None and text is not None
        add_webhook_routes(
            app,
            port=Ingress(callbacks, text),
            encrypt_key=config.lark.encrypt_key.get_secret_value(),
            verification_token=config.lark.verification_token.get_secret_value(),
            window_s=lark.webhook_window_s,
        )
    runner = web.AppRunner(app, **RUNNER_OPTIONS)
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.http.host, settings.http.port).start()
        if callbacks is not None and text is not None:
            callbacks.start()
            text.start()
        if workers is not None:
            force.tasks.append(asyncio.create_task(workers.run(stop), name="worker-process"))
        else:
            start_workforce(force, config, store, stop)
        if ws is not None:
            ws.start()
        if api is not None:
            announcing = announce_quietly(store, RetryingLark(api), settings)
            force.tasks.append(asyncio.create_task(announcing, name="policy-announce"))
        url = f"http://{settings.http.host}:{settings.http.port}"
        with startup_heap_frozen():
            if on_ready is not None:
                maybe = on_ready(url)
                if maybe is not None:
                    await maybe
            await stop.wait()
        log.info("stopping")
    finally:
        stop.set()
        # Answers already on the ack path finish (and their acks leave) before the
        # transport goes; new clicks meanwhile get "busy" and Lark's user clicks again.
        if callbacks is not None:
            await callbacks.drain(SHUTDOWN_GRACE_S)
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.stop()
        await runner.shutdown()
        for consumer in (callbacks, text):
            if consumer is not None:
                await consumer.stop()
        await force.close(SHUTDOWN_GRACE_S)
        await runner.cleanup()
        if api is not None:
            await api.close()
        await store.close()
    return exit_code
