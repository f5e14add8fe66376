"""`/metrics` in the Prometheus text format (prometheus-client).

Built at scrape time from what the consumers and workers already count (their stats
objects), what every entry decided (bot/decide/counters.py, by entry: the Lark card, the
web page) and the store's summary refreshed in the background (unknowns, card backlog,
deliveries; bot/api/summary.py, with its age), so there is one source for `/readyz` and
`/metrics`, no statement on the scrape, and no process-global registry to share between
bots in one process.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from bot.api.health import ConsumerCounts, Health
from bot.decide.counters import DecisionCounters
from store import Entry

PREFIX = "countersign"


class _Snapshot(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def _callbacks(stats: ConsumerCounts) -> list[Metric]:
    callbacks = CounterMetricFamily(
        f"{PREFIX}_callbacks",
        "Card callbacks answered, by result and refusal reason",
        labels=["result", "reason"],
    )
    refused = sum(stats.refusals.values())
    for reason, count in sorted(stats.refusals.items()):
        callbacks.add_metric(["refused", reason], count)
    for outcome, count in sorted(stats.outcomes.items()):
        if outcome == "answered":  # the rest of "answered" were decisions, not refusals
            count = max(0, count - refused)
            outcome = "decided"
        callbacks.add_metric([outcome, ""], count)
    ack = HistogramMetricFamily(
        f"{PREFIX}_callback_ack_seconds", "Callback push to answer, as the bot measures it"
    )
    cumulative, buckets = 0, []
    for bound, count in stats.ack_buckets():
        cumulative += count
        buckets.append((str(bound), cumulative))
    buckets.append(("+Inf", stats.answered))
    ack.add_metric([], buckets, sum_value=stats.ack_sum_s)
    return [callbacks, ack]


# the entries a person decides through (an auto-send is no one's decision)
DECIDING = (Entry.LARK, Entry.WEB)


def _decisions(counters: DecisionCounters) -> list[Metric]:
    decisions = CounterMetricFamily(
        f"{PREFIX}_decisions",
        "Decisions committed (a claim, a counted confirmation, a reject), by entry and action",
        labels=["entry", "action"],
    )
    for (entry, action), count in sorted(counters.decisions.items()):
        decisions.add_metric([entry.value, action], count)
    claims = CounterMetricFamily(
        f"{PREFIX}_claims",
        "Claims committed (one per operation, by the confirmation that completed it), by entry",
        labels=["entry"],
    )
    for entry in DECIDING:
        claims.add_metric([entry.value], counters.claims[entry])
    refusals = CounterMetricFamily(
        f"{PREFIX}_refusals",
        "Clicks and posts recorded as refused, by entry and reason",
        labels=["entry", "reason"],
    )
    for (entry, reason), count in sorted(counters.refusals.items()):
        refusals.add_metric([entry.value, reason.value], count)
    return [decisions, claims, refusals]


def _text(stats: ConsumerCounts) -> list[Metric]:
    events = CounterMetricFamily(
        f"{PREFIX}_text_events",
        "Text messages received by the text listener, by outcome",
        labels=["outcome"],
    )
    events.add_metric(["received"], stats.events)
    for outcome, count in sorted(stats.outcomes.items()):
        events.add_metric([outcome], count)
    return [events]


async def metrics_text(health: Health) -> bytes:
    report = (await health.report())[1]["components"]
    families = _decisions(health.decisions)
    if health.callbacks is not None:
        families += _callbacks(health.callbacks.stats)
    if health.text is not None:
        families += _text(health.text.stats)
    executor = health.executor
    if executor is not None:
        executions = CounterMetricFamily(
            f"{PREFIX}_executions",
            "Outcomes recorded by the executor, by status",
            labels=["outcome"],
        )
        for status, count in sorted(executor.outcomes.items()):
            executions.add_metric([status], count)
        failed = CounterMetricFamily(
            f"{PREFIX}_executor_failed_passes",
            "Executor passes that raised (after max_failed_passes in a row it concludes)",
            value=executor.failures,
        )
        families += [executions, failed]
    listener = report["due_listener"]
    if listener["state"] != "off":
        heard = CounterMetricFamily(
            f"{PREFIX}_due_notifications",
            "Wake-ups heard from PostgreSQL notifications of due work (any replica's), by worker",
            labels=["worker"],
        )
        for worker, count in listener["heard"].items():
            heard.add_metric([worker], count)
        connects = CounterMetricFamily(
            f"{PREFIX}_due_listener_connects",
            "Connections the due-work listener opened (more than one: it reconnected)",
            value=listener["connects"],
        )
        families += [heard, connects]
    gauges: list[tuple[str, str, Any]] = [
        (
            "store_summary_age_seconds",
            "Age of the store's summary the gauges below come from (refreshed in the background)",
            health.summary.age_s(),
        ),
        (
            "unknowns_outstanding",
            "Submissions whose outcome is unknown and being reconciled",
            report["executor"].get("unknown_outstanding"),
        ),
        (
            "outbox_backlog",
            "Cards waiting to be sent or patched",
            report["outbox"].get("card_backlog"),
        ),
        (
            "outbox_oldest_age_seconds",
            "Age of the oldest card waiting",
            report["outbox"].get("oldest_age_s") or 0,
        ),
        (
            "card_delivery_failed",
            "Cards that could not be delivered for good",
            report["outbox"].get("card_delivery_failed"),
        ),
        (
            "unresolved_outstanding",
            "Operations whose newest outcome is unresolved, waiting for a person",
            report["attention"].get("unresolved"),
        ),
        (
            "delivery_failures",
            "Result deliveries (replies, webhooks) failed for good, awaiting an operator",
            report["deliveries"].get("failed"),
        ),
        (
            "deliveries_pending",
            "Result deliveries not yet delivered",
            report["deliveries"].get("pending"),
        ),
    ]
    for name, help_text, value in gauges:
        if isinstance(value, int | float):
            families.append(GaugeMetricFamily(f"{PREFIX}_{name}", help_text, value=value))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(families))
    return generate_latest(registry)
