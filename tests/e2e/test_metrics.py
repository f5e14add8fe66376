"""`/metrics`: the series move as clicks, executions and texts happen (Prometheus format)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from larksandbox import answers
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory
from tests.support.waiting import eventually

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(stack: Stack) -> Samples:
    async with stack.http.get(f"{stack.bot_url}/metrics") as response:
        assert response.status == 200
        assert response.content_type == "text/plain"
        text = await response.text()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_move_with_clicks_executions_and_texts(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack("ws")
    before = await scrape(stack)
    for name in (
        "countersign_unknowns_outstanding",
        "countersign_outbox_backlog",
        "countersign_outbox_oldest_age_seconds",
        "countersign_delivery_failures",
    ):
        assert (name, ()) in before, name

    view, message_id = await stack.offered(order_request("metrics"))
    button = answers.find_button(stack.card(message_id), "confirm")
    assert button is not None and button.value is not None
    assert (await stack.click(message_id, "ou_alice"))["toast"]["type"] == "success"
    late = await stack.click(message_id, "ou_bob", value=dict(button.value))  # a stale card
    assert late["toast"]["type"] == "error"
    status, sent = await stack.control(
        "POST",
        "/chats/oc_ops/messages",
        {"sender": "ou_alice", "text": "help", "mention_bot": True},
    )
    assert status == 201, sent

    async def settled() -> bool:
        _, fresh = await stack.api("GET", f"/api/v1/operations/{view['id']}")
        return fresh["outcome"] is not None

    await eventually(
        lambda: any(m.parent_id == sent["message_id"] for m in stack.state.messages.values()),
        woken_by=stack.state,
    )

    await eventually(settled)
    after = await scrape(stack)

    def moved(name: str, by: float = 1, **labels: str) -> bool:
        return value(after, name, **labels) - value(before, name, **labels) == by

    assert moved("countersign_decisions_total", entry="lark", action="confirm")
    assert moved("countersign_claims_total", entry="lark")
    assert moved("countersign_callbacks_total", result="refused", reason="already_claimed")
    assert moved("countersign_callback_ack_seconds_count", by=2)
    assert value(after, "countersign_callback_ack_seconds_sum") > 0
    assert moved("countersign_executions_total", outcome="filled")
    assert value(after, "countersign_text_events_total", outcome="received") >= 1
    # PostgreSQL: the listener other replicas wake this one through (SQLite has none)
    on_postgresql = stack.store.engine.dialect.name == "postgresql"
    assert value(after, "countersign_due_listener_connects_total") == int(on_postgresql)
