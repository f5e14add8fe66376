"""What a message draft's text may be: readable on the card, and inert in Lark.

The text goes out as msg_type=text, where Lark interprets some markup: `<at ...>` mentions
(`<at user_id="all">` pings everyone in the counterparty's chat), style and anchor tags, and
markdown links that show a label instead of their address. A proposal carrying any of it is
refused rather than escaped: an agent learns the rule once, and the operator approves the
very characters that are sent. Mentions are asked for as data (payload.mentions); the card
lists them and `outbound_text` writes the markup itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import regex

from workers.domains.types import (
    TextProblem,
    blank,
    hidden_character,
    normalise_newlines,
    position,
    stacked_marks,
    too_long,
)


class Markup(NamedTuple):
    pattern: regex.Pattern[str]
    what: str
    why: str
    fix: str


LARK_TEXT_MARKUP: tuple[Markup, ...] = (
    Markup(
        # any spelling Lark might accept: spaces, capitals, user_id/open_id/id/email, a bare close
        regex.compile(r"<\s*/?\s*at(?![\w-])", regex.IGNORECASE),
        "Lark mention markup (<at ...>)",
        "it would notify people the card does not list",
        "remove it; to mention people, list their open ids in payload.mentions "
        "(the card shows them and the bot writes the mention itself)",
    ),
    Markup(
        regex.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>"),
        "a markup tag",
        "Lark may render tags such as <b> or <a href=...> instead of showing them",
        "remove the tag; the message is sent as plain text",
    ),
    Markup(
        regex.compile(r"\[[^\]\n]*\]\([^)\n]*\)"),
        "a markdown link [label](address)",
        "Lark may show the label alone and hide the address",
        "write the address itself; Lark links a bare address",
    ),
)


def lark_markup(text: str) -> TextProblem | None:
    for markup in LARK_TEXT_MARKUP:
        found = markup.pattern.search(text)
        if found is not None:
            where = position(text, found.start())
            return TextProblem(f"contains {markup.what} at {where}; {markup.why}", markup.fix)
    return None


def draft_text_problem(text: str, cap: int) -> TextProblem | None:
    """Why this text (as the proposer sent it) cannot be offered, if it cannot."""
    return (
        hidden_character(text)
        or stacked_marks(text)
        or lark_markup(text)
        or blank(text)
        or too_long(normalise_newlines(text), cap)
    )


def mention_markup(open_id: str) -> str:
    return f'<at user_id="{open_id}"></at>'


def outbound_text(text: str, mentions: Sequence[str]) -> str:
    """What Lark receives: the mentions the card listed, then the approved text unchanged."""
    if not mentions:
        return text
    return " ".join(mention_markup(open_id) for open_id in mentions) + " " + text
