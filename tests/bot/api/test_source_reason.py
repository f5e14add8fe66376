"""`source.reason`: why a proposer proposes, one readable line for the card.

Accepted as sent (trimmed), kept with the operation and shown in the projection; refused
with a 422 naming `source.reason` and a fix when it is empty, too long or carries
characters a card cannot show faithfully, and then nothing is filed.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from bot.api.intake import MAX_REASON_CHARS
from store import Store
from tests.support.api import post
from tests.support.factories import order_request

Client = TestClient[Any, Any]


async def test_a_reason_is_kept_and_shown_in_the_projection(api: Client, store: Store) -> None:
    body = order_request(source={"reason": "  Rebalance before the weekly close  "})
    status, reply = await post(api, body)
    assert status == 201, reply
    assert reply["source"]["reason"] == "Rebalance before the weekly close"
    stored = await store.get(reply["id"])
    assert stored is not None and stored.envelope.source.reason == reply["source"]["reason"]


async def test_the_reason_is_bound_into_the_confirm_digest(api: Client) -> None:
    _, with_one = await post(api, order_request(source={"reason": "hedge the book"}))
    _, with_another = await post(api, order_request(source={"reason": "close the book"}))
    _, without = await post(api, order_request())
    assert "reason" not in without["source"]
    digests = {
        with_one["confirm_digest"],
        with_another["confirm_digest"],
        without["confirm_digest"],
    }
    assert len(digests) == 3


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("   ", "is empty"),
        ("x" * (MAX_REASON_CHARS + 1), f"the cap is {MAX_REASON_CHARS}"),
        ("first line\nsecond line", "control or bidirectional-override"),
        ("pay now\u202e", "control or bidirectional-override"),
        ("a\u200bb", "control or bidirectional-override"),
    ],
    ids=["blank", "too long", "a line break", "a bidi override", "a zero width space"],
)
async def test_an_unreadable_reason_is_refused_and_nothing_is_filed(
    api: Client, store: Store, reason: str, words: str
) -> None:
    status, reply = await post(api, order_request(source={"reason": reason}))
    assert status == 422, reply
    [problem] = [f for f in reply["error"]["fields"] if f["field"] == "source.reason"]
    assert words in problem["reason"]
    assert problem["fix"]
    assert await store.count() == 0
