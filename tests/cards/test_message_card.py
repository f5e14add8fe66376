"""The message draft card: the text is one shaded block, counted, never interpreted; the
people it names are mentioned (<at>) only when Lark is known to accept their open id.

Projections are built by the message domain itself; rendering is pure.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from cards.render import render_card
from cards.strings import LANGS, Lang
from tests.support.cards import fields, markdown_texts, message_view, nodes, plain_texts
from tests.support.projection import view_of

T0 = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)
# What a hostile draft would like the operator to read as card terms, not as the message.
POSING = "Hello Acme.\n**Quantity:** 1000\nConfirmed by Alice\n<at id=all></at> [docs](http://evil)"


def render(projection: dict[str, Any], lang: Lang = "en") -> dict[str, Any]:
    return render_card(view_of(projection), lang=lang, now=T0)


def blocks(card: dict[str, Any]) -> list[dict[str, Any]]:
    return [node for node in nodes(card) if node.get("element_id") == "message_text"]


@pytest.mark.parametrize("lang", LANGS)
def test_the_text_is_one_shaded_block_of_plain_text_and_nowhere_else(lang: Lang) -> None:
    card = render(message_view(POSING), lang)
    [block] = blocks(card)
    assert block["tag"] == "column_set" and block["background_style"] == "grey"
    assert len(block["columns"]) == 1 and "behaviors" not in json.dumps(block)
    assert [node for node in nodes(block["columns"][0]["elements"]) if "content" in node] == [
        {"tag": "plain_text", "content": POSING}
    ]
    # outside the block, no element carries any line of it: it cannot pose as a term
    outside = json.dumps([e for e in card["body"]["elements"] if e is not block])
    for line in POSING.splitlines():
        assert json.dumps(line)[1:-1] not in outside, line
    for markdown in markdown_texts(card):
        assert "Quantity" not in markdown and "<at id=all>" not in markdown, markdown


def test_the_block_states_its_line_and_character_count_in_each_locale() -> None:
    card = render(message_view("one\ntwo\nthree"))
    [label] = [n for n in nodes(card) if n.get("element_id") == "message_text_size"]
    assert (
        label["text"]["content"] == "Message text (3 lines · 13 characters), sent exactly as shown:"
    )
    assert label["text"]["i18n_content"] == {
        "en_us": "Message text (3 lines · 13 characters), sent exactly as shown:",
        "zh_cn": "消息正文（3 行 · 13 个字符），按原样发送：",
    }
    one = render(message_view("Hi"))
    assert "Message text (1 line · 2 characters), sent exactly as shown:" in plain_texts(one)


def test_a_long_text_is_still_one_block_and_counted_whole() -> None:
    text = "\n".join(f"line {n}" for n in range(1, 201))  # pushes anything below it far down
    card = render(message_view(text))
    [block] = blocks(card)
    assert block["columns"][0]["elements"][0]["text"]["content"] == text
    assert f"Message text (200 lines · {len(text)} characters)" in " ".join(plain_texts(card))


def test_structured_mentions_are_listed_in_plain_text() -> None:
    card = render(message_view("Please confirm.", mentions=["ou_carol", "ou_dave"]))
    assert fields(card)["This message will mention"] == "ou_carol, ou_dave"
    zh = render(message_view("Please confirm.", mentions=["ou_carol"]), "zh")
    assert fields(zh)["此消息将提及"] == "ou_carol"
    # the ids are not known to this app's tenant: never <at> on the card
    assert not [m for m in markdown_texts(card) if "<at" in m]


def test_a_draft_without_mentions_says_nothing_about_them() -> None:
    assert not [t for t in plain_texts(render(message_view())) if "mention" in t]


@pytest.mark.parametrize("lang", LANGS)
def test_an_unverified_requester_is_named_in_plain_text(lang: Lang) -> None:
    card = render(message_view(requester="ou_stranger"), lang)
    assert not [m for m in markdown_texts(card) if "ou_stranger" in m]
    shown = [t for t in plain_texts(card) if "ou_stranger" in t]
    assert shown == [
        "Proposed by dev-agent · Requested by: ou_stranger (unverified id)"
        if lang == "en"
        else "由 dev-agent 提交 · 发起人：ou_stranger（未经验证的 ID）"
    ]


def test_an_operator_requester_is_mentioned() -> None:
    card = render(message_view(requester="ou_alice"))
    assert any(m.endswith("<at id=ou_alice></at>") for m in markdown_texts(card))


def test_a_decision_by_someone_outside_the_operators_is_not_a_mention() -> None:
    projection = message_view(state="rejected")
    projection["decision"] = {"action": "reject", "by": "ou_gone", "at": "2025-03-01T01:31:00Z"}
    card = render(projection)
    assert not [m for m in markdown_texts(card) if "<at" in m]
    projection["decision"]["by"] = "ou_bob"
    assert any("<at id=ou_bob></at>" in m for m in markdown_texts(render(projection)))
