"""What a web decision is checked against before and after its one write. Pure.

The web entry (bot/api/web_decide.py) has no Lark envelope: the signed-in session stands in
for the card's message and chat. So a web click is the card's `CardClick` with no chat and no
message, and the operation checks are the card's (bot/ingress/provenance.py) minus the two
that ask where the card was (`chat_is_audience`, `message_is_original`), in the same order
and with the same reason codes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal, InvalidOperation

from yarl import URL

from bot.config.settings import WebSettings
from bot.ingress.provenance import (
    OPERATION_CHECKS,
    VALUE_CHECKS,
    CardClick,
    Context,
    OperationCheck,
    chat_is_audience,
    first_refusal,
    message_is_original,
)
from store.decisions import Click, refusal_reason
from store.reasons import Reason
from store.records import Operation
from store.vocabulary import Entry

WEB = Entry.WEB.value
# a rendered page's one-time form key (the inbox key): secrets.token_urlsafe(24) makes 32
FORM_KEY = re.compile(r"^[A-Za-z0-9_-]{20,64}$")
WEB_OPERATION_CHECKS: Sequence[OperationCheck] = tuple(
    check for check in OPERATION_CHECKS if check not in (chat_is_audience, message_is_original)
)


def web_click(
    operation_id: str,
    action: str,
    digest: str,
    *,
    open_id: str,
    tenant_key: str,
    form_key: str,
    reason: str | None = None,
) -> CardClick:
    """A web form post as the card path reads a click: no chat, no message."""
    return CardClick(
        event_id=form_key,
        app_id="",
        tenant_key=tenant_key,
        operator_open_id=open_id,
        operator_tenant_key=tenant_key,
        chat_id="",
        message_id="",
        value={"op": operation_id, "action": action, "digest": digest, "v": 1},
        form_value={"reason": reason} if action == "reject" and reason is not None else None,
    )


def store_click(click: CardClick) -> Click:
    """As the store keeps it: bounded like a card click's, the reason cleaned the card's way,
    entry web, no chat or message."""
    return replace(click.as_store_click(), chat_id=None, message_id=None, entry=WEB)


def value_refusal(click: CardClick, ctx: Context) -> Reason | None:
    return first_refusal(VALUE_CHECKS, click, ctx)


def operation_refusal(click: CardClick, op: Operation | None, ctx: Context) -> Reason | None:
    """Why the web may not decide this (None: it may, as far as the operation now says)."""
    return next(
        (reason for check in WEB_OPERATION_CHECKS if (reason := check(click, op, ctx)) is not None),
        None,
    )


def why_refused(click: CardClick, op: Operation | None, ctx: Context) -> Reason:
    """The database refused it: name why, as the card path does (a race the checks cannot
    see, decided or expired since, is read off the state)."""
    return operation_refusal(click, op, ctx) or refusal_reason(op, store_click(click), ctx.now)


def may_decide(op: Operation, open_id: str, tenant_key: str, ctx: Context) -> dict[str, bool]:
    """Which buttons the page offers this person (the POST is checked again regardless)."""
    return {
        action: operation_refusal(
            web_click(
                op.id,
                action,
                op.confirm_digest,
                open_id=open_id,
                tenant_key=tenant_key,
                form_key="-",
            ),
            op,
            ctx,
        )
        is None
        for action in ("confirm", "reject")
    }


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
