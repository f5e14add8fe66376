"""Readiness: callback consumer and text listener reported apart, plus store and card backlog.

Answered from memory only: the consumers' and workers' own counters, and what the store
holds from the background summary (bot/api/summary.py) with its age; no statement runs on
the request, so a probe costs the same at a year's history as on an empty store.

Reported without failing readiness: result deliveries that failed and operations that need
a person (`attention`: unresolved); a restart cannot settle them, so a 503 would only have an
orchestrator restart a bot that is fine.

No secrets anywhere in it: the config revision is a digest of the redacted settings.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from bot.api.summary import Summary
from bot.config import Config, redacted
from bot.decide.counters import DecisionCounters
from kernel.timeutil import iso_utc, utc_now
from store import Store, StoreSummary


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
        # started and stopped with the app that serves it (bot/api/app.py)
        http = self.config.settings.http
        self.summary = Summary(self.store, http.summary_period_s, http.summary_stale_after_s)
        rendered = json.dumps(redacted(self.config.settings, {}), sort_keys=True)
        self.config_revision = hashlib.sha256(rendered.encode()).hexdigest()[:12]

    async def report(self) -> tuple[int, dict[str, Any]]:
        store = self.summary.status()
        mode = self.config.settings.lark.mode
        callbacks = self._consumer("callback", self.callbacks, mode)
        text_listener = self._consumer("text", self.text, mode)
        unknown = {"state": "unknown"}
        held = self.summary.latest if store["state"] == "ok" else None
        down = held is None or callbacks["state"] in ("down", "disconnected")
        body = {
            "status": "unavailable" if down else "ready",
            "components": {
                "store": store,
                "callback_consumer": callbacks,
                "text_listener": text_listener,
                "outbox": self._outbox(held) if held is not None else unknown,
                "executor": self._executor(held) if held is not None else unknown,
                "deliveries": self._deliveries(held) if held is not None else unknown,
                # not part of readiness either: a restart cannot settle these, people must
                "attention": self._attention(held) if held is not None else unknown,
                # not part of readiness: a worker that misses a wake-up still polls
                "due_listener": (
                    self.due_listener.status() if self.due_listener else {"state": "off"}
                ),
            },
            "config_revision": self.config_revision,
            "checked_at": iso_utc(utc_now()),
        }
        return (503 if down else 200), body

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

    def _executor(self, held: StoreSummary) -> dict[str, Any]:
        if self.executor is None:
            return {"state": "off"}
        return {
            "state": self.executor.state,
            **self.executor.where(),
            "passes": self.executor.passes,
            "failures": self.executor.failures,
            "unknown_outstanding": held.unknown_outstanding,
        }

    @staticmethod
    def _attention(held: StoreSummary) -> dict[str, Any]:
        """Operations the executor gave up on or a lookup could not settle: unresolved, for
        a person (the dashboard's "Needs attention" lists them)."""
        unresolved = held.unresolved
        return {"state": "needs_attention" if unresolved else "ok", "unresolved": unresolved}

    @staticmethod
    def _deliveries(held: StoreSummary) -> dict[str, Any]:
        """Result return: a failed conclusion needs an operator (`countersign deliveries`).
        Delivered ones are history, not counted (`countersign deliveries list` has them)."""
        failed = held.deliveries_failed
        return {
            "state": "delivery_failed" if failed else "ok",
            "pending": held.deliveries_pending,
            "failed": failed,
        }

    @staticmethod
    def _outbox(held: StoreSummary) -> dict[str, Any]:
        oldest = held.card_oldest
        return {
            "state": "ok",
            "card_backlog": held.card_backlog,
            "oldest_age_s": round((utc_now() - oldest).total_seconds(), 3) if oldest else None,
            "card_delivery_failed": held.card_delivery_failed,
        }
