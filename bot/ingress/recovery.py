"""What the card entry says of a click a previous run left unanswered (bot/decide/recovery.py
settles it; nothing claims or rejects).

A click with no record is refused for the reason the checks give now (a click they would let
through: `recovered_unanswered`, never applied after the fact: nobody is waiting for it, and
the operator may have moved on); its answer is the toast (and the current card) a replay of
it gets. A click on record gets the toast it was (or would have been) answered with.
"""

from __future__ import annotations

from typing import Any

from bot.decide.provenance import (
    ENVELOPE_CHECKS,
    VALUE_CHECKS,
    CardClick,
    first_refusal,
    verify_operation,
)
from bot.ingress.ack import toast
from bot.ingress.decision import Decisions, parse_click, refusal_toast
from cards.strings import toast_key
from kernel.reasons import Reason
from store import Click, Confirmation, InboxEntry, Operation


class CardLeftovers:
    """The card entry's `Leftovers` (bot/decide/recovery.py)."""

    def __init__(self, decisions: Decisions) -> None:
        self.decisions = decisions

    def click(self, entry: InboxEntry) -> Click:
        return self.decisions.decider.stored(parse_click(entry.payload))

    async def refusal(self, entry: InboxEntry) -> tuple[Reason, dict[str, Any]]:
        click = parse_click(entry.payload)
        reason, op = await self._leftover_reason(click)
        return reason, await self.decisions.refusal_answer(reason, op, click)

    async def _leftover_reason(self, click: CardClick) -> tuple[Reason, Operation | None]:
        """What the checks say now; a click they would let through is not applied."""
        ctx = self.decisions.decider.context()
        for checks in (ENVELOPE_CHECKS, VALUE_CHECKS):
            if (reason := first_refusal(checks, click, ctx)) is not None:
                return reason, None
        op = await self.decisions.store.get(click.operation_id)
        return verify_operation(click, op, ctx) or Reason.RECOVERED_UNANSWERED, op

    async def recorded_answer(self, record: Confirmation) -> dict[str, Any]:
        """The toast a click on record was (or would have been) answered with, for replays."""
        lang = self.decisions.look.lang
        if record.accepted:
            return toast("success", toast_key(record.action), lang)
        return refusal_toast(Reason(record.reason_code or Reason.MALFORMED_VALUE), lang)
