"""A message draft's text at the proposal API: what cannot be shown faithfully is refused.

Every refusal is a 422 naming payload.text (or payload.mentions), the code point as U+XXXX
and where it is, with a fix; nothing is stored. What a careful operator can read is accepted
exactly as sent (CR LF becomes LF).
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from store import Store
from tests.support.api import post
from tests.support.factories import message_request

Client = TestClient[Any, Any]


def with_text(text: str, **payload: Any) -> dict[str, Any]:
    body = message_request()
    body["payload"].update(text=text, **payload)
    return body


# case -> (text, the words the reason must contain)
REFUSED_TEXT: dict[str, tuple[str, tuple[str, ...]]] = {
    "zero width space": ("Pay\u200b 42", ("U+200B", "ZERO WIDTH SPACE", "character 4", "line 1")),
    "zero width non-joiner": ("a\u200cb", ("U+200C", "character 2")),
    "zero width joiner between letters": ("a\u200db", ("U+200D", "character 2")),
    "word joiner": ("x\u2060", ("U+2060", "character 2")),
    "byte order mark": ("\ufeffHello", ("U+FEFF", "character 1")),
    "right-to-left override": ("Pay 42\u202e00", ("U+202E", "character 7")),
    "left-to-right mark": ("a\u200eb", ("U+200E",)),
    "right-to-left mark": ("a\u200fb", ("U+200F",)),
    "arabic letter mark": ("a\u061cb", ("U+061C",)),
    "bidi isolate": ("a\u2067b\u2069", ("U+2067",)),
    "bidi embedding": ("a\u202ab", ("U+202A",)),
    "soft hyphen": ("pay\u00admore", ("U+00AD",)),
    "mongolian vowel separator": ("a\u180eb", ("U+180E",)),
    "tag characters": ("hi\U000e0041\U000e0042", ("U+E0041", "character 3")),
    "interlinear annotation": ("a\ufff9b", ("U+FFF9",)),
    "bell control character": ("ring\u0007", ("U+0007", "control character")),
    "nul": ("a\u0000b", ("U+0000",)),
    "escape (terminal colours)": ("\u001b[31mred", ("U+001B", "character 1")),
    "c1 control": ("a\u0085b", ("U+0085",)),
    "line separator": ("one\u2028two", ("U+2028",)),
    "paragraph separator": ("one\u2029two", ("U+2029",)),
    "private use": ("logo \ue000", ("U+E000",)),
    "position on a later line (CR LF counted once)": (
        "first\r\nsecond \u200b",
        ("U+200B", "line 2, column 8"),
    ),
    "only blank-looking characters": ("\u2800 \u2800", ("empty",)),
    "variation selectors smuggling bytes": (
        "Pay 100" + "\U000e0100" * 3,
        ("U+E0100", "character 8"),
    ),
    "a variation selector after a letter": ("a\ufe0fb", ("U+FE0F", "character 2")),
    "hangul filler": ("hi\u3164", ("U+3164", "character 3")),
    "combining grapheme joiner": ("a\u034fb", ("U+034F",)),
    "stacked combining marks": ("a" + "\u0301" * 6, ("6 combining marks", "character 2")),
    "only whitespace": (" \n\t ", ("empty",)),
    "zero width joiner after an emoji but before a letter": (
        "\U0001f469\u200dx",
        ("U+200D", "character 2"),
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED_TEXT))
async def test_a_text_that_cannot_be_shown_faithfully_is_refused(
    api: Client, store: Store, case: str
) -> None:
    text, words = REFUSED_TEXT[case]
    status, reply = await post(api, with_text(text))
    assert status == 422, reply
    [problem] = [f for f in reply["error"]["fields"] if f["field"] == "payload.text"]
    assert all(word in problem["reason"] for word in words), problem
    assert problem["fix"] and "correct this value" not in problem["fix"], problem
    assert await store.count() == 0


async def test_more_than_one_hidden_character_names_the_first_and_counts_the_rest(
    api: Client, store: Store
) -> None:
    status, reply = await post(api, with_text("a\u200bb\u200bc\u2060"))
    assert status == 422
    [problem] = reply["error"]["fields"]
    assert "U+200B" in problem["reason"] and "2 more" in problem["reason"], problem
    assert await store.count() == 0


# the markup Lark interprets in a text message: mentions above all (<at user_id="all"> pings
# everyone in the counterparty's chat), style tags and links that hide their address
REFUSED_MARKUP: dict[str, tuple[str, str]] = {
    "mention everyone": ('Hi <at user_id="all"></at>', "mention"),
    "mention everyone, card form": ("Hi <at id=all></at>", "mention"),
    "mention by open id": ('<at open_id="ou_x">Boss</at> ok', "mention"),
    "mention by email": ("<at email=ceo@acme.com></at>", "mention"),
    "mention with spaces and capitals": ('< AT user_id="all" >', "mention"),
    "closing mention tag alone": ("ok </at>", "mention"),
    "bold tag": ("<b>URGENT</b> pay now", "markup"),
    "anchor tag": ('<a href="http://evil">invoice</a>', "markup"),
    "markdown link hiding its address": ("see [the invoice](http://evil/x)", "link"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_MARKUP))
async def test_lark_markup_in_the_text_is_refused(api: Client, store: Store, case: str) -> None:
    text, word = REFUSED_MARKUP[case]
    status, reply = await post(api, with_text(text))
    assert status == 422, reply
    [problem] = [f for f in reply["error"]["fields"] if f["field"] == "payload.text"]
    assert word in problem["reason"] and "line 1, column" in problem["reason"], problem
    assert problem["fix"] and "correct this value" not in problem["fix"], problem
    assert await store.count() == 0


ACCEPTED_TEXT: dict[str, tuple[str, str]] = {
    "family emoji (zero width joiners between pictographs)": (
        "Team: \U0001f468\u200d\U0001f469\u200d\U0001f467",
        "Team: \U0001f468\u200d\U0001f469\u200d\U0001f467",
    ),
    "woman technologist with a skin tone": (
        "\U0001f469\U0001f3fd\u200d\U0001f4bb done",
        "\U0001f469\U0001f3fd\u200d\U0001f4bb done",
    ),
    "heart on fire (variation selector before the joiner)": (
        "\u2764\ufe0f\u200d\U0001f525",
        "\u2764\ufe0f\u200d\U0001f525",
    ),
    "CR LF and lone CR become LF; tabs stay": ("a\r\nb\rc\td", "a\nb\nc\td"),
    "text that merely looks like markup stays": (
        "If price < limit and size > 0, email <ops@acme.com> or see https://acme.com/[1]",
        "If price < limit and size > 0, email <ops@acme.com> or see https://acme.com/[1]",
    ),
    "markdown that only a card would interpret is sent as written": (
        "**Quantity:** 1000\nConfirmed by Alice",
        "**Quantity:** 1000\nConfirmed by Alice",
    ),
    "Chinese and a plain emoji": ("周五交货 \U0001f69a", "周五交货 \U0001f69a"),
    "a keycap emoji keeps its presentation selector": (
        "press 1\ufe0f\u20e3",
        "press 1\ufe0f\u20e3",
    ),
    "Vietnamese and Hindi keep their combining marks": (
        "Tiếng Việt, नमस्ते",
        "Tiếng Việt, नमस्ते",
    ),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED_TEXT))
async def test_a_readable_text_is_kept_exactly(api: Client, case: str) -> None:
    text, stored = ACCEPTED_TEXT[case]
    status, view = await post(api, with_text(text))
    assert status == 201, view
    assert view["payload"]["text"] == stored
    assert {t["name"]: t["value"] for t in view["terms"]["terms"]}["text"] == stored


async def test_structured_mentions_are_bound_into_the_terms(api: Client, store: Store) -> None:
    status, view = await post(api, with_text("Please confirm.", mentions=["ou_carol", "ou_dave"]))
    assert status == 201, view
    assert view["payload"]["mentions"] == ["ou_carol", "ou_dave"]
    terms = {t["name"]: t["value"] for t in view["terms"]["terms"]}
    assert terms["mentions"] == ["ou_carol", "ou_dave"]
    # other mentions are other terms: a new digest, never the same operation
    _, other = await post(api, with_text("Please confirm.", mentions=["ou_carol"]))
    assert other["confirm_digest"] != view["confirm_digest"]
    # without mentions the payload is what it always was (no empty field appears)
    _, plain = await post(api, with_text("Please confirm."))
    assert "mentions" not in plain["payload"]
    assert "mentions" not in {t["name"] for t in plain["terms"]["terms"]}


REFUSED_MENTIONS: dict[str, tuple[Any, str]] = {
    "everyone": (["all"], "payload.mentions[0]"),
    "not an open id": (["ceo@acme.com"], "payload.mentions[0]"),
    "markup smuggled as an id": (['ou_x"></at><at user_id="all'], "payload.mentions[0]"),
    "listed twice": (["ou_carol", "ou_carol"], "payload.mentions"),
    "too many": ([f"ou_p{n}" for n in range(21)], "payload.mentions"),
    "not a list": ("ou_carol", "payload.mentions"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_MENTIONS))
async def test_bad_mentions_are_refused(api: Client, store: Store, case: str) -> None:
    mentions, field = REFUSED_MENTIONS[case]
    status, reply = await post(api, with_text("Please confirm.", mentions=mentions))
    assert status == 422, reply
    assert field in {f["field"] for f in reply["error"]["fields"]}, reply
    assert await store.count() == 0


async def test_hidden_characters_outside_the_text_are_refused_too(
    api: Client, store: Store
) -> None:
    body = message_request(source={"context": {"ticket": "T-1\u200b", "thread": "a\u061cb"}})
    status, reply = await post(api, body)
    assert status == 422, reply
    named = {f["field"] for f in reply["error"]["fields"]}
    assert {"source.context.ticket", "source.context.thread"} <= named
    assert await store.count() == 0
