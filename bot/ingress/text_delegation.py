"""Delegation by text in an audience's chat: `@countersign delegate @Bob 3d` (or `... until
2026-12-10`) hands the sender's right in that chat's audience to Bob; `undelegate [@Bob]` ends
the sender's delegations there now; `delegations` lists those in force. The config decides
whether the audience allows it and for how long (bot/config/delegation.py), the sender must
be one of its operators, and the person named must be of an allowed tenant. Each grant and
revocation is an audit entry (store/delegation/ledger.py), its actor the sender."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, tzinfo
from typing import Any

from bot.config.delegation import grant_problems
from bot.config.settings import Settings
from cards.vocabulary import when
from kernel.timeutil import given_utc, iso_utc
from store import Delegation, DelegationLedger, Store

VERBS = frozenset({"delegate", "undelegate", "delegations"})
SPAN = re.compile(r"^(\d{1,3})([dh])$")
USAGE = (
    "delegate: `delegate @person 3d` (days, or hours: 12h) or `delegate @person until "
    "2026-12-10`; `undelegate [@person]` ends yours now; `delegations` lists them."
)


def _people_named(envelope: Mapping[str, Any], verb: str, bot_open_id: str) -> list[dict[str, Any]]:
    """The people the command names: the mentions after its verb, in order (the bot's own
    mention addresses the message and comes before it)."""
    message = envelope.get("event", {}).get("message", {})
    try:
        raw = str(json.loads(message.get("content", "")).get("text", ""))
    except (ValueError, AttributeError):
        raw = ""
    found = re.search(rf"\b{re.escape(verb)}\b", raw, re.IGNORECASE)
    after = raw[found.end() :] if found else ""
    mentions = [m for m in message.get("mentions") or [] if isinstance(m, dict)]
    named = [
        m
        for m in mentions
        if str(m.get("key", "")) in after
        and m.get("id", {}).get("open_id") not in ("", None, bot_open_id)
    ]
    return sorted(named, key=lambda m: after.index(str(m["key"])))


def _until(words: Sequence[str], now: datetime) -> datetime | None:
    for index, word in enumerate(words):
        span = SPAN.fullmatch(word.lower())
        if span:
            amount = int(span.group(1))
            return now + (
                timedelta(days=amount) if span.group(2) == "d" else timedelta(hours=amount)
            )
        if word.lower() == "until" and index + 1 < len(words):
            try:
                return given_utc(words[index + 1])
            except ValueError:
                return None
    return None


def _audience_of(settings: Settings, chat_id: str) -> str | None:
    return next((a.name for a in settings.audiences if a.chat_id == chat_id), None)


def _described(delegation: Delegation, names: Mapping[str, str], tz: tzinfo) -> str:
    who = names.get(delegation.delegate, delegation.delegate)
    whom = names.get(delegation.delegator, delegation.delegator)
    return f"{who} for {whom} until {when(iso_utc(delegation.ends_at), tz)} ({delegation.id})"


async def delegation_reply(
    store: Store,
    settings: Settings,
    envelope: Mapping[str, Any],
    words: Sequence[str],
    *,
    bot_open_id: str,
    tz: tzinfo,
) -> str:
    """The reply to a delegation command (`words`: the command, mentions removed)."""
    event = envelope.get("event", {})
    message = event.get("message", {})
    sender = str(event.get("sender", {}).get("sender_id", {}).get("open_id", ""))
    audience = _audience_of(settings, str(message.get("chat_id", "")))
    if audience is None:
        return "Delegation is by audience: write this in the audience's own chat."
    ledger = DelegationLedger(store)
    names = settings.people
    verb = words[0].lower()
    if verb == "delegations":
        found = await ledger.listed(audience)
        if not found:
            return f"No delegations in force in {audience}."
        return "\n".join(
            [f"Delegations in force in {audience}:"]
            + [f"- {_described(d, names, tz)}" for d in found]
        )
    named = _people_named(envelope, words[0], bot_open_id)
    by = f"operator:{sender}"
    if verb == "undelegate":
        targets = {m["id"]["open_id"] for m in named}
        mine = [
            d
            for d in await ledger.listed(audience)
            if d.delegator == sender and (not targets or d.delegate in targets)
        ]
        ended = [r for d in mine if (r := await ledger.revoke(d.id, by)) is not None]
        if not ended:
            return f"You have no delegation in force in {audience}."
        return "\n".join(["Ended now:"] + [f"- {_described(d, names, tz)}" for d in ended])
    if len(named) != 1:
        return "Name exactly one person to hand your right to. " + USAGE
    now = store.clock()
    ends = _until(words[1:], now)
    if ends is None:
        return "Say for how long. " + USAGE
    person = named[0]
    delegate = str(person["id"]["open_id"])
    tenant = person.get("tenant_key")
    allowed = settings.lark.tenant_keys
    if allowed and tenant not in allowed:
        return "You can hand your right only to someone of this organisation."
    problems = grant_problems(settings, audience, sender, delegate, ends, now, by=sender)
    if problems:
        return "Not delegated: " + "; ".join(f"{p.reason} ({p.fix})" for p in problems)
    granted = await ledger.grant(audience, sender, delegate, ends_at=ends, by=by)
    return (
        f"Delegated: {_described(granted, names, tz)}. They may decide {audience}'s operations "
        "for you until then, also on cards already posted; `undelegate` ends it now."
    )
