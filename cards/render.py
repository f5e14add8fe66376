"""Operation projection -> Lark card JSON 2.0, for a phone-width client. Pure: the same view
renders the same card.

Read top to bottom, the card answers what a person asks in order: what is this and where
does it stand (the header: the headline in words, coloured by state, SIMULATED tagged);
what happened (the outcome, once there is one, then the decision); who wants it and why;
until when; the exact terms; what to do (the buttons, while it waits); and, small at the
foot, the audit details (operation id, digest prefix, executor revision).

People are named by their configured display name; without one, by an <at> mention when
Lark is known to accept the open id (the audience's operators, verified at setup: Lark
refuses a whole card for an unknown one), else by the id in plain text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any

from cards.approval import approval_elements, deciders_words
from cards.decide import (
    CALLBACK_VALUE_VERSION,
    REASON_FIELD,
    REASON_MAX_CHARS,
    WITHOUT_REASON,
    Threshold,
    callback_value,
    decide_elements,
)
from cards.outcomes import newest_per_stage, outcome_lines, plain_text, seen_of
from cards.plain_text import WORDS_MAX_CHARS, people_text
from cards.strings import LANGS, LARK_LOCALE, Lang, reason_key, text
from cards.terms import each_lang, term_elements
from cards.vocabulary import (
    EXECUTING,
    NEEDS_A_PERSON,
    OPEN_STATES,
    headline,
    title_of,
    when,
)
from cards.world import world_of, world_tag
from kernel.display import amount_text
from store import Entry, OperationView, State, Tone

__all__ = [
    "CALLBACK_VALUE_VERSION",
    "EXECUTING",
    "REASON_FIELD",
    "REASON_MAX_CHARS",
    "SHORT_DIGEST",
    "WITHOUT_REASON",
    "callback_value",
    "render_card",
]

OPEN_ID = re.compile(r"ou_[A-Za-z0-9_-]{1,120}")
SHORT_DIGEST = 12
NO_PEOPLE: Mapping[str, str] = {}


def _verified(view: OperationView, open_id: Any) -> bool:
    """An open id Lark accepts in <at>: one of the audience's operators (checked at setup)."""
    operators = view.audience.operators
    return isinstance(open_id, str) and bool(OPEN_ID.fullmatch(open_id)) and open_id in operators


class People:
    """How this card names each person: a name, a mention, or the id as it is."""

    def __init__(self, view: OperationView, names: Mapping[str, str]) -> None:
        self.view = view
        self.names = names

    def mentioned(self, open_ids: list[Any]) -> bool:
        """Whether naming these needs markdown (an <at> mention) rather than plain text."""
        return any(each not in self.names and _verified(self.view, each) for each in open_ids)

    def name(self, open_id: Any) -> str:
        if isinstance(open_id, str) and open_id in self.names:
            return self.names[open_id]
        if _verified(self.view, open_id):
            return f"<at id={open_id}></at>"
        return str(open_id or "?")


def _said(
    element_id: str | None, words: Callable[[Lang], str], lang: Lang, markdown: bool
) -> dict[str, Any]:
    """A line in every locale: markdown where it mentions someone, plain text otherwise."""
    element: dict[str, Any]
    if markdown:
        element = {
            "tag": "markdown",
            "content": words(lang),
            "i18n_content": {LARK_LOCALE[each]: words(each) for each in LANGS},
        }
    else:
        element = {"tag": "div", "text": each_lang(words, lang)}
    if element_id:
        element["element_id"] = element_id
    return element


# the decision's line names where it was made when that was not a card: the web, the clock
ENTRY_SUFFIX = {Entry.WEB: ".web", Entry.AUTO: ".auto"}


def _decision(view: OperationView, people: People, tz: tzinfo, lang: Lang) -> list[dict[str, Any]]:
    """Who decided, when (and why, for a reject), once the operation is decided."""
    state = view.state
    if state in OPEN_STATES:
        return []
    decision = view.decision
    deciders: list[str | None] = [decision.by if decision else None]
    confirmed = view.approval.confirmed_by
    if state in (State.CLAIMED, State.OUTCOME_OBSERVED) and len(confirmed) > 1:
        deciders = list(confirmed)  # a quorum: every one of them
    decided_at = decision.at if decision else None
    at = when(decided_at, tz) if decided_at else when(view.updated_at, tz)
    if state is State.EXPIRED:
        at = when(view.expires_at, tz)
    named = [each for each in deciders if each]
    delegators = [
        view.approval.delegated[each].on_behalf_of
        for each in named
        if each in view.approval.delegated
    ]

    def who(each: Lang) -> str:
        if len(named) < len(deciders):  # nobody decided (expired): as before
            return ", ".join(people.name(one) for one in deciders)
        return deciders_words(view, named, people.name, each, tz)

    # where the (last) decision was made: the card says so when it was not on a card
    key = f"state.{state}" + (
        ENTRY_SUFFIX.get(decision.entry, "") if decision is not None and decision.by else ""
    )
    elements = [
        _said(
            "status",
            lambda each: text(key, each, who=who(each), at=at),
            lang,
            people.mentioned([*deciders, *delegators]),
        )
    ]
    if decision is not None and decision.reason:  # the operator's words: they never format
        said = reason_key(decision.action)
        reason = decision.reason

        def given(each: Lang) -> str:
            return people_text(reason, WORDS_MAX_CHARS, each)

        elements.append(
            {
                "tag": "div",
                "element_id": "decision_reason",
                "text": plain_text(
                    text(said, lang, reason=given(lang)),
                    {LARK_LOCALE[each]: text(said, each, reason=given(each)) for each in LANGS},
                ),
            }
        )
    return elements


def _proposer(view: OperationView, people: People, lang: Lang) -> list[dict[str, Any]]:
    """Who proposed it (for whom), and why in the proposer's words."""
    source = view.source
    proposer = source.proposer
    requester = source.requester_open_id or None
    known = requester is not None and (requester in people.names or _verified(view, requester))

    def words(each: Lang) -> str:
        if requester is None:
            return text("card.proposed", each, proposer=proposer)
        if known:
            who = people.name(requester)
            return text("card.proposed.for", each, proposer=proposer, who=who)
        # an id Lark has not vouched for: shown, never mentioned
        unverified = text("requested_by.unverified", each, who=str(requester))
        return f"{text('card.proposed', each, proposer=proposer)} · {unverified}"

    markdown = known and people.mentioned([requester])
    elements = [_said("proposer", words, lang, markdown)]
    if given := source.reason:  # the proposer's words, plain text like an operator's

        def why(each: Lang) -> str:
            reason = people_text(given, WORDS_MAX_CHARS, each)
            return text("card.why", each, reason=reason)

        elements.append(_said("why", why, lang, markdown=False))
    return elements


def _expiry(view: OperationView, tz: tzinfo, lang: Lang) -> list[dict[str, Any]]:
    """Until when it waits, as an absolute time: a card is a static message, and "in 59 min"
    on it would go stale."""
    if view.state not in OPEN_STATES:
        return []  # decided: when it would have expired no longer matters

    def words(each: Lang) -> str:
        return text("card.expires", each, at=when(view.expires_at, tz))

    return [_said("expires", words, lang, markdown=False)]


def _auto_send(view: OperationView, tz: tzinfo, lang: Lang) -> list[dict[str, Any]]:
    """A time-boxed draft, while it waits: when it sends itself if nobody decides."""
    at = view.auto_send_at
    if view.state not in OPEN_STATES or not at:
        return []

    def words(each: Lang) -> str:
        return text("card.auto_send", each, at=when(at, tz))

    return [_said("auto_send", words, lang, markdown=False)]


def _footer(view: OperationView, lang: Lang) -> list[dict[str, Any]]:
    values = {
        "id": view.id,
        "digest": view.confirm_digest[:SHORT_DIGEST],
        "executor": view.executor.name,
        "revision": view.executor.revision,
    }
    # a sent message's Lark id: a detail, with the audit's (its line says to whom and when)
    sent = [str(o.detail["message_id"]) for o in view.outcomes if o.detail.get("message_id")]

    def words(each: Lang) -> str:
        said = text("card.footer", each, **values)
        if sent:
            said += " · " + text("card.footer.message", each, message_id=sent[-1])
        return said

    return [
        {"tag": "hr"},
        {
            "tag": "div",
            "element_id": "audit",
            "text": each_lang(words, lang, text_size="notation"),
        },
    ]


def _notional(
    view: OperationView,
) -> list[tuple[str, tuple[Callable[[Lang], str], Callable[[Lang], str]]]]:
    """The worst-case notional the domain computed, as one more term."""
    notional = view.approval.notional
    if not notional:
        return []
    return [
        (
            "notional",
            (lambda each: text("approval.notional", each), lambda _each: amount_text(notional)),
        )
    ]


def text_key(view: OperationView) -> str:
    """What a message text's label says became of it: to be sent as shown while it waits or
    runs, as sent, maybe sent (nobody can tell), or not sent (closed without it)."""
    outcome = view.outcome
    if outcome is None:
        waiting = view.state in OPEN_STATES or view.state is State.CLAIMED
        return "text.block" if waiting else "text.block.closed"
    if outcome.status in NEEDS_A_PERSON:
        return "text.block.unsure"
    return "text.block.sent" if outcome.tone is Tone.GOOD else "text.block.closed"


def _header(view: OperationView, names: Mapping[str, str], lang: Lang) -> dict[str, Any]:
    said = headline(view, names)
    words = said.every_lang()
    titles = {LARK_LOCALE[each]: title_of(view, each) for each in LANGS}
    header: dict[str, Any] = {
        "template": said.tone,
        "title": plain_text(words[lang], {LARK_LOCALE[each]: words[each] for each in LANGS}),
        # the projection's title (one language) or, without one, the kind's (every language)
        "subtitle": plain_text(
            title_of(view, lang), titles if len(set(titles.values())) > 1 else None
        ),
    }
    tag = world_tag(view, lang)
    if tag is not None:
        header["text_tag_list"] = [tag]
    return header


def render_card(
    view: OperationView,
    *,
    lang: Lang = "en",
    now: datetime,
    tz: tzinfo = UTC,
    people: Mapping[str, str] = NO_PEOPLE,
    second_look_above: Threshold | None = None,
) -> dict[str, Any]:
    """The card for one operation in its current state (`second_look_above`: the amount above
    which Confirm asks Lark's dialog first, cards/decide.py)."""
    named = People(view, people)
    elements: list[dict[str, Any]] = []
    for outcome in newest_per_stage(view.outcomes):  # original, then reconciled
        seen = seen_of(view, outcome, tz)
        elements += outcome_lines(outcome, world=world_of(view), lang=lang, seen=seen)
    elements += _decision(view, named, tz, lang)
    elements += _proposer(view, named, lang)
    elements += _expiry(view, tz, lang)
    elements += _auto_send(view, tz, lang)
    elements += approval_elements(view, lang, named.name)
    elements.append({"tag": "hr"})
    elements += term_elements(view.terms["terms"], _notional(view), lang, text_key(view))
    if view.state in OPEN_STATES:
        elements += decide_elements(view, lang, second_look_above)
    elements += _footer(view, lang)
    header = _header(view, people, lang)
    summary = header["title"]["content"]  # the chat list's preview: where it stands
    return {
        "schema": "2.0",
        "config": {
            "update_multi": True,
            "summary": {"content": summary},
            "locales": [LARK_LOCALE[each] for each in LANGS],
        },
        "header": header,
        "body": {"elements": elements},
    }
