"""Field types shared by domain schemas: decimal strings, identifiers, readable text."""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from typing import Annotated, NamedTuple

import regex
from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

DECIMAL_TEXT = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$")
MAX_DECIMAL_CHARS = 40
# Digits a decimal may carry before and after its point (issue 30: `quantity = 1e25` with
# `limit_price = 1e-22` was confirmed, then failed every executor pass). Bounded so that the
# products, remainders and sums later taken of confirmed terms (a notional, a fee, "a
# multiple of the lot", a reservation) stay exact in a bounded context and print and store
# whole: nothing an operator can confirm may fail arithmetic after the claim.
MAX_INTEGER_DIGITS = 15
MAX_FRACTION_DIGITS = 12


class Hidden(NamedTuple):
    """A class of code points a person cannot read reliably on a card."""

    pattern: regex.Pattern[str]
    what: str
    fix: str


# Nothing an operator approves may be invisible, reorder what is shown (bidi marks of every
# kind are Cf), break a line without being a newline, or lack an agreed glyph. Categories come
# from the `regex` module, whose Unicode data is newer than this Python's `unicodedata`.
HIDDEN: tuple[Hidden, ...] = (
    Hidden(
        regex.compile(r"\p{Cc}"),
        "a control character",
        "remove it; only newline (LF; CR LF and CR become LF) and tab are kept",
    ),
    Hidden(
        regex.compile(r"\p{Cf}"),
        "an invisible format character (bidi marks, zero-width characters, tags, ...)",
        "remove it: the card must show every character that is sent "
        "(a zero width joiner inside an emoji sequence is kept)",
    ),
    Hidden(regex.compile(r"[\p{Zl}\p{Zp}]"), "a line or paragraph separator", "use a newline"),
    Hidden(
        regex.compile(r"\p{Co}"), "a private-use character", "remove it; it has no agreed glyph"
    ),
    Hidden(regex.compile(r"\p{Cs}"), "a lone surrogate", "send valid Unicode text"),
    # Not Cf, yet drawn as nothing: variation selectors (a channel for hidden bytes), the
    # combining grapheme joiner, Hangul fillers, ...
    Hidden(
        regex.compile(r"\p{Default_Ignorable_Code_Point}"),
        "an invisible character (variation selector, filler, ...)",
        "remove it: the card must show every character that is sent "
        "(an emoji's own presentation selector is kept)",
    ),
    Hidden(regex.compile(r"\p{Cn}"), "an unassigned code point", "remove it; it has no glyph"),
)
ANY_HIDDEN = regex.compile("|".join(rule.pattern.pattern for rule in HIDDEN))
KEPT_CONTROLS = frozenset("\n\t\r")  # \r only until line breaks are normalised to \n
# The one exception: a joiner between pictographs (after any skin tone or emoji style), which
# is what makes a family or a "woman technologist" one emoji.
EMOJI_JOINER = regex.compile(
    r"(?<=\p{Extended_Pictographic}[\p{Emoji_Modifier}\uFE0F]*)\u200D(?=\p{Extended_Pictographic})"
)
# An emoji's own presentation selector (text or emoji style, as in a red heart or a keycap).
EMOJI_STYLE = regex.compile(r"(?<=\p{Emoji}\p{Emoji_Modifier}*)[\uFE0E\uFE0F]")
# More combining marks on one character than any script needs: they stack over other lines.
MAX_MARKS = 4
STACKED_MARKS = regex.compile(rf"\p{{M}}{{{MAX_MARKS + 1},}}")
# Blank to the eye though not whitespace: what an "empty" text may consist of.
INVISIBLE = regex.compile(r"[\s\p{Default_Ignorable_Code_Point}\p{Cc}\u2800]")


class TextProblem(NamedTuple):
    reason: str
    fix: str


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def is_control(char: str) -> bool:
    """Hidden in any sense of HIDDEN (fields that are not free text refuse all of them)."""
    return ANY_HIDDEN.fullmatch(char) is not None


def _decimal_text(value: str) -> str:
    if len(value) > MAX_DECIMAL_CHARS or not DECIMAL_TEXT.match(value):
        raise ValueError(
            'must be a plain decimal string such as "0.5" (no exponent, no spaces, no "+")'
        )
    whole, _, fraction = value.lstrip("-").partition(".")
    if len(whole) > MAX_INTEGER_DIGITS or len(fraction) > MAX_FRACTION_DIGITS:
        raise ValueError(
            f"has {len(whole)} digit(s) before the decimal point and {len(fraction)} after; "
            f"the bound is at most {MAX_INTEGER_DIGITS} before and {MAX_FRACTION_DIGITS} after: "
            "send a smaller value or fewer decimals"
        )
    return value


def _positive(value: str) -> str:
    if Decimal(value) <= 0:
        raise ValueError("must be greater than zero")
    return value


def _non_negative(value: str) -> str:
    if Decimal(value) < 0:
        raise ValueError("must not be negative")
    return value


DecimalText = Annotated[str, AfterValidator(_decimal_text)]
PositiveDecimal = Annotated[DecimalText, AfterValidator(_positive)]
NonNegativeDecimal = Annotated[DecimalText, AfterValidator(_non_negative)]
Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")]
OpenId = Annotated[str, StringConstraints(pattern=r"^ou_[A-Za-z0-9_-]{1,120}$")]


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def position(text: str, index: int) -> str:
    """Where text[index] is, as a person counts: character, line and column (from 1).

    CR LF counts as one line break, so line and column are the same before and after
    normalisation; the character number is in the text as it was sent.
    """
    before = normalise_newlines(text[:index])
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    return f"character {index + 1} (line {line}, column {column})"


def code_point(char: str) -> str:
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" {name}" if name else "")


def hidden_character(text: str) -> TextProblem | None:
    """The first character a person could not read faithfully, named and located."""
    allowed = {match.start() for match in EMOJI_JOINER.finditer(text)}
    allowed |= {match.start() for match in EMOJI_STYLE.finditer(text)}
    found = [
        match.start()
        for match in ANY_HIDDEN.finditer(text)
        if match.start() not in allowed and match.group() not in KEPT_CONTROLS
    ]
    if not found:
        return None
    first = text[found[0]]
    rule = next(rule for rule in HIDDEN if rule.pattern.fullmatch(first))
    more = f"; {len(found) - 1} more such characters follow" if len(found) > 1 else ""
    return TextProblem(
        f"contains {code_point(first)} at {position(text, found[0])}, {rule.what}{more}",
        rule.fix,
    )


def stacked_marks(text: str) -> TextProblem | None:
    found = STACKED_MARKS.search(text)
    if found is None:
        return None
    return TextProblem(
        f"has {len(found.group())} combining marks in a row at {position(text, found.start())}; "
        f"they draw over the text around them",
        f"use at most {MAX_MARKS} combining marks on one character",
    )


def blank(text: str) -> TextProblem | None:
    if INVISIBLE.sub("", text):
        return None
    return TextProblem(
        "is empty once invisible characters and whitespace are removed",
        "send the text the counterparty should read",
    )


def too_long(text: str, cap: int) -> TextProblem | None:
    if len(text) <= cap:
        return None
    return TextProblem(
        f"is {len(text)} characters; the cap is {cap}",
        "shorten it or split it into several messages (text is never truncated)",
    )
