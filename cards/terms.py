"""An operation's terms on its card: a two-column grid of short fields, long ones full width,
a message text in its own shaded block. Pure.

Every value is plain_text, so nothing a proposer sends can format, mention or link. Labels
are in every locale; a value is repeated per locale only where its words differ (yes/no),
so a long value is never copied (Lark caps a card at 30 KB).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cards.outcomes import plain_text
from cards.strings import LANGS, LARK_LOCALE, Lang, text
from cards.vocabulary import term_label, term_value

# a value this short shares a row with another on a phone-width card
SHORT_VALUE = 22
# the order of an order's terms on its card, two to a row: what is bought, how much, at what
# price and worst case, then the limits, then where (terms not named keep their order, after)
READING_ORDER = (
    "side",
    "quantity",
    "instrument",
    "limit_price",
    "notional",
    "order_type",
    "max_slippage_bps",
    "time_in_force",
    "max_fee",
    "leverage",
    "stop_loss",
    "take_profit",
    "reduce_only",
    "venue",
    "account",
)

Words = Callable[[Lang], str]


def each_lang(words: Words, lang: Lang, **style: str) -> dict[str, Any]:
    """plain_text in `lang`, with the other locales only where the words differ."""
    versions = {LARK_LOCALE[each]: words(each) for each in LANGS}
    element = plain_text(words(lang), versions if len(set(versions.values())) > 1 else None)
    element.update(style)
    return element


def _field(label: Words, value: Words, lang: Lang) -> list[dict[str, Any]]:
    return [
        # the label small (notation: Lark's secondary size and colour), the value as body text
        {"tag": "div", "text": each_lang(label, lang, text_size="notation")},
        {"tag": "div", "text": each_lang(value, lang)},
    ]


def _row(cells: list[list[dict[str, Any]]]) -> dict[str, Any]:
    # Lark's defaults (flex_mode none: the columns stay side by side on a phone, 8px apart)
    # are what a row wants; every byte counts toward the 30 KB a long message must fit in
    return {
        "tag": "column_set",
        "columns": [
            {"tag": "column", "width": "weighted", "weight": 1, "elements": cell} for cell in cells
        ],
    }


def _counted(key: str, n: int, lang: Lang) -> str:
    return text(f"{key}.one" if n == 1 else key, lang, n=str(n))


def _text_block(value: Any, lang: Lang, said: str = "text.block") -> list[dict[str, Any]]:
    """The message text: its size and what became of it (`said`: a catalogue key,
    cards/render.py's text_key), then the text alone in a shaded block, as plain text."""
    message = str(value)

    def label(each: Lang) -> str:
        lines = _counted("text.lines", message.count("\n") + 1, each)
        return text(said, each, lines=lines, chars=_counted("text.chars", len(message), each))

    return [
        {
            "tag": "div",
            "element_id": "message_text_size",
            "text": plain_text(label(lang), {LARK_LOCALE[each]: label(each) for each in LANGS}),
        },
        # A shaded one-column set, not an interactive_container: Lark requires `behaviors`
        # on that one, and the text must not be clickable.
        {
            "tag": "column_set",
            "element_id": "message_text",
            "flex_mode": "none",
            "background_style": "grey",
            "columns": [
                {
                    "tag": "column",
                    "width": "weighted",
                    "weight": 1,
                    "padding": "8px 12px 8px 12px",
                    "elements": [{"tag": "div", "text": plain_text(message)}],
                }
            ],
        },
    ]


# terms that are not a field in the grid
BLOCKS: Mapping[str, Callable[[Any, Lang, str], list[dict[str, Any]]]] = {"text": _text_block}


def _term_field(term: Mapping[str, Any]) -> tuple[Words, Words]:
    def label(each: Lang) -> str:
        return term_label(term, each)

    def value(each: Lang) -> str:
        return term_value(term, each)

    return label, value


def _reading_order(named: list[tuple[str, Any]]) -> list[Any]:
    """What a person checks first, first (READING_ORDER); the rest keep the domain's order.
    Only the card's layout: the projection, and so the digest, keep the domain's order."""
    rank = {name: n for n, name in enumerate(READING_ORDER)}
    ordered = sorted(enumerate(named), key=lambda e: (rank.get(e[1][0], len(rank)), e[0]))
    return [item for _, (_, item) in ordered]


def term_elements(
    terms: list[dict[str, Any]],
    extra: list[tuple[str, tuple[Words, Words]]],
    lang: Lang,
    said: str = "text.block",
) -> list[dict[str, Any]]:
    """The terms in reading order, with `extra` named fields such as the notional: short
    fields two to a row, a long one on a row of its own, a block (a message's text) itself,
    labelled by `said`."""
    elements: list[dict[str, Any]] = []
    waiting: list[list[dict[str, Any]]] = []  # a short field looking for its row mate

    def flush() -> None:
        if waiting:
            elements.append(_row(list(waiting)))  # an odd one out has the row to itself
            waiting.clear()

    named: list[tuple[str, tuple[Words, Words] | list[dict[str, Any]]]] = []
    for term in terms:
        block = BLOCKS.get(term["name"])
        if block is not None:
            named.append((term["name"], block(term["value"], lang, said)))
            continue
        named.append((term["name"], _term_field(term)))
    named += extra
    fields: list[tuple[Words, Words] | list[dict[str, Any]]] = _reading_order(named)
    for found in fields:
        if isinstance(found, list):
            flush()
            elements += found
            continue
        label, value = found
        cell = _field(label, value, lang)
        if max(len(value(each)) for each in LANGS) > SHORT_VALUE:
            flush()
            elements += cell
            continue
        waiting.append(cell)
        if len(waiting) == 2:
            flush()
    flush()
    return elements
