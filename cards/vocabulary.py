"""The words every surface uses for an operation: its headline, state, people, times, values.

The card, the dashboard, the CLI, the chat replies and the toasts all take their words from
here and from the one catalogue (`cards/strings.py`), so "armed" on the card is "armed" on
the dashboard, and a state reads the same in every place. Pure.

The headline is the operation's state in words as a person wants it: what it is while it
waits ("Order to confirm"), then what happened ("Filled", "Rejected by Bob: too large",
"Expired — nothing executed"). The newest outcome, once there is one, is the headline; before
it, the lifecycle state is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from cards.plain_text import WORDS_MAX_CHARS, people_text
from cards.strings import TEXT, Lang, text
from store.timeutil import parse_iso_utc

OPEN_STATES = frozenset({"prepared", "awaiting_confirmation"})
EXECUTING = frozenset({"queued", "preflight", "reserved", "dispatching", "submitted"})
# a header stays one line on a phone; the full reason is in the card's body
HEADLINE_REASON_CHARS = 60

# Lark header templates by how a reader should take it; the dashboard's chips use the same.
WAITING, WORKING, GOOD, WARN, BAD, DONE = "orange", "wathet", "green", "yellow", "red", "grey"
OUTCOME_TONE: Mapping[str, str] = {
    "accepted": GOOD,
    "resting": GOOD,
    "partially_filled": GOOD,
    "filled": GOOD,
    "sent": GOOD,
    "unknown": WARN,
    "unresolved": BAD,
    "rejected": BAD,
    "cancelled": DONE,
    "preflight_rejected": BAD,
    "reservation_refused": BAD,
    "not_submitted": DONE,
}
STATE_TONE: Mapping[str, str] = {
    "prepared": WAITING,
    "awaiting_confirmation": WAITING,
    "claimed": WORKING,
    "outcome_observed": GOOD,
    "rejected": BAD,
    "cancelled": DONE,
    "expired": DONE,
    "superseded": DONE,
    "changes_requested": DONE,
}
# outcomes a person must look at: the venue may or may not have it, or no one could tell
NEEDS_A_PERSON = frozenset({"unknown", "unresolved"})


@dataclass(frozen=True)
class Headline:
    """What an operation's state says, in words, and how it reads (a template colour)."""

    key: str
    values: Mapping[str, str]
    tone: str

    def words(self, lang: Lang) -> str:
        return text(self.key, lang, **self.values)

    def every_lang(self) -> dict[Lang, str]:
        return {"en": self.words("en"), "zh": self.words("zh")}


def person(open_id: Any, people: Mapping[str, str]) -> str:
    """A person by their configured display name, else by their id."""
    if not isinstance(open_id, str) or not open_id:
        return "?"
    return people.get(open_id, open_id)


def shortened(words: str, limit: int) -> str:
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


def headline(view: Mapping[str, Any], people: Mapping[str, str]) -> Headline:
    state = view["state"]
    outcome = view.get("outcome")
    if outcome is not None:
        status = str(outcome["status"])
        return Headline(f"outcome.{status}", {}, OUTCOME_TONE.get(status, DONE))
    if state in OPEN_STATES:
        approval = view.get("approval") or {}
        confirmed = approval.get("confirmed_by") or []
        if confirmed:
            values = {"count": str(len(confirmed)), "required": str(approval.get("required", 1))}
            return Headline(f"headline.partly.{view['kind']}", values, WAITING)
        return Headline(f"headline.open.{view['kind']}", {}, WAITING)
    if state == "rejected":
        decision = view.get("decision") or {}
        who = person(decision.get("by"), people)
        reason = decision.get("reason")
        if reason:  # the operator's words: text, never markup (cards/plain_text.py)
            shown = shortened(people_text(reason, WORDS_MAX_CHARS), HEADLINE_REASON_CHARS)
            values = {"who": who, "reason": shown}
            return Headline("headline.rejected.reason", values, BAD)
        return Headline("headline.rejected", {"who": who}, BAD)
    if state == "changes_requested":
        who = person((view.get("decision") or {}).get("by"), people)
        return Headline("headline.changes_requested", {"who": who}, DONE)
    if state in ("claimed", "outcome_observed"):
        return Headline("headline.executing", {}, WORKING)
    return Headline(f"headline.{state}", {}, STATE_TONE.get(state, DONE))


def needs_attention(view: Mapping[str, Any]) -> str | None:
    """Why a person should look at this operation now (a catalogue key), or None."""
    if view["state"] in OPEN_STATES:
        return "attention.awaiting"
    outcome = view.get("outcome")
    if outcome is not None and outcome["status"] in NEEDS_A_PERSON:
        return f"attention.{outcome['status']}"
    if (view.get("card") or {}).get("delivery") == "failed":
        return "attention.card_failed"
    return None


def state_words(state: str, lang: Lang) -> str:
    """A lifecycle state as a word (filters, tables): "awaiting confirmation", not snake_case."""
    return text(f"state.word.{state}", lang)


def when(iso: str, tz: tzinfo = UTC) -> str:
    """An absolute time to the minute, with its zone: 2026-12-05 08:30 UTC."""
    moment = parse_iso_utc(iso).astimezone(tz)
    return moment.strftime("%Y-%m-%d %H:%M ") + (moment.tzname() or "UTC")


def span(seconds: float, lang: Lang) -> str:
    seconds = abs(int(seconds))
    if seconds >= 86400:
        return text("span.days", lang, d=str(seconds // 86400), h=str(seconds % 86400 // 3600))
    if seconds >= 3600:
        return text("span.hours", lang, h=str(seconds // 3600), m=f"{seconds % 3600 // 60:02d}")
    if seconds >= 60:
        return text("span.minutes", lang, m=str(seconds // 60))
    return text("span.seconds", lang, s=str(seconds))


def relative(iso: str, now: datetime, lang: Lang) -> str:
    """ "in 4 min" / "3 min ago" """
    delta = (parse_iso_utc(iso) - now).total_seconds()
    return text("relative.in" if delta >= 0 else "relative.ago", lang, span=span(delta, lang))


def value_words(value: Any, lang: Lang) -> str:
    """A term's value as every surface shows it: yes/no, lists comma-separated."""
    if isinstance(value, bool):
        return text("yes" if value else "no", lang)
    if isinstance(value, list):
        return ", ".join(str(each) for each in value)
    return str(value)


def term_label(name: str, lang: Lang) -> str:
    key = f"term.{name}"
    return text(key, lang) if key in TEXT else name.replace("_", " ").capitalize()
