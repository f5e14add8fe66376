"""The conclusion that goes back to the proposer: a bounded reply text and the webhook body.

Pure: both are built from the operation's projection and one of its outcomes. The reply is
Lark text: whatever people typed in it (a reason, a note) is text, never markup
(cards/plain_text.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any

from cards.outcomes import outcome_parts, outcome_title, seen_of
from cards.plain_text import NAME_MAX_CHARS, TITLE_MAX_CHARS, people_text
from cards.strings import Lang, decision_key, text
from cards.vocabulary import person, title_of, when
from cards.world import world_of
from store import EXPIRED, ClickAction, OperationView, OutcomeView, Stage

__all__ = ["ENGLISH_UTC", "REPLY_MAX_CHARS", "Voice", "outcome_parts", "reply_text", "webhook_body"]

REPLY_MAX_CHARS = 1500


@dataclass(frozen=True)
class Voice:
    """How a chat text speaks: its language, its time zone, and people by name."""

    lang: Lang = "en"
    tz: tzinfo = UTC
    people: Mapping[str, str] = field(default_factory=dict)


def webhook_body(
    delivery_id: str, view: OperationView, outcome: OutcomeView, at: str
) -> dict[str, Any]:
    return {
        "delivery_id": delivery_id,
        "operation_id": view.id,
        "kind": view.kind,
        "stage": outcome.stage.value,
        "outcome": outcome.status,
        "detail": outcome.detail,
        "confirm_digest": view.confirm_digest,
        "outcome_digest": outcome.outcome_digest,
        "reconciles_digest": outcome.reconciles_digest,
        "simulated": view.simulated,
        "world": world.value if (world := world_of(view)) else None,
        "confirmed_by": _confirmed_by(view),
        "at": at,
    }


def _confirmed_by(view: OperationView) -> str | None:
    decision = view.decision
    return decision.by if decision is not None and decision.action is ClickAction.CONFIRM else None


ENGLISH_UTC = Voice()


def reply_text(view: OperationView, outcome: OutcomeView, voice: Voice = ENGLISH_UTC) -> str:
    """One bounded message: what was decided, by whom, the outcome, and the card, in the
    catalogue's words (the same the card and the dashboard use)."""
    lang = voice.lang
    decision = view.decision
    title = people_text(title_of(view, lang), TITLE_MAX_CHARS, lang)
    initial = outcome.model_copy(update={"stage": Stage.INITIAL})  # the head marks it itself
    status = outcome_title(initial, world_of(view), lang)
    if outcome.stage is Stage.RECONCILED:
        settles = str(outcome.reconciles_digest)[:12]
        head = text("reply.reconciled", lang, title=title, status=status, digest=settles)
    else:
        head = text("reply.head", lang, title=title, status=status)
    lines = [head]
    if decision is not None and decision.by:
        key = decision_key(decision.action)
        at = when(decision.at, voice.tz) if decision.at else "?"
        who = people_text(person(decision.by, voice.people), NAME_MAX_CHARS, lang)
        lines.append(text(key, lang, who=who, at=at))
    elif outcome.status == EXPIRED:
        expired_at = outcome.detail.get("expired_at")
        at = when(expired_at, voice.tz) if expired_at else "?"
        lines.append(text("reply.expired", lang, at=at))
    detail = {k: v for k, v in outcome.detail.items() if k not in ("by", "at")}
    lines += outcome_parts(detail, lang, seen_of(view, outcome, voice.tz))
    card = view.card.message_id or text("reply.no_card", lang)
    lines.append(text("reply.card", lang, card=card, id=view.id))
    # The whole reply once more through the one rule: the details carry words from outside
    # (an operator's reason or note, a venue's), and a reply too long is cut visibly.
    return people_text("\n".join(lines), REPLY_MAX_CHARS, lang, lines=True)
