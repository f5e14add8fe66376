"""What people type goes out as text, never markup (issue 30, item 4): the one rule
(cards/plain_text.py) over every outbound path's inputs, then each path's renderer using it.

The attack texts are the ones the outside test used: `<at user_id="all">` (a mention of
the whole chat), tags and links Lark renders, a right-to-left override, 5,000 characters.
What Lark would make of a text is read by the sandbox's model of Lark's parser
(larksandbox/textmarkup.py), so "not a mention" is Lark's verdict, not a string search.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cards.conclusion import Voice, reply_text
from cards.plain_text import (
    NAME_MAX_CHARS,
    TITLE_MAX_CHARS,
    WORDS_MAX_CHARS,
    people_text,
)
from cards.reminder import reminder_text
from cards.render import render_card
from larksandbox import read_text
from tests.support.cards import markdown_texts, message_view, nodes, said
from tests.support.conclusions import outcome, projection
from tests.support.projection import view_of
from workers.domains.message.runner import sent_receipt_text
from workers.domains.message.schema import MessageSendV1, filing_receipt_text

EVERYONE = '<at user_id="all"></at>'
ONE_PERSON = "<at user_id=ou_mallory>boss</at>"
LINK = "[your invoice](https://evil.example/pay)"
ANCHOR = '<a href="https://evil.example/pay">invoice</a>'
RLO = "\u202e"
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
INVISIBLE = "\u200b\u2060\ufeff\u00ad\ufe0f\u2028\x07\x00"
STYLE = "<b>URGENT</b>"
NAMES = {"ou_mallory": "Mallory"}


def lark_reads(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(mentions, links) Lark would make of this text message content."""
    reading = read_text(text, NAMES)
    return reading.mentions, reading.links


def test_the_attack_texts_are_markup_to_lark() -> None:
    """The premise, checked on the model the tests trust: each of these would act."""
    assert lark_reads(f"x {EVERYONE}")[0] == ("all",)
    assert lark_reads(ONE_PERSON)[0] == ("ou_mallory",)
    assert lark_reads(LINK)[1] == ("https://evil.example/pay",)
    assert lark_reads(ANCHOR)[1] == ("https://evil.example/pay",)
    assert read_text(STYLE, NAMES).shown == "URGENT"


# (path, what someone typed, the cap that path uses, several lines allowed)
EVERY_PATH: list[tuple[str, str, int, bool]] = [
    ("reject reason (card, reply)", f"no {EVERYONE} {RLO}gnp.exe", WORDS_MAX_CHARS, False),
    ("request-changes note (card, reply)", f"{ONE_PERSON} {LINK}", WORDS_MAX_CHARS, False),
    ("proposer's why (card)", f"{ANCHOR}{BIDI}", WORDS_MAX_CHARS, False),
    ("venue's reason (card, reply)", f"{STYLE}{INVISIBLE}", WORDS_MAX_CHARS, False),
    ("title (status, pending, reply, reminder)", f"{EVERYONE}{'T' * 500}", TITLE_MAX_CHARS, False),
    ("a person's name (status, reply, receipts)", f"{ONE_PERSON}{RLO}", NAME_MAX_CHARS, False),
    ("a whole conclusion reply", f"Reason: {EVERYONE}\n{LINK}\n{'x' * 5000}", 1500, True),
]


@pytest.mark.parametrize(
    ("path", "typed", "cap", "lines"), EVERY_PATH, ids=[p[0] for p in EVERY_PATH]
)
def test_every_path_sends_text_lark_cannot_turn_into_markup(
    path: str, typed: str, cap: int, lines: bool
) -> None:
    shown = people_text(typed, cap, "en", lines=lines)
    # no mention, no link, no style: Lark shows exactly these characters
    assert lark_reads(shown) == ((), ())
    assert read_text(shown, NAMES).shown == shown
    # nothing hidden or reordering survives; what was there is visibly replaced
    assert not any(char in shown for char in BIDI + INVISIBLE.replace("\ufe0f", "")), path
    if any(char in typed for char in BIDI + INVISIBLE):
        assert "\ufffd" in shown
    # the words are still readable, and a cut is announced
    assert "user_id" in shown or "evil.example" in shown or "URGENT" in shown
    if len(typed) > cap:
        head, note = shown.split("…", 1)
        assert len(head) <= cap and note.startswith(" (cut: the first")
        assert f"of {len(typed)}" in note or lines  # (a reply counts after line breaks)
    else:
        assert "…" not in shown
    assert (shown.count("\n") > 0) == (lines and "\n" in typed)


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        ("Price moved 2%; wait", "Price moved 2%; wait"),  # ordinary words stay as they are
        ("a < b and c > d", "a \uff1c b and c \uff1e d"),
        ("R&D &amp; co", "R&D \uff06amp; co"),
        ("tab\there", "tab here"),
        ("line\nbreak", "line break"),
        ("\u0645\u0631\u062d\u0628\u0627 hello", "\u0645\u0631\u062d\u0628\u0627 hello"),
        (
            "\U0001f469\u200d\U0001f4bb \u2764\ufe0f ok",
            "\U0001f469\u200d\U0001f4bb \u2764\ufe0f ok",
        ),
        ("e\u0301\u0301\u0301\u0301\u0301\u0301\u0301", "e\u0301\u0301\u0301\u0301\ufffd"),
        ("a\u200bb", "a\ufffdb"),
    ],
)
def test_the_rule_changes_only_what_must_change(typed: str, shown: str) -> None:
    assert people_text(typed, 100) == shown


def test_a_cut_is_at_a_grapheme_and_says_so_in_the_readers_language() -> None:
    typed = "\U0001f469\u200d\U0001f4bb" * 40  # 3 code points each
    en = people_text(typed, 10)
    assert (
        en == "\U0001f469\u200d\U0001f4bb" * 3 + "… (cut: the first 9 of 120 characters are shown)"
    )
    zh = people_text("字" * 50, 10, "zh")
    assert zh == "字" * 9 + "… （已截断：显示 50 个字符中的前 9 个）"


def test_a_cap_below_one_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="cap must be at least 1"):
        people_text("x", 0)


# -- each path's renderer uses the rule ---------------------------------------------------------

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_a_conclusion_reply_carries_the_reason_as_text_not_a_mention() -> None:
    rejected = outcome(status="rejected", detail={"reason": f"{EVERYONE} {LINK} {RLO}x"})
    reply = reply_text(projection(), rejected)
    assert lark_reads(reply) == ((), ())
    assert 'user_id="all"' in reply and RLO not in reply


def test_a_conclusion_reply_names_people_as_text() -> None:
    view = projection(decision={"action": "reject", "by": "ou_bob", "at": "2026-12-03T04:00:00Z"})
    reply = reply_text(view, outcome(status="rejected"), Voice(people={"ou_bob": EVERYONE}))
    assert lark_reads(reply) == ((), ())


def test_a_reminder_mentions_only_the_approvers_it_waits_for() -> None:
    view = view_of(
        {
            "kind": "finance.order",
            "terms": {"title": f"{EVERYONE} {LINK}"},  # a title shaped by a hostile proposer
            "expires_at": (NOW + timedelta(seconds=299)).isoformat().replace("+00:00", "Z"),
            "approval": {"required": 2, "approvers": ["ou_alice", "ou_bob"], "confirmed_by": []},
            "source": {"proposer": "dev-agent", "requester_open_id": None},
        }
    )
    said = reminder_text(view, lang="en", now=NOW, tz=UTC)
    assert lark_reads(said) == (("ou_alice", "ou_bob"), ())


def _draft(**fields: Any) -> MessageSendV1:
    values = {"destination": "acme", "counterparty": "Acme", "text": "hi", "priority": "P2"}
    # as stored under older rules: the schema would refuse these names today
    return MessageSendV1.model_construct(**{**values, **fields})


def test_receipts_carry_no_markup_whatever_the_names() -> None:
    hostile = _draft(counterparty=EVERYONE, destination=LINK)
    filed = filing_receipt_text(hostile)
    sent = sent_receipt_text(hostile, "om_1", f"Alice, {ONE_PERSON}", "01DECISION")
    for receipt in (filed, sent):
        assert lark_reads(receipt) == ((), ()), receipt


def test_the_card_shows_reasons_as_plain_text_without_bidi_controls() -> None:
    view = message_view(state="rejected")
    view["decision"] = {
        "action": "reject",
        "by": "ou_bob",
        "at": "2025-03-01T01:35:00Z",
        "reason": f"{RLO}{EVERYONE}{'r' * 2000}",
    }
    view["source"]["reason"] = f"why {BIDI}"
    card = render_card(view_of(view), now=NOW)
    words = [
        text
        for node in nodes(card)
        if isinstance(node.get("content"), str)
        for text in (node["content"], *node.get("i18n_content", {}).values())
    ]
    everything = "\n".join(words)
    assert not any(char in everything for char in BIDI)
    assert not any("user_id" in markdown for markdown in markdown_texts(card))
    reason = said(card, "decision_reason")
    assert reason is not None and "user_id" in reason and "r" * WORDS_MAX_CHARS not in reason
    assert "(cut: the first" in reason
    zh = said(card, "decision_reason", "zh_cn")
    assert zh is not None and "已截断" in zh
