"""Readiness: callback consumer and text listener reported apart, plus store and card backlog.

Reported without failing readiness: result deliveries that failed and operations that need
a person (`attention`: unresolved); a restart cannot settle them, so a 503 would only have an
orchestrator restart a bot that is fine.

No secrets anywhere in it: the config revision is a digest of the redacted settings.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import text

from bot.config import Config, redacted
from bot.decide.counters import DecisionCounters
from kernel.timeutil import iso_utc, utc_now
from store import (
    UNRESOLVED,
    CardLedger,
    DeliveryLedger,
    DeliveryState,
    Store,
    attention_counts,
    card_delivery_failures,
    unknown_outstanding,
)


class ConsumerCounts(Protocol):
    """A consumer's intake and answers (bot/ingress/stats.py), as /readyz and /metrics read them."""

    events: int
    answered: int
    refusals: Counter[str]  # by reason
    outcomes: Counter[str]
    verified_at: datetime | None
    ack_sum_s: float

    def ack_buckets(self) -> list[tuple[float, int]]: ...

    def as_json(self) -> dict[str, Any]: ...


class Consumer(Protocol):
    @property
    def stats(self) -> ConsumerCounts: ...

    @property
    def healthy(self) -> bool: ...


class Transport(Protocol):
    def status(self) -> dict[str, Any]: ...


class Executor(Protocol):
    """The executor in this process, or the worker process running it."""

    passes: int
    failures: int
    outcomes: Counter[str]  # by status

    @property
    def state(self) -> str: ...

    def where(self) -> dict[str, object]:
        """Where it runs (for a worker process: its pid and how often it was started)."""
        ...


class Listener(Protocol):
    def status(self) -> dict[str, Any]: ...


@dataclass
class Health:
    config: Config
    store: Store
    callbacks: Consumer | None
    text: Consumer | None
    ws: Transport | None = None
    executor: Executor | None = None
    due_listener: Listener | None = None  # PostgreSQL: other replicas' wake-ups
    # what every entry decided (bot/decide/counters.py), one instance for the process
    decisions: DecisionCounters = field(default_factory=DecisionCounters)

    def __post_init__(self) -> None:
        self.started_at = utc_now()
        rendered = json.dumps(redacted(self.config.settings, {}), sort_keys=True)
        self.config_revision = hashlib.sha256(rendered.encode()).hexdigest()[:12]

    async def report(self) -> tuple[int, dict[str, Any]]:
        store = await self._store()
        mode = self.config.settings.lark.mode
        callbacks = self._consumer("callback", self.callbacks, mode)
        text_listener = self._consumer("text", self.text, mode)
        unknown = {"state": "unknown"}
        readable = store["state"] == "ok"
        outbox = await self._outbox() if readable else unknown
        down = store["state"] != "ok" or callbacks["state"] in ("down", "disconnected")
        body = {
            "status": "unavailable" if down else "ready",
            "components": {
                "store": store,
                "callback_consumer": callbacks,
                "text_listener": text_listener,
                "outbox": outbox,
                "executor": await self._executor() if readable else unknown,
                "deliveries": await self._deliveries() if readable else unknown,
                # not part of readiness either: a restart cannot settle these, people must
                "attention": await self._attention() if readable else unknown,
                # not part of readiness: a worker that misses a wake-up still polls
                "due_listener": (
                    self.due_listener.status() if self.due_listener else {"state": "off"}
                ),
            },
            "config_revision": self.config_revision,
            "checked_at": iso_utc(utc_now()),
        }
        return (503 if down else 200), body

    async def _store(self) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            async with self.store.read() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception as error:  # the reason class only: messages may carry a DSN
            return {"state": "down", "error": type(error).__name__}
        return {
            "state": "ok",
            "backend": self.store.engine.dialect.name,
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
        }

    def _consumer(self, kind: str, consumer: Consumer | None, mode: str) -> dict[str, Any]:
        if mode == "off" or consumer is None:
            return {"mode": "off", "state": "off"}
        stats = consumer.stats
        report: dict[str, Any] = {"mode": mode, **stats.as_json()}
        connected_since: str | None = iso_utc(self.started_at)
        state: str
        if not consumer.healthy:
            state = "down"
        else:
            state = "listening"
            if mode == "ws" and self.ws is not None:
                transport = self.ws.status()
                report["transport"] = transport
                connected_since = transport.get("connected_since")
                verdict = (transport.get("watchdog") or {}).get("verdict", "ok")
                if transport.get("state") != "connected":
                    # inside the watchdog's grace a blip is "reconnecting" (still ready);
                    # past it the consumer cannot receive clicks: "disconnected" (503)
                    state = "reconnecting" if verdict == "grace" else "disconnected"
        if kind == "callback" and state == "listening":
            # Only a callback that passed transport, app and tenant checks proves the wiring.
            state = "verified" if stats.verified_at else "listening_unverified"
            report["verified_at"] = iso_utc(stats.verified_at) if stats.verified_at else None
        report["state"] = state
        report["connected_since"] = connected_since
        return report

    async def _executor(self) -> dict[str, Any]:
        if self.executor is None:
            return {"state": "off"}
        unknown = await unknown_outstanding(self.store)
        return {
            "state": self.executor.state,
            **self.executor.where(),
            "passes": self.executor.passes,
            "failures": self.executor.failures,
            "unknown_outstanding": int(unknown),
        }

    async def _attention(self) -> dict[str, Any]:
        """Operations the executor gave up on or a lookup could not settle: unresolved, for
        a person (the dashboard's "Needs attention" lists them)."""
        unresolved = (await attention_counts(self.store, [UNRESOLVED]))[UNRESOLVED]
        return {"state": "needs_attention" if unresolved else "ok", "unresolved": unresolved}

    async def _deliveries(self) -> dict[str, Any]:
        """Result return: a failed conclusion needs an operator (`countersign deliveries`)."""
        counts = await DeliveryLedger(self.store).counts()
        failed = counts.get(DeliveryState.FAILED, 0)
        return {
            "state": "delivery_failed" if failed else "ok",
            "pending": counts.get(DeliveryState.PENDING, 0),
            "delivered": counts.get(DeliveryState.DELIVERED, 0),
            "failed": failed,
        }

    async def _outbox(self) -> dict[str, Any]:
        count, oldest = await CardLedger(self.store).backlog()
        failed = await card_delivery_failures(self.store)
        return {
            "state": "ok",
            "card_backlog": count,
            "oldest_age_s": round((utc_now() - oldest).total_seconds(), 3) if oldest else None,
            "card_delivery_failed": int(failed),
        }
