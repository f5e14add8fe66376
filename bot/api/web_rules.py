"""What the web page checks of its own before a decision: whose page posted the form (Origin,
else Referer), the form's key, and when a Confirm needs a fresh sign-in; and which pages a
sign-in may return to. Pure.

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
# the pages a sign-in returns to: the dashboard's own (/ops, /ops/all, /ops/{id}, ...)
RETURN_PATH = re.compile(r"^/ops(?:/[0-9A-Za-z_-]{1,64})?$")
NOT_PAGES = frozenset({"/ops/auth", "/ops/changes"})  # the sign-in flow, the long poll
RETURN_MAX = 200


def return_path(value: str) -> str | None:
    """`value` if it is a page of this dashboard to come back to after signing in, with its
    language kept (`?lang=en|zh`, nothing else), else None. Never another site: no scheme, no
    host, no `//`, no backslash, nothing but a path under /ops (an open redirect otherwise)."""
    if not value or len(value) > RETURN_MAX or not value.isascii() or "\\" in value:
        return None
    if not value.startswith("/") or value.startswith("//"):
        return None
    path, _, query = value.partition("?")
    if not RETURN_PATH.fullmatch(path) or path in NOT_PAGES:
        return None
    lang = query.removeprefix("lang=") if query in ("lang=en", "lang=zh") else None
    return f"{path}?lang={lang}" if lang else path


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
