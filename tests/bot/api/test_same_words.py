"""The card and the dashboard say the same words for every state an operation can be in
(tests/support/card_gallery.py), in both languages: the card's header is the dashboard's
headline chip, and every outcome title on the card is on the dashboard's detail page.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.api.dashboard_html import detail_html
from bot.api.dashboard_view import outcome_details, outcome_text
from cards.outcomes import outcome_lines, seen_of
from cards.render import render_card
from cards.strings import LANGS, Lang
from cards.world import world_of
from tests.support.card_gallery import PEOPLE, gallery
from tests.support.cards import markdown_texts, plain_texts
from tests.support.dashboard import text_of

NOW = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)
NO_RECORDS = {"confirmations": [], "attempt": None, "card": [], "deliveries": []}


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", sorted(gallery()))
def test_the_card_and_the_dashboard_say_the_same_words(name: str, lang: Lang) -> None:
    view = gallery()[name]
    card = render_card(view, lang=lang, now=NOW, people=PEOPLE)
    page = detail_html(view, NO_RECORDS, lang, "-", people=PEOPLE, now=NOW)
    assert text_of(page, "headline") == card["header"]["title"]["content"]
    shown = text_of(page, "outcome")
    on_card = " ".join(markdown_texts(card) + plain_texts(card))
    for title in filter(None, outcome_text(view, lang).split(" → ")):
        assert title in shown and f"**{title}**" in on_card, title
    for outcome in view.outcomes:  # each outcome's details, word for word
        seen = seen_of(view, outcome)  # whom a message went to and when, in the same zone
        details = outcome_details(outcome.detail, lang, seen)
        lines = outcome_lines(outcome, world=world_of(view), lang=lang, seen=seen)
        if details:
            assert lines[1]["text"]["content"] == details
            assert details in page.replace("&#39;", "'")
