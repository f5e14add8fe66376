"""A click's fields bounded to the columns that keep them. Pure.

A refused click is recorded with what it carried, so its record must never fail on the very
values that made it refused: too long, a NUL, a lone surrogate.
"""

from __future__ import annotations

STORED_ID_CHARS = 128  # store/schema/tables.py ConfirmationRow's id columns


def storable(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with what no column can hold (NUL, lone surrogates)
    replaced, so a refused click's record never fails on the values that made it refused."""
    cut = text[:limit]
    if "\x00" in cut or not is_utf8(cut):
        cut = "".join("\ufffd" if ch == "\x00" or "\ud800" <= ch <= "\udfff" else ch for ch in cut)
    return cut


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
