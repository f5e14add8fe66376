"""Every card state in zh: no English word left but the operation's own names, ids and free
text, the config's names, and the product's (tests/support/zh_sweep.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cards.render import render_card
from cards.stored_words import stored_said
from cards.strings import TEXT
from tests.support.card_gallery import PEOPLE, gallery
from tests.support.zh_sweep import card_texts, config_words, english_left, operation_words
from workers.domains.execution import Refusal
from workers.domains.finance.preflight import REFUSAL_FIELDS, PreflightRejection

NOW = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)
GALLERY = gallery()


@pytest.mark.parametrize("name", sorted(GALLERY))
def test_every_card_state_reads_in_chinese(name: str) -> None:
    view = GALLERY[name]
    card = render_card(view, lang="zh", now=NOW, people=PEOPLE)
    allowed = operation_words(view) | config_words(PEOPLE)
    shown = card_texts(card)
    assert shown, card
    left = {text: english_left(text, allowed) for text in shown}
    assert {text: words for text, words in left.items() if words} == {}, name


def test_the_enumerated_terms_and_the_title_are_worded() -> None:
    card = render_card(GALLERY["order-to-confirm"], lang="zh", now=NOW, people=PEOPLE)
    shown = card_texts(card)
    for said in ("买入 0.010 BTC-PERP", "买入", "限价", "撤销前有效"):
        assert said in shown, (said, shown)
    # English reads as stored
    english = card_texts(render_card(GALLERY["order-to-confirm"], now=NOW), "en_us")
    for said in ("BUY 0.010 BTC-PERP", "buy", "limit", "GTC"):
        assert said in english, (said, english)


def test_a_refusal_is_worded_from_its_code_and_values() -> None:
    card = render_card(GALLERY["order-refused-by-precheck"], lang="zh", now=NOW)
    said = "; ".join(card_texts(card))
    assert "限价 60000.25 不是最小价格单位 0.5 的整数倍" in said, said
    assert "以更正后的条款重新提交订单" in said, said
    english = "; ".join(
        card_texts(render_card(GALLERY["order-refused-by-precheck"], now=NOW), "en_us")
    )
    assert "limit price 60000.25 is not a multiple of the tick 0.5" in english, english


@pytest.mark.parametrize("code", sorted(REFUSAL_FIELDS))
def test_every_precheck_refusal_has_its_words_in_every_language(code: str) -> None:
    entry = TEXT.get(f"said.{code}")
    assert entry is not None and set(entry) == {"en", "zh"}, code
    # and the hint it gives by default
    assert stored_said(PreflightRejection(code, "").hint, "zh") != PreflightRejection(code, "").hint


def test_a_text_no_entry_matches_reads_as_stored() -> None:
    # a venue's own words: shown as the venue gave them
    assert stored_said("Order has invalid size", "zh") == "Order has invalid size"
    assert stored_said(Refusal("x", "y").hint, "zh") == "以更正后的条款重新提交操作"
