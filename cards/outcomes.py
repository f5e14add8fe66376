"""An outcome on a card or the dashboard: its title and its details, in every locale.

Outcomes are immutable rows, each with the words its domain gave its status when it was
written; `newest_per_stage` picks what the card shows of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import Any

from cards.plain_text import WORDS_MAX_CHARS, people_text
from cards.stored_words import stored_said
from cards.strings import LANGS, LARK_LOCALE, Lang, text
from cards.vocabulary import PROTECTIVE_ENDED, outcome_words, when
from cards.world import in_world
from kernel.display import money, number
from store import OperationView, OutcomeView, Stage, World

# the terms that say who a message goes to, the first one present naming them
RECIPIENT_TERMS = ("counterparty", "destination")


@dataclass(frozen=True)
class Seen:
    """What an outcome's words need besides its detail: whom a sent message went to and
    when the outcome was observed (in the display zone). Nothing known: the detail alone."""

    to: str | None = None
    at: str | None = None


UNSEEN = Seen()


def seen_of(view: OperationView, outcome: OutcomeView, tz: tzinfo = UTC) -> Seen:
    terms = {term["name"]: term["value"] for term in view.terms.get("terms", [])}
    to = next((str(terms[name]) for name in RECIPIENT_TERMS if terms.get(name)), None)
    return Seen(to, when(outcome.observed_at, tz) if outcome.observed_at else None)


def plain_text(content: str, i18n_content: dict[str, str] | None = None) -> dict[str, Any]:
    element: dict[str, Any] = {"tag": "plain_text", "content": content}
    if i18n_content:
        element["i18n_content"] = i18n_content
    return element


def newest_per_stage(outcomes: Sequence[OutcomeView]) -> list[OutcomeView]:
    """Progress (resting, then filled) replaces its stage's line; stages keep their order."""
    newest: dict[Stage, OutcomeView] = {}
    for outcome in outcomes:
        newest[outcome.stage] = outcome  # a key keeps its first position
    return list(newest.values())


def outcome_title(outcome: OutcomeView, world: World | None, lang: Lang) -> str:
    """The outcome's own words (stored with it), its world and a reconciliation marked."""
    title = in_world(outcome_words(outcome, lang), world, lang)
    if outcome.stage is Stage.RECONCILED:
        title = text("outcome.reconciled", lang, status=title)
    return title


def outcome_lines(
    outcome: OutcomeView, *, world: World | None, lang: Lang, seen: Seen = UNSEEN
) -> list[dict[str, Any]]:
    """One outcome: its status (bold, per locale) and its details as plain text."""
    lines: list[dict[str, Any]] = [
        {
            "tag": "markdown",
            "content": f"**{outcome_title(outcome, world, lang)}**",
            "i18n_content": {
                LARK_LOCALE[each]: f"**{outcome_title(outcome, world, each)}**" for each in LANGS
            },
        }
    ]
    detail = outcome.detail

    def detail_text(each: Lang) -> str:
        return "; ".join(outcome_parts(detail, each, seen))

    if detail_text(lang):
        lines.append(
            {
                "tag": "div",
                "text": plain_text(
                    detail_text(lang), {LARK_LOCALE[each]: detail_text(each) for each in LANGS}
                ),
            }
        )
    return lines


def outcome_parts(detail: dict[str, Any], lang: Lang = "en", seen: Seen = UNSEEN) -> list[str]:
    """An outcome's details in words: the fill, fees (or that they are unknown), the message
    sent (to whom and when, where `seen` knows: else its id), the answer received, the
    reason, what to do next, the executor's failures, each protective order's own result.
    Numbers grouped, fees to their currency's precision (kernel/display.py)."""
    parts = []
    if detail.get("filled_qty") is not None and detail.get("avg_price") is not None:
        qty, price = number(detail["filled_qty"]), number(detail["avg_price"])
        parts.append(text("detail.filled", lang, qty=qty, price=price))
    if "fees" in detail:
        fees = detail["fees"]
        parts.append(
            text("detail.fee_unknown", lang)
            if fees is None
            else text("detail.fees", lang, fees=money(fees, detail.get("fee_currency") or None))
        )
    if detail.get("message_id"):
        parts.append(_message(str(detail["message_id"]), seen, lang))
    # what the other side answered (a service's reply), already bounded by its domain; words
    # from outside: text, never markup
    if detail.get("answer"):
        answer = people_text(str(detail["answer"]), WORDS_MAX_CHARS, lang)
        parts.append(text("detail.answer", lang, answer=answer))
    # an operator's (or a venue's) words: text, never markup (cards/plain_text.py)
    if detail.get("reason"):  # the executor's own words worded in `lang` (cards/stored_words.py)
        said = stored_said(str(detail["reason"]), lang, detail.get("code"))
        reason = people_text(said, WORDS_MAX_CHARS, lang)
        parts.append(text("detail.reason", lang, reason=reason))
    if detail.get("note"):  # what an operator asked to change in a draft sent back
        note = people_text(detail["note"], WORDS_MAX_CHARS, lang)
        parts.append(text("detail.note", lang, reason=note))
    if detail.get("hint"):  # what to do next, in its domain's words: text, never markup
        hint = people_text(stored_said(str(detail["hint"]), lang), WORDS_MAX_CHARS, lang)
        parts.append(text("detail.hint", lang, hint=hint))
    if detail.get("error_class"):  # the executor gave up (only the class: no message)
        parts += executor_failed(detail, lang)
    for child in detail.get("protective") or []:
        parts.append(protective_result(child, lang))
    return parts


def _message(message_id: str, seen: Seen, lang: Lang) -> str:
    """A sent message as a person knows it: to whom, when; its Lark id only without those."""
    if seen.at is None:
        return text("detail.message", lang, message_id=message_id)
    if seen.to is None:
        return text("detail.sent.at", lang, at=seen.at)
    return text("detail.sent", lang, to=people_text(seen.to, WORDS_MAX_CHARS, lang), at=seen.at)


def executor_failed(detail: dict[str, Any], lang: Lang) -> list[str]:
    """How many passes failed, with which error class, and whether anything left."""
    failed = text(
        "detail.executor_failed",
        lang,
        count=str(detail.get("failed_passes")),
        error=str(detail["error_class"]),
    )
    sent = "detail.nothing_sent" if detail.get("nothing_sent") else "detail.may_be_sent"
    return [failed, text(sent, lang)]


def protective_result(child: dict[str, Any], lang: Lang) -> str:
    """A protective order's own result: "Stop loss 57000: armed"."""
    role = str(child.get("role"))
    label = text(f"protective.{role}", lang, price=number(child.get("trigger_price")))
    status = text(f"protective.{child.get('status')}", lang)
    if child.get("reason") and child.get("status") in PROTECTIVE_ENDED:
        status = f"{status} ({people_text(child['reason'], WORDS_MAX_CHARS, lang)})"
    return f"{label}: {status}"
