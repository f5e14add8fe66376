"""Per-consumer counters and ack latency, for /readyz and metrics (what a consumer took in and
how it answered; what was decided is bot/decide/counters.py's)."""

from __future__ import annotations

import statistics
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kernel.timeutil import iso_utc, utc_now

LATENCY_WINDOW = 2000
# ack latency histogram bounds for /metrics, in seconds (Lark gives up at 3 s)
ACK_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)


@dataclass
class ConsumerStats:
    started_at: datetime = field(default_factory=utc_now)
    events: int = 0
    answered: int = 0
    refusals: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    last_event_at: datetime | None = None
    verified_at: datetime | None = None
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    # since start, for /metrics: one count per bucket bound (not cumulative) and the sum
    ack_bucket_counts: list[int] = field(default_factory=lambda: [0] * len(ACK_BUCKETS_S))
    ack_sum_s: float = 0.0

    def received(self) -> None:
        self.events += 1
        self.last_event_at = utc_now()

    def verified(self) -> None:
        if self.verified_at is None:
            self.verified_at = utc_now()

    def observe_ack(self, latency_ms: float, outcome: str) -> None:
        self.answered += 1
        self.outcomes[outcome] += 1
        self.latencies_ms.append(latency_ms)
        seconds = latency_ms / 1000
        self.ack_sum_s += seconds
        for index, bound in enumerate(ACK_BUCKETS_S):
            if seconds <= bound:
                self.ack_bucket_counts[index] += 1
                break

    def ack_buckets(self) -> list[tuple[float, int]]:
        """Each bucket's upper bound (seconds) and its count (not cumulative)."""
        return list(zip(ACK_BUCKETS_S, self.ack_bucket_counts, strict=True))

    def percentile(self, fraction: float) -> float | None:
        if not self.latencies_ms:
            return None
        ordered = sorted(self.latencies_ms)
        return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 3)

    def as_json(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "answered": self.answered,
            "refusals": dict(self.refusals),
            "outcomes": dict(self.outcomes),
            "last_event_at": iso_utc(self.last_event_at) if self.last_event_at else None,
            "ack_latency_ms": {
                "p50": self.percentile(0.5),
                "p99": self.percentile(0.99),
                "mean": round(statistics.fmean(self.latencies_ms), 3)
                if self.latencies_ms
                else None,
            },
        }
