"""Cards read a kind's words from the data, never by kind: the headlines and title from the
projection's `words`, a term's label from the term, an outcome's words and tone from its row.
A kind no catalogue has heard of reads in its own words; a projection filed before it carried
words reads in words for any operation. Pure."""

from __future__ import annotations

import copy
from typing import Any

from cards.render import render_card
from cards.vocabulary import headline, title_of
from kernel.timeutil import parse_iso_utc
from tests.support.card_gallery import PEOPLE, concluded, order
from tests.support.cards import fields
from tests.support.projection import view_of

NOW = parse_iso_utc("2025-03-01T01:30:00Z")
WORDS = {
    "title": {"en": "Switch a lamp", "zh": "开关灯"},
    "waiting": {"en": "Lamp to switch", "zh": "待开关的灯"},
    "partly": {"en": "Lamp: {count} of {required}", "zh": "灯：{count}/{required}"},
}


def lamp() -> dict[str, Any]:
    """An operation of a kind only its projection knows."""
    view = order()
    view["kind"] = "toy.lamp"
    view["terms"] = {
        "terms": [
            {"name": "lamp", "value": "porch", "label": {"en": "Which lamp", "zh": "哪盏灯"}},
            {"name": "colour_temp", "value": "2700K"},  # no label: its name, humanized
        ],
        "words": WORDS,
    }
    view["approval"]["notional"] = None
    return view


def test_an_unknown_kind_reads_in_the_words_its_projection_carries() -> None:
    view = lamp()
    card = render_card(view_of(view), now=NOW, people=PEOPLE)
    assert card["header"]["title"]["content"] == "Lamp to switch"
    assert card["header"]["title"]["i18n_content"]["zh_cn"] == "待开关的灯"
    assert card["header"]["subtitle"]["content"] == "Switch a lamp"  # no projection title
    assert fields(card)["Which lamp"] == "porch" and fields(card)["Colour temp"] == "2700K"
    zh = render_card(view_of(view), lang="zh", now=NOW, people=PEOPLE)
    assert fields(zh)["哪盏灯"] == "porch"

    view["approval"].update(required=2, confirmed_by=["ou_alice"])
    assert headline(view_of(view), PEOPLE).every_lang() == {"en": "Lamp: 1 of 2", "zh": "灯：1/2"}


def test_an_outcome_reads_in_its_stored_words_and_tone() -> None:
    view = lamp()
    done = concluded(view, ("initial", "lit", {}))
    stored = {"en": "Lamp lit", "zh": "灯已点亮"}
    done["outcome"].update(words=stored, tone="working", final=False)
    card = render_card(view_of(done), now=NOW, people=PEOPLE)
    assert card["header"]["title"]["content"] == "Lamp lit"
    assert card["header"]["template"] == "wathet"  # working, whatever "lit" says elsewhere
    reconciled = copy.deepcopy(done)
    reconciled["outcomes"][-1].update(stage="reconciled", words=stored)
    lines = render_card(view_of(reconciled), lang="zh", now=NOW, people=PEOPLE)["body"]["elements"]
    assert any("核对结果：灯已点亮" in str(each.get("content")) for each in lines)


def test_a_projection_filed_before_words_travelled_reads_for_any_operation() -> None:
    view = lamp()
    del view["terms"]["words"]
    for term in view["terms"]["terms"]:
        term.pop("label", None)
    card = render_card(view_of(view), now=NOW, people=PEOPLE)
    assert card["header"]["title"]["content"] == "Operation to confirm"
    assert (
        title_of(view_of(view), "en") == "Confirm operation"
        and title_of(view_of(view), "zh") == "确认操作"
    )
    assert fields(card)["Lamp"] == "porch"
    view["approval"].update(required=2, confirmed_by=["ou_alice"])
    assert headline(view_of(view), PEOPLE).words("en") == "Operation to confirm — 1 of 2 confirmed"
