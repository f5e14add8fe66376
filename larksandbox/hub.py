"""Delivery as Lark does it: each push goes over the app's long connection or its webhook.

Events are at least once: not acked (3 s, non-200, no transport) means a re-push at 15 s,
5 min, 1 h and 6 h (scalable for tests). Card callbacks are answered once: a late or bad
answer becomes the client-side error code the clicking user would have seen; they are not
re-pushed (docs/lark-reference.md §1.3 marks that UNCONFIRMED; this is the sandbox's documented choice).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from larksandbox.entities import App
from larksandbox.longconn import LongConnHub, NoConnection
from larksandbox.state import SandboxState
from larksandbox.webhook import WebhookPusher

LARK_RETRY_SCHEDULE_S: tuple[float, ...] = (15, 300, 3600, 21600)
CALLBACK_TIMEOUT_S = 3.0

# Client-side codes a clicking user sees (docs/lark-reference.md §1.3)
NO_CALLBACK_CONFIGURED = 200340
CALLBACK_TIMEOUT = 200341
CALLBACK_CONNECT_FAILED = 200342
CALLBACK_NON_200 = 200671
CALLBACK_BAD_BODY = 200672
CALLBACK_BAD_CARD = 200673
CARD_DOWNGRADE = 200830


@dataclass(frozen=True)
class CallbackOutcome:
    status: Literal["answered", "timeout", "error", "undeliverable"]
    answer: dict[str, Any] | None
    latency_ms: float
    transport: Literal["ws", "webhook"] | None
    client_error: int | None = None
    client_error_msg: str = ""


@dataclass
class EventDelivery:
    event_id: str
    event_type: str
    app_id: str
    attempts: list[dict[str, Any]] = field(default_factory=list)
    acked: bool = False
    gave_up: bool = False


class Hub:
    def __init__(
        self,
        state: SandboxState,
        longconn: LongConnHub,
        webhooks: WebhookPusher,
        *,
        retry_schedule_s: Sequence[float] = LARK_RETRY_SCHEDULE_S,
        time_scale: float = 1.0,
        callback_timeout_s: float = CALLBACK_TIMEOUT_S,
        card_frame_type: Literal["event", "card"] = "event",
    ) -> None:
        self.state = state
        self.longconn = longconn
        self.webhooks = webhooks
        self.retry_schedule_s = tuple(retry_schedule_s)
        self.time_scale = time_scale
        self.callback_timeout_s = callback_timeout_s
        self.card_frame_type = card_frame_type
        self.deliveries: dict[str, EventDelivery] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def transport(self, app: App, *, callback: bool) -> Literal["ws", "webhook"] | None:
        if self.longconn.connected(app.app_id):
            return "ws"
        if (callback and app.card_url) or (not callback and app.event_url):
            return "webhook"
        return None

    # -- events -----------------------------------------------------------------------------

    def push_event(self, app: App, envelope: dict[str, Any]) -> EventDelivery:
        header = envelope["header"]
        delivery = EventDelivery(header["event_id"], header["event_type"], app.app_id)
        self.deliveries[delivery.event_id] = delivery
        task = asyncio.create_task(self._deliver_event(app, envelope, delivery))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return delivery

    async def _deliver_event(
        self, app: App, envelope: dict[str, Any], delivery: EventDelivery
    ) -> None:
        delays = (0.0, *self.retry_schedule_s)
        for attempt, delay in enumerate(delays):
            if delay:
                await asyncio.sleep(delay * self.time_scale)
            result = await self._attempt_event(app, envelope)
            delivery.attempts.append(
                {"attempt": attempt, "at": self.state.now().isoformat(), **result}
            )
            self.state.publish({"type": "event_delivery", "event_id": delivery.event_id})
            if result["acked"]:
                delivery.acked = True
                return
        delivery.gave_up = True

    async def _attempt_event(self, app: App, envelope: dict[str, Any]) -> dict[str, Any]:
        transport = self.transport(app, callback=False)
        body = json.dumps(envelope, ensure_ascii=False).encode("utf-8")
        if transport == "ws":
            try:
                ack = await self.longconn.push(app.app_id, body, timeout_s=self.callback_timeout_s)
            except NoConnection:
                return {"transport": "ws", "acked": False, "result": "no connection"}
            if ack is None:
                return {"transport": "ws", "acked": False, "result": "timeout"}
            return {"transport": "ws", "acked": ack.code == 200, "result": f"code {ack.code}"}
        if transport == "webhook":
            reply = await self.webhooks.post(app.event_url, app, envelope)
            acked = reply.status == 200
            return {
                "transport": "webhook",
                "acked": acked,
                "result": reply.failure or f"HTTP {reply.status}",
            }
        return {"transport": None, "acked": False, "result": "no subscription"}

    # -- card callbacks ---------------------------------------------------------------------

    async def push_callback(self, app: App, envelope: dict[str, Any]) -> CallbackOutcome:
        transport = self.transport(app, callback=True)
        started = time.perf_counter()

        def done(**values: Any) -> CallbackOutcome:
            return CallbackOutcome(
                latency_ms=(time.perf_counter() - started) * 1000, transport=transport, **values
            )

        if transport is None:
            return done(
                status="undeliverable",
                answer=None,
                client_error=NO_CALLBACK_CONFIGURED,
                client_error_msg="no callback subscription (no long connection, no card URL)",
            )
        if transport == "ws":
            body = json.dumps(envelope, ensure_ascii=False).encode("utf-8")
            try:
                ack = await self.longconn.push(
                    app.app_id,
                    body,
                    frame_type=self.card_frame_type,
                    timeout_s=self.callback_timeout_s,
                )
            except NoConnection:
                ack = None
            if ack is None:
                return done(
                    status="timeout",
                    answer=None,
                    client_error=CALLBACK_TIMEOUT,
                    client_error_msg="the callback did not respond in time",
                )
            if ack.code != 200:
                return done(
                    status="error",
                    answer=None,
                    client_error=CALLBACK_NON_200,
                    client_error_msg=f"the callback answered code {ack.code}",
                )
            raw = ack.data if ack.data is not None else b"{}"
        else:
            reply = await self.webhooks.post(
                app.card_url, app, envelope, timeout_s=self.callback_timeout_s
            )
            if reply.failure == "timeout":
                return done(
                    status="timeout",
                    answer=None,
                    client_error=CALLBACK_TIMEOUT,
                    client_error_msg="the callback did not respond in time",
                )
            if reply.failure == "connect":
                return done(
                    status="error",
                    answer=None,
                    client_error=CALLBACK_CONNECT_FAILED,
                    client_error_msg="could not connect to the callback URL",
                )
            if reply.status != 200:
                return done(
                    status="error",
                    answer=None,
                    client_error=CALLBACK_NON_200,
                    client_error_msg=f"the callback answered HTTP {reply.status}",
                )
            raw = reply.body or b"{}"
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            return done(
                status="error",
                answer=None,
                client_error=CALLBACK_BAD_BODY,
                client_error_msg="the callback answer is not a JSON object",
            )
        return done(status="answered", answer=answer)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
