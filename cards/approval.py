"""What the approval policy asks of an operation, on its card. Pure. (The worst-case notional
is one of the card's terms: cards/terms.py.)

An operation that needs one confirmation from any operator shows nothing here: that is the
card as it always was. One that needs more, or that a rule narrowed, says so under its
terms ("Needs 2 of 3 operators — above 50,000 USDC"), shows its worst-case notional, who has
confirmed so far while it waits, and asks a second look (Lark's button `confirm` dialog, with
the key terms) before a Confirm is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, tzinfo
from typing import Any

from cards.outcomes import plain_text
from cards.strings import LANGS, LARK_LOCALE, Lang, text
from cards.vocabulary import OPEN_STATES, title_of, when
from kernel.display import amount_text
from store import ApprovalView, OperationView

OPEN_ID_MENTION = "<at id={open_id}></at>"


def needs_a_second_look(view: OperationView) -> bool:
    """More than one confirmation, or a rule applied (an amount or kind crossed a line)."""
    return view.approval.required > 1 or view.approval.rule is not None


def why_words(approval: ApprovalView, lang: Lang) -> str:
    """Why a rule applied, amounts as every surface shows them (the CLI says it too)."""
    threshold = approval.threshold
    if threshold is None:
        return text("approval.rule", lang, name=str(approval.rule))
    notional = str(approval.notional or "")
    key = "approval.unknown" if notional.startswith("unknown") else "approval.above"
    return text(key, lang, amount=amount_text(threshold))


def _each_lang(words: Callable[[Lang], str], lang: Lang) -> dict[str, Any]:
    return plain_text(words(lang), {LARK_LOCALE[each]: words(each) for each in LANGS})


def _people(open_ids: list[str], mention: Callable[[str], str]) -> str:
    return ", ".join(mention(open_id) for open_id in open_ids)


def acting_words(
    view: OperationView, open_id: str, mention: Callable[[str], str], lang: Lang, tz: tzinfo = UTC
) -> str:
    """A person as a decision names them: "Bob", or "Bob, for Alice, until 2026-12-10 18:00
    UTC" where they confirmed with Alice's delegated right."""
    right = view.approval.delegated.get(open_id)
    if right is None:
        return mention(open_id)
    whom = mention(right.on_behalf_of)
    return text("approval.for", lang, who=mention(open_id), whom=whom, until=when(right.until, tz))


def deciders_words(
    view: OperationView,
    open_ids: list[str],
    mention: Callable[[str], str],
    lang: Lang,
    tz: tzinfo = UTC,
) -> str:
    return ", ".join(acting_words(view, open_id, mention, lang, tz) for open_id in open_ids)


def approval_elements(
    view: OperationView, lang: Lang, mention: Callable[[str], str]
) -> list[dict[str, Any]]:
    """The policy line, the notional and, while it waits, who has confirmed (`mention`:
    how a person is named on this card)."""
    if not needs_a_second_look(view):
        return []
    approval = view.approval
    required = approval.required
    approvers = approval.approvers
    audience = view.audience.operators

    def needs(each: Lang) -> str:
        if len(approvers) < len(audience) and required == 1:
            return text(
                "approval.only", each, who=_people(approvers, str), why=why_words(approval, each)
            )
        if approval.rule is None:
            return text(
                "approval.needs.plain", each, required=str(required), of=str(len(approvers))
            )
        return text(
            "approval.needs",
            each,
            required=str(required),
            of=str(len(approvers)),
            why=why_words(approval, each),
        )

    elements: list[dict[str, Any]] = [
        {"tag": "div", "element_id": "approval_needs", "text": _each_lang(needs, lang)}
    ]
    confirmed = approval.confirmed_by
    if confirmed and view.state in OPEN_STATES:
        values = {
            "count": str(len(confirmed)),
            "required": str(required),
            "left": str(max(required - len(confirmed), 0)),
        }

        def progress(each: Lang) -> str:
            who = deciders_words(view, confirmed, mention, each)
            return text("approval.progress", each, who=who, **values)

        elements.append(
            {
                "tag": "markdown",
                "element_id": "approval_progress",
                "content": progress(lang),
                "i18n_content": {LARK_LOCALE[each]: progress(each) for each in LANGS},
            }
        )
    return elements


def confirm_dialog(
    view: OperationView, lang: Lang, *, high_value: bool = False
) -> dict[str, Any] | None:
    """Lark's confirmation dialog for the Confirm button, with the key terms (None: none).
    `high_value`: asked for a reason of the caller's too (cards/decide.py's rule)."""
    if not (high_value or needs_a_second_look(view)):
        return None
    approval = view.approval

    def body(each: Lang) -> str:
        return text(
            "approval.dialog.text",
            each,
            title=title_of(view, each),
            notional=amount_text(approval.notional) if approval.notional else "-",
            required=str(approval.required),
            of=str(len(approval.approvers)),
        )

    return {
        "title": _each_lang(lambda each: text("approval.dialog.title", each), lang),
        "text": _each_lang(body, lang),
    }
