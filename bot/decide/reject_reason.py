"""A reject's reason, as the operator typed it in the card's form (or the web page's). Pure.

Lark sends the form's fields in `action.form_value` (an input left empty arrives as ""); a
web post's reason is put in the same place (bot/decide/provenance.py `web_click`).
What reaches the store, the card, the dashboard and the proposer is one line of readable
text: control, format and separator characters become spaces (nothing invisible can ride
along to the proposer), runs of spaces collapse, and past `REASON_MAX_CHARS` it is cut
visibly (an ellipsis: Lark's client stops a person at that length, so only a forged form
gets there). Empty means no reason: a reject without one is as valid as ever. Where it is
shown, it is text, never markup (cards/plain_text.py).
"""

from __future__ import annotations

from typing import Any

import regex

from cards.render import REASON_FIELD, REASON_MAX_CHARS

# REASON_MAX_CHARS is the input's max_length: Lark's client stops the operator there
SENT_MAX_CHARS = 1000  # Lark's own cap on an input; a longer value is not Lark's
UNREADABLE = regex.compile(r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\s]+")


def reason_problem(form_value: Any) -> str | None:
    """Why a form value cannot be Lark's (None: it can, or there is none)."""
    if form_value is None:
        return None
    if not isinstance(form_value, dict):
        return "form_value is not an object"
    reason = form_value.get(REASON_FIELD)
    if reason is not None and (not isinstance(reason, str) or len(reason) > SENT_MAX_CHARS):
        return f"form_value.{REASON_FIELD} is not text of at most {SENT_MAX_CHARS} characters"
    return None


def cleaned_reason(form_value: Any) -> str | None:
    """The reason as kept: one readable line of at most REASON_MAX_CHARS (None: none given)."""
    if not isinstance(form_value, dict):
        return None
    raw = form_value.get(REASON_FIELD)
    if not isinstance(raw, str):
        return None
    line = UNREADABLE.sub(" ", raw).strip()
    if len(line) > REASON_MAX_CHARS:
        line = line[: REASON_MAX_CHARS - 1].rstrip() + "…"
    return line or None
