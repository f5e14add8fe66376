"""What each dashboard page shows, from the one projection and an operation's records: rows of
the lists, the detail page's header lines and tables. Pure; `bot/api/dashboard_html.py` puts
them into the templates.

The words are the card's: the headline and its tone (`cards.vocabulary.headline`), outcome
titles and term labels as the data carries them (the domain's own), people by name, times
absolute in the display zone (how long from now too where the page refreshes itself),
numbers grouped at their precision, the rest from the one catalogue in en and zh.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from bot.api.dashboard_policy import FiledUnder, policy_facts
from bot.api.dashboard_words import Now, ident, label, long_text, moment, tone_class
from bot.api.web_words import confirmer_words
from cards.approval import approval_elements
from cards.outcomes import UNSEEN, Seen, newest_per_stage, outcome_parts, outcome_title, seen_of
from cards.strings import TEXT, Lang, decision_key, reason_key, refusal_text, text, toast_key
from cards.vocabulary import (
    OPEN_STATES,
    headline,
    needs_attention,
    person,
    span,
    term_label,
    term_value,
    title_of,
    when,
)
from cards.world import world_of, world_words
from kernel.display import amount_text
from kernel.reasons import Reason
from kernel.timeutil import iso_utc, parse_iso_utc
from store import OperationView, State

Cell = str | dict[str, Any] | None
# terms that are digests: cut short like an id (whole on hover), never wrapped
DIGEST_TERMS = frozenset({"text_sha256"})
Line = list[Cell]


def outcome_text(view: OperationView, lang: Lang = "en") -> str:
    """The outcome as the card titles it: newest per stage, its world marked, stages in order."""
    return " → ".join(
        outcome_title(outcome, world_of(view), lang) for outcome in newest_per_stage(view.outcomes)
    )


def outcome_details(detail: Mapping[str, Any], lang: Lang, seen: Seen = UNSEEN) -> str:
    """An outcome's details in the card's words: fills, fees, message, reason, protective."""
    return "; ".join(outcome_parts(dict(detail), lang, seen))


def world_chip(view: OperationView, lang: Lang) -> dict[str, Any] | None:
    """The world's mark beside the title, as the card's header tag (None: no world)."""
    world = world_of(view)
    if world is None:
        return None
    return {"text": world_words(world, lang), "cls": f"sim world-{world.value}"}


def chip(view: OperationView, people: Mapping[str, str], lang: Lang) -> dict[str, Any]:
    said = headline(view, people)
    return {
        "text": said.words(lang),
        "title": said.words(lang),
        "cls": f"chip {tone_class(said.tone)}",
    }


def proposer(view: OperationView, people: Mapping[str, str]) -> str:
    requester = view.source.requester_open_id
    name = view.source.proposer
    return f"{name} ({person(requester, people)})" if requester else name


def row(
    view: OperationView,
    people: Mapping[str, str],
    now: Now,
    lang: Lang,
    column: str,
    *,
    note: bool = True,
) -> dict[str, Any]:
    """One operation in a list: id, what, its state in words (and, with `note`, why it needs
    a person), who proposed it, one time (`column`: expires, created or updated)."""
    reason = needs_attention(view) if note else None
    times = {"expires": view.expires_at, "created": view.created_at, "updated": view.updated_at}
    shown = times[column]
    return {
        "id": view.id,
        "title": title_of(view, lang),
        "simulated": view.simulated,
        "world": world_chip(view, lang),
        "chip": chip(view, people, lang),
        # beside the chip, why it needs a person; "to confirm" already says it awaits one
        "attention": text(reason, lang) if reason and reason != "attention.awaiting" else None,
        "proposer": proposer(view, people),
        "time": moment(shown, now, lang),
        # who confirmed, where and when (bot/api/web_words.py)
        "confirmers": confirmer_words(view, people, lang, now.tz),
    }


def pieces(key: str, lang: Lang, slot: str, cell: Cell, **values: str) -> Line:
    """A catalogue sentence with one of its values as a cell (a time with its hover, a span
    a test or a reader can find): the words around it stay the catalogue's."""
    template = (TEXT.get(key) or {}).get(lang, "")
    before, found, after = template.partition("{" + slot + "}")
    if not found:
        return [text(key, lang, **values)]
    return [before.format(**values), cell, after.format(**values)]


def _at(key: str, iso: str | None, now: Now, lang: Lang, **values: str) -> Line:
    """A catalogue sentence with a time in it ("Confirmed by Bob at {at}"), as `moment`
    says it."""
    if not iso:
        return [text(key, lang, at="?", **values)]
    return pieces(key, lang, "at", moment(iso, now, lang), **values)


def approval_lines(view: OperationView, people: Mapping[str, str], lang: Lang) -> list[Line]:
    """What the approval policy asks and who has confirmed, as the card says it."""
    lines: list[Line] = []
    for element in approval_elements(view, lang, lambda open_id: person(open_id, people)):
        content = element.get("content") or (element.get("text") or {}).get("content")
        if content:
            lines.append([str(content)])
    return lines


def header_lines(
    view: OperationView, people: Mapping[str, str], now: Now, lang: Lang
) -> list[Line]:
    """Who proposed it and why, when it expires (until decided), the decision."""
    requester = view.source.requester_open_id
    name = view.source.proposer
    lines: list[Line] = [
        [text("card.proposed.for", lang, proposer=name, who=person(requester, people))]
        if requester
        else [text("card.proposed", lang, proposer=name)]
    ]
    if why := view.source.reason:
        lines.append(pieces("card.why", lang, "reason", long_text(why)))
    state = view.state
    if state in OPEN_STATES:
        lines.append(_at("card.expires", view.expires_at, now, lang))
        if auto := view.auto_send_at:  # a time-boxed draft: when it sends itself
            lines.append(_at("card.auto_send", auto, now, lang))
    decision = view.decision
    if decision is not None and decision.by:
        key = decision_key(decision.action)
        who = person(decision.by, people)
        lines.append(_at(key, decision.at, now, lang, who=who))
        entry = label(f"entry.{decision.entry}", lang)
        lines.append([label("fact.entry", lang) + label("colon", lang) + entry])
        if decision.reason:
            reason = {**long_text(decision.reason), "id": "decision-reason"}
            said = reason_key(decision.action)
            lines.append(pieces(said, lang, "reason", reason))
    elif state is State.EXPIRED:
        lines.append(_at("state.expired", view.expires_at, now, lang))
    elif state in (State.CANCELLED, State.SUPERSEDED):
        lines.append([text(f"state.{state}", lang)])
    return lines + approval_lines(view, people, lang)


def facts(
    view: OperationView, people: Mapping[str, str], now: Now, lang: Lang
) -> list[tuple[str, Cell]]:
    audience = view.audience
    operators = ", ".join(person(open_id, people) for open_id in audience.operators)
    executor = view.executor
    return [
        (label("col.operation", lang), ident(view.id)),
        (label("fact.kind", lang), {"text": view.kind, "cls": "code"}),
        (label("fact.executor", lang), f"{executor.name} r{executor.revision}"),
        (label("fact.audience", lang), f"{audience.name} · {operators}"),
        (label("fact.digest", lang), ident(view.confirm_digest, short=True)),
        (label("fact.request", lang), ident(view.source.request_id)),
        (label("col.created", lang), moment(view.created_at, now, lang)),
        (label("col.updated", lang), moment(view.updated_at, now, lang)),
        *_signal_fact(view, people, now, lang),
    ]


def signal_timeline(
    view: OperationView, people: Mapping[str, str], lang: Lang, now: Now | None = None
) -> str | None:
    """A draft that answers an inbound message: inbound -> drafted -> sent, with the time each
    step took ("om_1 from Carl at 10:00 UTC → drafted 2 min later → sent 3 min later")."""
    signal = view.terms.get("signal")
    if not isinstance(signal, dict):
        return None
    received = parse_iso_utc(str(signal["received_at"]))
    drafted = parse_iso_utc(view.created_at)
    steps = [
        label("timeline.inbound", lang).format(
            id=signal["id"],
            who=person(signal.get("sender"), people),
            at=when(str(signal["received_at"]), now.tz if now else UTC),
        ),
        label("timeline.drafted", lang).format(
            span=span((drafted - received).total_seconds(), lang)
        ),
    ]
    sent = next(
        (o.observed_at for o in view.outcomes if o.status == "sent" and o.observed_at), None
    )
    if sent is not None:
        delay = (parse_iso_utc(sent) - drafted).total_seconds()
        steps.append(label("timeline.sent", lang, span=span(delay, lang)))
    return " → ".join(steps)


def _signal_fact(
    view: OperationView, people: Mapping[str, str], now: Now, lang: Lang
) -> list[tuple[str, Cell]]:
    timeline = signal_timeline(view, people, lang, now)
    if timeline is None:
        return []
    return [(label("fact.signal", lang), {**long_text(timeline), "id": "signal-timeline"})]


def table(key: str, lang: Lang, headers: Sequence[str], rows: list[list[Cell]]) -> dict[str, Any]:
    return {
        "key": key,
        "title": label(f"section.{key}", lang),
        "headers": [label(f"col.{header}", lang) for header in headers],
        "rows": rows,
    }


def _when(at: datetime | None, now: Now, lang: Lang) -> Cell:
    return moment(iso_utc(at), now, lang) if at else None


def click_result(click: Any, lang: Lang) -> Cell:
    if click.accepted:
        return text(toast_key(click.action), lang)
    try:
        words = refusal_text(Reason(click.reason_code), lang)
    except ValueError:
        words = str(click.reason_code)
    if click.refusals > 1:  # a person's refused web posts on this operation, one row
        words = label("click.refused_times", lang, words=words, count=str(click.refusals))
    return {**long_text(words), "title": str(click.reason_code)}


def record_tables(
    view: OperationView,
    records: Mapping[str, Any],
    people: Mapping[str, str],
    now: Now,
    lang: Lang,
) -> list[dict[str, Any]]:
    """Terms, outcomes, clicks, the attempt, card and result deliveries: tables with headers."""
    terms: list[list[Cell]] = []
    for term in view.terms.get("terms", []):
        value = term_value(term, lang)
        shown = ident(value, short=True) if term["name"] in DIGEST_TERMS else long_text(value)
        terms.append([term_label(term, lang), shown])
    # the worst case the domain computed, a term on the card as here
    if notional := view.approval.notional:
        terms.append([text("approval.notional", lang), long_text(amount_text(notional))])
    outcomes: list[list[Cell]] = [
        [
            label(f"stage.{outcome.stage}", lang),
            outcome_title(outcome, world_of(view), lang),
            _details(view, outcome, now, lang),
            ident(outcome.outcome_digest, short=True),
        ]
        for outcome in view.outcomes
    ]
    clicks: list[list[Cell]] = [
        [
            _when(click.at, now, lang),
            person(click.operator_open_id, people),
            text(f"button.{click.action}", lang)
            if click.action in ("confirm", "reject")
            else str(click.action),
            click_result(click, lang),
        ]
        for click in records.get("confirmations", [])
    ]
    attempt = records.get("attempt")
    # where the attempt stands is the operation's execution state (the attempt keeps no copy)
    execution = view.execution.state if view.execution else None
    attempts: list[list[Cell]] = (
        [
            [
                ident(attempt.client_id),
                label(f"execution.{execution}", lang) if execution else None,
                _when(attempt.dispatched_at, now, lang),
                _when(attempt.resolved_at, now, lang),
                long_text(attempt.last_error) if attempt.last_error else None,
            ]
        ]
        if attempt
        else []
    )
    cards: list[list[Cell]] = [
        [
            _when(card.at, now, lang),
            label(f"card.{card.action}", lang),
            f"v{card.version}",
            label("ok", lang)
            if card.ok
            else long_text(f"{label('failed', lang)} {card.code or ''}: {card.detail or ''}"),
        ]
        for card in records.get("card", [])
    ]
    deliveries: list[list[Cell]] = [
        [
            ident(delivery.id, short=True),
            label(f"channel.{delivery.channel}", lang),
            label(f"stage.{delivery.stage}", lang),
            label(f"delivery.{delivery.state}", lang),
            str(delivery.attempts),
            long_text(delivery.result or delivery.last_error or ""),
        ]
        for delivery in records.get("deliveries", [])
    ]
    return [
        table("terms", lang, ["term", "value"], terms),
        table("outcomes", lang, ["stage", "result", "details", "digest"], outcomes),
        table("clicks", lang, ["when", "who", "button", "result"], clicks),
        table("attempt", lang, ["client_id", "execution", "sent", "resolved", "error"], attempts),
        table("cards", lang, ["when", "action", "version", "result"], cards),
        table(
            "deliveries",
            lang,
            ["delivery", "channel", "stage", "state", "attempts", "result"],
            deliveries,
        ),
    ]


def _details(view: OperationView, outcome: Any, now: Now, lang: Lang) -> Cell:
    """An outcome's details as the card says them; a sent message's Lark id on hover."""
    cell = long_text(outcome_details(outcome.detail, lang, seen_of(view, outcome, now.tz)))
    if message_id := outcome.detail.get("message_id"):
        cell["title"] = text("card.footer.message", lang, message_id=str(message_id))
    return cell


def filed_facts(records: Mapping[str, Any], now: Now, lang: Lang) -> list[tuple[str, Cell]]:
    filed = records.get("policy")
    return policy_facts(filed, now, lang) if isinstance(filed, FiledUnder) else []


def detail(
    view: OperationView,
    records: Mapping[str, Any],
    people: Mapping[str, str],
    now: Now,
    lang: Lang,
) -> dict[str, Any]:
    return {
        "id": view.id,
        "title": title_of(view, lang),
        "simulated": view.simulated,
        "world": world_chip(view, lang),
        "chip": chip(view, people, lang),
        "outcome": outcome_text(view, lang),
        "lines": header_lines(view, people, now, lang),
        "facts": facts(view, people, now, lang) + filed_facts(records, now, lang),
        "tables": record_tables(view, records, people, now, lang),
    }
