"""The text listener's failures (issue 30): a transient one is tried again with a doubling,
capped backoff, at most max_tries times in all, then recorded failed with its reason; a
terminal one and a malformed event are recorded failed at once, and only the first record
counts (a re-push is not logged again). Real store, both backends."""

from __future__ import annotations

from typing import Any

from bot.ingress.envelope_shape import text_envelope_problem, text_key
from bot.ingress.stats import ConsumerStats
from bot.ingress.text_retries import MAX_RETRY_S, TextRetries, retry_in
from bot.lark.tokens import LarkApiError
from store import FAILED, RECEIVED, Inbox, Store

KIND = "text"


def text_event(message_id: str = "om_1") -> dict[str, Any]:
    return {
        "schema": "2.0",
        "header": {"event_id": "ev_1", "event_type": "im.message.receive_v1"},
        "event": {
            "sender": {"sender_id": {"open_id": "ou_bob"}, "sender_type": "user"},
            "message": {
                "message_id": message_id,
                "chat_id": "oc_ops",
                "chat_type": "group",
                "content": '{"text":"help"}',
                "mentions": [{"key": "@_user_1", "id": {"open_id": "ou_bot"}}],
            },
        },
    }


def test_the_backoff_doubles_and_is_capped() -> None:
    assert [retry_in(n) for n in (1, 2, 3)] == [2.0, 4.0, 8.0]
    assert retry_in(50) == MAX_RETRY_S


def test_lark_shaped_text_passes_and_each_misshape_is_named_by_place() -> None:
    assert text_envelope_problem(text_event()) is None
    shapes = {
        "event.message is not an object": ("message", ["help"]),
        "event.message.mentions is not a list of objects": ("mentions", ["@_user_1"]),
        "event.message.content is not a string": ("content", {"text": "help"}),
        "event.message.message_id is missing": ("message_id", 7),
    }
    for problem, (field, value) in shapes.items():
        envelope = text_event()
        message = envelope["event"]["message"]
        if field == "message":
            envelope["event"]["message"] = value
        else:
            message[field] = value
        assert text_envelope_problem(envelope) == problem
    assert text_key({"header": {"event_id": "ev_9"}, "event": {"message": []}}) == "ev_9"
    assert text_key({}) is None


async def test_a_transient_failure_is_tried_max_tries_times_then_recorded(store: Store) -> None:
    inbox, stats = Inbox(store), ConsumerStats()
    envelope = text_event()
    await inbox.receive(KIND, "om_1", envelope)
    retries = TextRetries(store, stats, 3, KIND)
    requeued: list[Any] = []
    for _ in range(2):
        await retries.failed(envelope, ConnectionError("store down"), requeued.append)
    entry = await inbox.get(KIND, "om_1")
    assert entry is not None and entry.status == RECEIVED and stats.outcomes["retried"] == 2

    await retries.failed(envelope, ConnectionError("store down"), requeued.append)
    entry = await inbox.get(KIND, "om_1")
    assert entry is not None and entry.status == FAILED
    assert entry.answer == {"failed": "ConnectionError: store down"}
    assert stats.outcomes["retried"] == 2 and stats.outcomes["failed"] == 1


async def test_a_terminal_lark_error_is_recorded_at_once_and_only_once(store: Store) -> None:
    inbox, stats = Inbox(store), ConsumerStats()
    envelope = text_event("om_gone")
    await inbox.receive(KIND, "om_gone", envelope)
    retries = TextRetries(store, stats, 3, KIND)
    refused = LarkApiError(230011, "message recalled", http_status=400)
    await retries.failed(envelope, refused, lambda _e: None)
    await retries.failed(envelope, refused, lambda _e: None)  # a second worker's try
    entry = await inbox.get(KIND, "om_gone")
    assert entry is not None and entry.status == FAILED and "230011" in str(entry.answer)
    assert stats.outcomes["retried"] == 0 and stats.outcomes["failed"] == 1


async def test_a_malformed_event_is_refused_before_any_try(store: Store) -> None:
    stats = ConsumerStats()
    retries = TextRetries(store, stats, 3, KIND)
    envelope = text_event("om_bad")
    envelope["event"]["message"]["chat_id"] = 12
    assert await retries.refused(envelope) and await retries.refused(envelope)
    entry = await Inbox(store).get(KIND, "om_bad")
    assert entry is not None and entry.status == FAILED and entry.tries == 0
    assert stats.outcomes["malformed"] == 2 and stats.outcomes["failed"] == 1
    assert not await retries.refused(text_event("om_fine"))
