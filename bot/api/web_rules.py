"""What the web page checks of its own before a decision: whose page posted the form (Origin,
else Referer), the form's key, and when a Confirm needs a fresh sign-in. Pure.

What a web click is checked against, like a card's, is bot/decide/provenance.py's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation

from yarl import URL

from bot.config.settings import WebSettings
from store import Operation

# a rendered page's one-time form key (the inbox key): secrets.token_urlsafe(24) makes 32
FORM_KEY = re.compile(r"^[A-Za-z0-9_-]{20,64}$")


def needs_reauth(op: Operation, web: WebSettings) -> bool:
    """A Confirm of this operation needs a recent sign-in: its worst-case notional (as its
    approval policy computed it when filed, "62000.00 USDC") is above `reauth_above`. Fails
    closed: an unknown notional, or one in another currency, counts as above; an operation
    with no notional at all (a message) never asks."""
    if web.reauth_above is None:
        return False
    notional = op.envelope.approval.notional
    if notional is None:
        return False
    amount, _, currency = notional.partition(" ")
    if currency != web.reauth_currency:
        return True
    try:
        return Decimal(amount) > Decimal(web.reauth_above)
    except InvalidOperation:  # "unknown"
        return True


def reauth_due(op: Operation, web: WebSettings, signed_in_at: datetime, now: datetime) -> bool:
    return needs_reauth(op, web) and (now - signed_in_at).total_seconds() > web.reauth_within_s


def same_origin(headers: Mapping[str, str], public_url: str) -> bool:
    """The form was posted from a page of ours: `Origin` (or, without one, `Referer`) has the
    origin of [web] public_url. A browser sends Origin on every cross-site POST; "null" (a
    sandboxed frame, a data: page) is never ours."""
    expected = URL(public_url).origin()
    given = headers.get("Origin") or headers.get("Referer") or ""
    if not given or given == "null":
        return False
    try:
        url = URL(given)
        return url.is_absolute() and url.origin() == expected
    except ValueError:
        return False
