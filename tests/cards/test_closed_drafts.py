"""What a message card says once the draft is decided: the Sent card names whom it went to and
when (its Lark id a detail in the footer), and a closed draft says what became of the text
rather than "sent exactly as shown"."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cards.render import render_card
from cards.strings import LANGS, Lang
from tests.support.card_gallery import message
from tests.support.cards import plain_texts, said
from tests.support.projection import view_of

T0 = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)
SHANGHAI = ZoneInfo("Asia/Shanghai")
SENT = {
    "stage": "initial",
    "status": "sent",
    "detail": {"message_id": "om_sent42", "chat_id": "oc_acme"},
    "observed_at": "2025-03-01T10:02:00Z",
    "tone": "good",
    "final": True,
    "words": {"en": "Sent", "zh": "已发送"},
}


def card(given: dict[str, Any], lang: Lang = "en") -> dict[str, Any]:
    return render_card(view_of(given), lang=lang, now=T0, tz=SHANGHAI)


def label(shown: dict[str, Any]) -> str:
    [found] = [t for t in plain_texts(shown) if t.startswith(("Message text", "消息正文"))]
    return found


def test_the_sent_card_names_whom_it_went_to_and_when_not_the_lark_id() -> None:
    sent = card({**message(), "state": "outcome_observed", "outcome": SENT, "outcomes": [SENT]})
    texts = plain_texts(sent)
    assert "Sent to acme-supplier at 2025-03-01 18:02 CST" in texts
    assert not any("om_sent42" in text for text in texts if not text.startswith("Operation"))
    assert said(sent, "audit", "en_us") is not None
    assert str(said(sent, "audit")).endswith(" · message om_sent42")  # the id: a detail
    assert label(sent) == "Message text (1 line · 31 characters), as it was sent:"
    zh = card({**message(), "state": "outcome_observed", "outcome": SENT, "outcomes": [SENT]}, "zh")
    assert "已于 2025-03-01 18:02 CST 发送给 acme-supplier" in plain_texts(zh)


@pytest.mark.parametrize("state", ["expired", "cancelled", "superseded", "rejected"])
@pytest.mark.parametrize("lang", LANGS)
def test_a_closed_draft_says_its_text_was_not_sent(state: str, lang: Lang) -> None:
    closed = card({**message(), "state": state}, lang)
    words = label(closed)
    assert "sent exactly as shown" not in words and "按原样发送" not in words
    assert words.endswith("not sent:" if lang == "en" else "未发送：")


def test_a_waiting_draft_is_sent_exactly_as_shown_and_an_unknown_one_may_have_been() -> None:
    assert label(card(message())).endswith("sent exactly as shown:")
    unknown = {**SENT, "status": "unknown", "tone": "warn", "final": False, "detail": {}}
    unsure = card({**message(), "state": "claimed", "outcome": unknown, "outcomes": [unknown]})
    assert label(unsure).endswith("which may have been sent:")
