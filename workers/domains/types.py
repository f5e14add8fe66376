"""Field types shared by domain schemas: decimal strings, identifiers, sanitized text."""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

DECIMAL_TEXT = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$")
MAX_DECIMAL_CHARS = 40
# Bidirectional overrides and isolates can make displayed terms read differently
# from what is stored, so they count as control characters here.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def is_control(char: str) -> bool:
    return unicodedata.category(char) == "Cc" or char in BIDI_CONTROLS


def _decimal_text(value: str) -> str:
    if len(value) > MAX_DECIMAL_CHARS or not DECIMAL_TEXT.match(value):
        raise ValueError(
            'must be a plain decimal string such as "0.5" (no exponent, no spaces, no "+")'
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


def sanitize_text(value: str, *, cap: int) -> str:
    """Strip control characters (keeping newline and tab); refuse empty or over-long text.

    Never truncates: an operator must see every character that will be sent.
    """
    text = value.replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(ch for ch in text if ch in "\n\t" or not is_control(ch))
    if not text.strip():
        raise ValueError("is empty once control characters and whitespace are removed")
    if len(text) > cap:
        raise ValueError(f"is {len(text)} characters; the cap is {cap} (it is never truncated)")
    return text
