"""Every state a card shows (tests/support/card_gallery.py), in both languages: Lark's JSON 2.0
rules as the sandbox enforces them, sizes well inside Lark's limits, and a header that says
the state in the words every surface uses.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from cards.render import render_card
from cards.strings import LANGS, LARK_LOCALE, Lang
from cards.vocabulary import headline
from larksandbox import ELEMENT_LIMIT, cardcheck, element_count
from tests.support.card_gallery import PEOPLE, gallery

NOW = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)
BODY_LIMIT = 30 * 1024  # Lark 230025: the request body
# "well inside": an ordinary card (no long message) uses under 40 % of the body limit and
# under 60 % of the element limit (a two-column row of terms is 11 elements: a column set,
# two columns, a label and a value in each, each with its text element). A third until every
# word on the card came in both languages (issue 36): the largest, a quorum's order card, is
# 10.3 KB of the 30 KB
BODY_SHARE = 0.4
ELEMENT_SHARE = 0.6


def request_body(card: dict[str, object]) -> bytes:
    """What the bot sends: the card as a JSON string inside the message body."""
    content = json.dumps(card, ensure_ascii=False, separators=(",", ":"))
    return json.dumps({"msg_type": "interactive", "content": content}, ensure_ascii=False).encode()


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", sorted(gallery()))
def test_every_state_is_a_valid_card_well_inside_the_limits(name: str, lang: Lang) -> None:
    view = gallery()[name]
    card = render_card(view, lang=lang, now=NOW, people=PEOPLE)
    assert cardcheck.check_card(card) is None
    assert cardcheck.unknown_mention(card, set(view.audience.operators)) is None
    assert len(request_body(card)) < BODY_LIMIT * BODY_SHARE, len(request_body(card))
    assert element_count(card) < ELEMENT_LIMIT * ELEMENT_SHARE, element_count(card)
    said = headline(view, PEOPLE)
    assert card["header"]["title"]["content"] == said.words(lang)
    assert card["header"]["title"]["i18n_content"] == {
        LARK_LOCALE[each]: said.words(each) for each in LANGS
    }
    assert card["header"]["template"] == said.tone
    assert ("text_tag_list" in card["header"]) is view.simulated


def test_the_header_changes_with_every_state() -> None:
    headers = {
        name: render_card(view, now=NOW, people=PEOPLE)["header"]["title"]["content"]
        for name, view in gallery().items()
    }
    # a reconciled fill and a straight one both read "Filled"; every other state its own words
    assert headers["order-filled"] == headers["order-reconciled"] == "Filled"
    del headers["order-reconciled"]
    assert len(set(headers.values())) == len(headers), headers
