"""The words every surface uses for an operation: its headline, state, people, times, values.

The card, the dashboard, the CLI, the chat replies and the toasts all take their words from
here and from the one catalogue (`cards/strings.py`), so "armed" on the card is "armed" on
the dashboard, and a state reads the same in every place. Pure.

The headline is the operation's state in words as a person wants it: what it is while it
waits ("Order to confirm"), then what happened ("Filled", "Rejected by Bob: too large",
"Expired — nothing executed"). The newest outcome, once there is one, is the headline; before
it, the lifecycle state is.

Words a domain owns travel with the data, never looked up by kind: the kind's title and
headlines and each term's label in the projection (`view.terms`), an outcome's words,
tone and finality in its row (`view.outcome`). The catalogue keeps the words that are
the same for every kind (a reject, an expiry, a reconciliation, SIMULATED).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from cards.plain_text import WORDS_MAX_CHARS, people_text
from cards.stored_words import stored_title, stored_value
from cards.strings import LANGS, Lang, text
from kernel.display import amount_text, number
from kernel.display import when as display_when
from kernel.timeutil import parse_iso_utc
from store import CardDelivery, Execution, OperationView, OutcomeView, State, Tone

OPEN_STATES = frozenset({State.PREPARED, State.AWAITING_CONFIRMATION})
EXECUTING = frozenset(
    {
        Execution.QUEUED,
        Execution.PREFLIGHT,
        Execution.RESERVED,
        Execution.DISPATCHING,
        Execution.SUBMITTED,
    }
)
# a header stays one line on a phone; the full reason is in the card's body
HEADLINE_REASON_CHARS = 60

# Lark header templates by how a reader should take it; the dashboard's chips use the same.
WAITING, WORKING, GOOD, WARN, BAD, DONE = "orange", "wathet", "green", "yellow", "red", "grey"
# an outcome's tone, as its domain declared it and the outcome row keeps it (store.vocabulary.Tone)
TONE_COLOUR: Mapping[Tone, str] = {
    Tone.GOOD: GOOD,
    Tone.WORKING: WORKING,
    Tone.WARN: WARN,
    Tone.BAD: BAD,
    Tone.DONE: DONE,
}
STATE_TONE: Mapping[State, str] = {
    State.PREPARED: WAITING,
    State.AWAITING_CONFIRMATION: WAITING,
    State.CLAIMED: WORKING,
    State.OUTCOME_OBSERVED: GOOD,
    State.REJECTED: BAD,
    State.CANCELLED: DONE,
    State.EXPIRED: DONE,
    State.SUPERSEDED: DONE,
    State.CHANGES_REQUESTED: DONE,
}
# outcomes a person must look at: the venue may or may not have it, or no one could tell
# (the executor's own statuses, the same for every kind: workers.domains.execution)
NEEDS_A_PERSON = frozenset({"unknown", "unresolved"})
# a protective order's venue statuses that end it unfilled, its line then giving the venue's
# reason (the venue model's words, workers.domains.finance.venues.model: cards sit below workers)
PROTECTIVE_ENDED = frozenset({"rejected", "cancelled"})


@dataclass(frozen=True)
class Headline:
    """What an operation's state says, in every language, and how it reads (a template colour)."""

    said: Mapping[Lang, str]
    tone: str

    def words(self, lang: Lang) -> str:
        return self.said[lang]

    def every_lang(self) -> dict[Lang, str]:
        return dict(self.said)


def _catalogued(key: str, tone: str, **values: str) -> Headline:
    return Headline({lang: text(key, lang, **values) for lang in LANGS}, tone)


def kind_words(view: OperationView, which: str, lang: Lang, **values: str) -> str:
    """The kind's own words as the projection carries them (`title`, `waiting`, `partly`:
    workers.domains.words.KindWords); a projection filed before it carried them reads the
    catalogue's words for any operation (`kind.<which>`)."""
    words = (view.terms.get("words") or {}).get(which) or {}
    template = words.get(lang) if isinstance(words, Mapping) else None
    if not isinstance(template, str) or not template:
        return text(f"kind.{which}", lang, **values)
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError):  # a domain's words that do not fit: as they are
        return template


def title_of(view: OperationView, lang: Lang) -> str:
    """What the operation is, in a line: the projection's title ("BUY 0.01 BTC-PERP"; its own
    in `lang` where it has one, else worded from its terms), else the kind's title ("Confirm
    order")."""
    title = view.terms.get("title")
    if not title:
        return kind_words(view, "title", lang)
    if lang == "en":
        return str(title)
    own = view.terms.get(f"title_{lang}")  # a title the domain gave in `lang` (service.call)
    if isinstance(own, str) and own:
        return own
    return stored_title(view.kind, view.terms.get("terms", []), lang) or str(title)


def outcome_words(outcome: OutcomeView, lang: Lang) -> str:
    """What an outcome's status says: the words stored with it (its domain's); an operation
    that closed without running reads the catalogue's (`outcome.declined`, ...)."""
    said = outcome.words.get(lang)
    return said if said else text(f"outcome.{outcome.status}", lang)


def person(open_id: Any, people: Mapping[str, str]) -> str:
    """A person by their configured display name, else by their id."""
    if not isinstance(open_id, str) or not open_id:
        return "?"
    return people.get(open_id, open_id)


def shortened(words: str, limit: int) -> str:
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


# a card's error when the bot serving it runs with Lark off (`run --dev`): said where it is
# served (bot/api/unposted.py), never stored
CARD_LARK_OFF = (
    'not posted: Lark is off here ([lark] mode = "off", as under run --dev); '
    "start with `countersign run --sandbox` to see cards, or configure [lark]"
)


def headline(view: OperationView, people: Mapping[str, str]) -> Headline:
    outcome = view.outcome
    if outcome is not None:
        said = {lang: outcome_words(outcome, lang) for lang in LANGS}
        return Headline(said, TONE_COLOUR.get(outcome.tone, DONE))
    state = view.state
    if state is State.PREPARED and view.card.error is not None:  # it never reached Lark
        key = "headline.lark_off" if view.card.error == CARD_LARK_OFF else "headline.not_posted"
        return _catalogued(key, WARN)
    if state in OPEN_STATES:
        confirmed = view.approval.confirmed_by
        if confirmed:
            values = {"count": str(len(confirmed)), "required": str(view.approval.required)}
            said = {lang: kind_words(view, "partly", lang, **values) for lang in LANGS}
            return Headline(said, WAITING)
        return Headline({lang: kind_words(view, "waiting", lang) for lang in LANGS}, WAITING)
    if state is State.REJECTED:
        decision = view.decision
        who = person(decision.by if decision else None, people)
        reason = decision.reason if decision else None
        if reason:  # the operator's words: text, never markup (cards/plain_text.py)
            shown = shortened(people_text(reason, WORDS_MAX_CHARS), HEADLINE_REASON_CHARS)
            values = {"who": who, "reason": shown}
            return _catalogued("headline.rejected.reason", BAD, **values)
        return _catalogued("headline.rejected", BAD, who=who)
    if state is State.CHANGES_REQUESTED:
        who = person(view.decision.by if view.decision else None, people)
        return _catalogued("headline.changes_requested", DONE, who=who)
    if state in (State.CLAIMED, State.OUTCOME_OBSERVED):
        return _catalogued("headline.executing", WORKING)
    return _catalogued(f"headline.{state}", STATE_TONE.get(state, DONE))


def needs_attention(view: OperationView) -> str | None:
    """Why a person should look at this operation now (a catalogue key), or None."""
    if view.state in OPEN_STATES:
        return "attention.awaiting"
    outcome = view.outcome
    if outcome is not None and outcome.status in NEEDS_A_PERSON:
        return f"attention.{outcome.status}"
    if view.card.delivery is CardDelivery.FAILED:
        return "attention.card_failed"
    return None


def state_words(state: str, lang: Lang) -> str:
    """A lifecycle state as a word (filters, tables): "awaiting confirmation", not snake_case."""
    return text(f"state.word.{state}", lang)


def when(iso: str, tz: tzinfo = UTC) -> str:
    """An absolute time to the minute, with its zone: 2026-12-05 08:30 UTC (every surface's
    one way: kernel/display.py)."""
    return display_when(iso, tz)


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


# the terms that are a quantity or a price (shown grouped, with the decimals they were filed
# with: what the venue took) and an amount in a currency ("30 USDC": to its precision)
NUMBER_TERMS = frozenset(
    {"quantity", "limit_price", "stop_loss", "take_profit", "leverage", "max_slippage_bps"}
)
AMOUNT_TERMS = frozenset({"max_fee"})
# a decimal and a currency code: an amount whatever its term is named (never an id: ids have
# no space and no currency code after them)
AMOUNT_WITH_CURRENCY = re.compile(r"-?\d+(\.\d+)? [A-Z][A-Z0-9]{1,11}")


def term_value(term: Mapping[str, Any], lang: Lang) -> str:
    """A term's value as every surface shows it: numbers grouped at their precision
    (kernel/display.py), the rest as `value_words` says them. Only the words: the term, and
    so the digest, keep the value as filed."""
    name, value = term.get("name"), term["value"]
    if isinstance(value, str) and (name in AMOUNT_TERMS or AMOUNT_WITH_CURRENCY.fullmatch(value)):
        # any kind's amount in its currency ("2500.00 USD": a service's marked argument)
        return amount_text(value)
    if name in NUMBER_TERMS and not isinstance(value, bool):
        return number(value)
    worded = stored_value(str(name), value, lang)  # an enumerated value: "buy", "GTC"
    return worded if worded is not None else value_words(value, lang)


def term_label(term: Mapping[str, Any], lang: Lang) -> str:
    """A term's label as the projection carries it (its domain's words); a term filed
    without one reads as its name."""
    label = term.get("label")
    said = label.get(lang) if isinstance(label, Mapping) else None
    return str(said) if said else str(term["name"]).replace("_", " ").capitalize()
