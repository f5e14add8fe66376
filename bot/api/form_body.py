"""Reading a posted HTML form (the dashboard's sign-out and decision forms) that may be broken.

aiohttp's `request.post()` raises whatever its parser meets in a body it cannot read: a
multipart type without a boundary or with a missing one, a part without a name, an unknown
charset or transfer encoding, a broken part header, a body cut short. Each is the client's
fault, so it is a 400 that says so, never a 5xx. A body over the size cap stays aiohttp's
413 (an HTTPException, left to the middleware that words it).
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from bot.api.web_words import web_label
from cards.strings import Lang

# what aiohttp's form and multipart readers raise on a body they cannot parse (3.x)
UNREADABLE = (ValueError, LookupError, RuntimeError, AssertionError, HttpProcessingError)


class UnreadableForm(Exception):
    """The body is not a form we can read; the message says why and what to do (`said`: in
    the page's language)."""

    def __init__(self, kind: str | None) -> None:
        self.kind = kind
        super().__init__(self.said("en"))

    def said(self, lang: Lang) -> str:
        kind = self.kind or web_label("form.no_type", lang)
        return web_label("form.unreadable", lang, kind=kind)


async def form_fields(request: web.Request) -> Mapping[str, str]:
    """The form's text fields (a file part is not a field of ours and is left out)."""
    try:
        form = await request.post()
    except web.HTTPException:
        raise
    except UNREADABLE:
        raise UnreadableForm((request.content_type or "")[:80] or None) from None
    return {name: value for name, value in form.items() if isinstance(value, str)}
