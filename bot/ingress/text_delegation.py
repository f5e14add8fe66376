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
from cards.strings import Lang, text
from cards.vocabulary import when
from kernel.timeutil import given_utc, iso_utc
from store import Delegation, DelegationLedger, Store

VERBS = frozenset({"delegate", "undelegate", "delegations"})
SPAN = re.compile(r"^(\d{1,3})([dh])$")


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


def _described(delegation: Delegation, names: Mapping[str, str], tz: tzinfo, lang: Lang) -> str:
    return text(
        "text.delegation.described",
        lang,
        who=names.get(delegation.delegate, delegation.delegate),
        whom=names.get(delegation.delegator, delegation.delegator),
        at=when(iso_utc(delegation.ends_at), tz),
        id=delegation.id,
    )


async def delegation_reply(
    store: Store,
    settings: Settings,
    envelope: Mapping[str, Any],
    words: Sequence[str],
    *,
    bot_open_id: str,
    tz: tzinfo,
    lang: Lang = "en",
) -> str:
    """The reply to a delegation command (`words`: the command, mentions removed)."""
    event = envelope.get("event", {})
    message = event.get("message", {})
    sender = str(event.get("sender", {}).get("sender_id", {}).get("open_id", ""))
    audience = _audience_of(settings, str(message.get("chat_id", "")))
    if audience is None:
        return text("text.delegation.not_here", lang)
    ledger = DelegationLedger(store)
    names = settings.people
    usage = text("text.delegation.usage", lang)

    def listed(head: str, delegations: Sequence[Delegation]) -> str:
        return "\n".join([head] + [f"- {_described(d, names, tz, lang)}" for d in delegations])

    verb = words[0].lower()
    if verb == "delegations":
        found = await ledger.listed(audience)
        if not found:
            return text("text.delegation.none", lang, audience=audience)
        return listed(text("text.delegation.listed", lang, audience=audience), found)
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
            return text("text.delegation.none_yours", lang, audience=audience)
        return listed(text("text.delegation.ended", lang), ended)
    if len(named) != 1:
        return text("text.delegation.name_one", lang, usage=usage)
    now = store.clock()
    ends = _until(words[1:], now)
    if ends is None:
        return text("text.delegation.how_long", lang, usage=usage)
    person = named[0]
    delegate = str(person["id"]["open_id"])
    tenant = person.get("tenant_key")
    allowed = settings.lark.tenant_keys
    if allowed and tenant not in allowed:
        return text("text.delegation.other_tenant", lang)
    problems = grant_problems(settings, audience, sender, delegate, ends, now, by=sender, lang=lang)
    if problems:
        said = "; ".join(f"{p.reason} ({p.fix})" for p in problems)
        return text("text.delegation.refused", lang, problems=said)
    granted = await ledger.grant(audience, sender, delegate, ends_at=ends, by=by)
    described = _described(granted, names, tz, lang)
    return text("text.delegation.granted", lang, described=described, audience=audience)
