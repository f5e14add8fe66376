"""The card's decision: a Lark click read from its envelope, decided by bot/decide, answered
within the ack budget with a toast and the card rendered from what the decision returned.

A click costs two writes and no read (bot/decide/decider.py): before its answer, the ONE
group-commit intent holding its inbox entry and, when its own values pass the checks, its
decision, which returns the operation as decided, so the answer's card is rendered from it;
after the answer, the answer kept for replays and the card it carried recorded as shown.
Only a click the database refused reads its operation, for the checks to name why.

Every answer but "busy" leaves only once the click is on record (or committing): its
inbox entry or, for a click the envelope checks refuse (no entry), its refusal itself. A
click answered "busy" before it was written (bot/ingress/ack.py) is recorded as refused
(`answered_busy`) and never decided.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any

from bot.decide.decider import INBOX_KINDS, Decider, Verdict
from bot.decide.provenance import ENVELOPE_CHECKS, CardClick, Context, first_refusal
from bot.ingress.ack import Flight, toast
from bot.ingress.envelope_shape import envelope_problem, text_at
from bot.ingress.overruled import Overruled
from bot.ingress.replay import Replays
from bot.ingress.stats import ConsumerStats
from cards.decide import Threshold
from cards.render import render_card
from cards.strings import COUNTED_TOAST, LANGS, LARK_LOCALE, REFUSALS, Lang, toast_key
from kernel.canonical import EncodedObject
from kernel.logcontext import about
from kernel.reasons import Reason
from store import (
    Counted,
    Entry,
    FirstWrite,
    Operation,
    ShownCard,
    State,
    Withdrawn,
    answering_a_person,
    operation_view,
    payload_digest,
    view,
)

log = logging.getLogger("countersign.callbacks")

INBOX_KIND = INBOX_KINDS[Entry.LARK]
# Refusals after which the stale card is worth replacing with the current one.
REFRESH_CARD_ON = frozenset(
    {
        Reason.ALREADY_CLAIMED,
        Reason.ALREADY_REJECTED,
        Reason.CANCELLED,
        Reason.SUPERSEDED,
        Reason.EXPIRED,
    }
)


@dataclass(frozen=True)
class CardLook:
    """How the card entry's answers look: the cards' language and zone, people's names
    ([people]), and above which worst case Confirm asks Lark's dialog (cards/decide.py)."""

    lang: Lang = "en"
    tz: tzinfo = UTC
    people: Mapping[str, str] = field(default_factory=dict)
    second_look_above: Threshold | None = None


def parse_click(envelope: dict[str, Any]) -> CardClick:
    """Read the fields that matter; anything missing becomes "" and fails a check."""
    return CardClick(
        event_id=text_at(envelope, "header", "event_id"),
        app_id=text_at(envelope, "header", "app_id"),
        tenant_key=text_at(envelope, "header", "tenant_key"),
        operator_open_id=text_at(envelope, "event", "operator", "open_id"),
        operator_tenant_key=text_at(envelope, "event", "operator", "tenant_key"),
        chat_id=text_at(envelope, "event", "context", "open_chat_id"),
        message_id=text_at(envelope, "event", "context", "open_message_id"),
        value=(envelope.get("event") or {}).get("action", {}).get("value")
        if isinstance(envelope.get("event"), dict)
        and isinstance(envelope["event"].get("action"), dict)
        else None,
        problem=envelope_problem(envelope),
        form_value=_action(envelope).get("form_value"),
        button_name=str(_action(envelope).get("name") or ""),
        evidence=payload_digest(envelope),
    )


def _action(envelope: dict[str, Any]) -> dict[str, Any]:
    event = envelope.get("event")
    action = event.get("action") if isinstance(event, dict) else None
    return action if isinstance(action, dict) else {}


def counted_toast(op: Operation, lang: Lang) -> dict[str, Any]:
    """A confirmation that counts but is not the last one needed."""
    texts = {
        each: COUNTED_TOAST[each].format(
            counted=len(op.confirmed_by), required=op.envelope.approval.required
        )
        for each in LANGS
    }
    return {
        "toast": {
            "type": "success",
            "content": texts[lang],
            "i18n": {LARK_LOCALE[each]: texts[each] for each in LANGS},
        }
    }


def refusal_toast(reason: Reason, lang: Lang) -> dict[str, Any]:
    texts = REFUSALS[reason]
    return {
        "toast": {
            "type": "error",
            "content": texts[lang],
            "i18n": {LARK_LOCALE[each]: texts[each] for each in LANGS},
        }
    }


class Decisions:
    """The card entry into bot/decide: a click's answer within its Flight, replays, the card
    it carries, and what a transport that answered for us leaves to do (Overruled)."""

    def __init__(
        self, decider: Decider, look: CardLook, stats: ConsumerStats, replays: Replays
    ) -> None:
        self.decider = decider
        self.store = decider.store
        self.look = look
        self.stats = stats
        self.replays = replays
        self.overruled: Overruled | None = None  # set by the consumer (bot/ingress/callbacks.py)

    async def decide(self, envelope: dict[str, Any], flight: Flight) -> None:
        click = parse_click(envelope)
        ctx = self.decider.context()
        if (reason := first_refusal(ENVELOPE_CHECKS, click, ctx)) is not None:
            # No inbox entry holds this click (it may not even be storable as sent), so
            # its refusal is stored before the answer: one write, as an entry would be.
            with about(click.operation_id or "-"), answering_a_person():
                await self.decider.record_refusal(click, reason)
            flight.on_record.set()
            flight.give(await self.refusal_answer(reason, None, click))
            return
        self.stats.verified()
        with about(click.operation_id or "-"):
            # what the click says of itself is checked here; what it needs of its operation,
            # by the database in the decision's one write (the reason read only if refused)
            refusal = self.decider.value_refusal(click, ctx)
            if flight.abandoned:  # answered "busy" before this task even ran
                await self._record_abandoned(click, envelope)
                return
            queued = self.decider.enqueue(click, envelope, refusal)
            flight.write = queued.pending
            try:
                first = await self.decider.clicks.outcome(queued)
            except Withdrawn:  # answered "busy" while it waited for a batch
                await self._record_abandoned(click, envelope)
                return
        flight.on_record.set()
        if not first.received.first:
            flight.give(await self.replays.answer(first.received.entry, click.event_key))
            return
        with self.replays.deciding(click.event_key) as first_answer:
            await self._decided(click, ctx, refusal, first, flight, first_answer)

    async def _record_abandoned(self, click: CardClick, envelope: dict[str, Any]) -> None:
        """A click answered "busy" before it was written: on record as refused, never
        decided (the operator was told to click again)."""
        self.stats.refusals[Reason.ANSWERED_BUSY.value] += 1
        inbox = self.decider.inbox
        received = await inbox.receive(INBOX_KIND, click.event_id, envelope)
        if not received.first:
            return  # a delivery before this one holds the click; it answers for it
        await self.decider.record_refusal(click, Reason.ANSWERED_BUSY)
        await inbox.answered(
            INBOX_KIND, click.event_id, refusal_toast(Reason.ANSWERED_BUSY, self.look.lang)
        )

    async def _decided(
        self,
        click: CardClick,
        ctx: Context,
        refusal: Reason | None,
        first: FirstWrite,
        flight: Flight,
        first_answer: asyncio.Future[dict[str, Any]],
    ) -> None:
        """The click is on record (and decided, if it could be): answer, then store the
        answer (and, where the checks or the database refused it, the refusal)."""
        with about(click.operation_id or "-"), answering_a_person():
            verdict = await self.decider.verdict(click, first, refusal, ctx)
            if verdict.refusal is not None:
                result = await self.refusal_answer(verdict.refusal, verdict.operation, click)
            else:
                result = await self._decision_answer(verdict)
        result = EncodedObject(result)  # sent in the ack and stored below: encoded once
        late = flight.answer.cancelled()
        flight.give(result)  # answer first; the bookkeeping below can wait
        # a replay arriving before the answer is stored gets it from here
        first_answer.set_result(result)
        # The answer kept for replays with, in the same write, the refusal (if refused) or,
        # if the answer carried the decision's card, that card as shown (the decision made
        # the card due only after a grace, so the card worker does not race this). A
        # "processing" answer showed no card: due at once.
        shown = verdict.decided.operation if verdict.decided is not None else None
        carried = (
            ShownCard(
                shown.id,
                shown.version,
                escalation=bool(shown.escalation_message_id)
                and click.message_id == shown.escalation_message_id,
            )
            if shown and not late
            else None
        )
        try:
            await self.decider.answered(verdict, result, carried)
            if carried is not None and self.overruled is not None:
                # a transport that acked this click itself at its deadline never sent our
                # card: then it is due again (bot/ingress/overruled.py)
                self.overruled.shown(click.event_id, carried.operation_id)
        finally:
            await self.decider.kick(verdict, carried)

    async def _decision_answer(self, verdict: Verdict) -> dict[str, Any]:
        decided = verdict.decided
        assert decided is not None
        if isinstance(decided, Counted):
            answer = counted_toast(decided.operation, self.look.lang)
        else:
            key = toast_key(verdict.click.action)
            answer = toast("success", key, self.look.lang)
        return {**answer, "card": {"type": "raw", "data": await self._card(decided.operation)}}

    async def refusal_answer(
        self, reason: Reason, op: Operation | None, click: CardClick
    ) -> dict[str, Any]:
        self.stats.refusals[reason.value] += 1
        if reason is Reason.MALFORMED_ENVELOPE:  # where, never what: the values are junk
            log.warning("click refused: %s (%s)", reason.value, click.problem)
        elif reason is Reason.TENANT_NOT_ALLOWED:  # a tenant key is no secret, and setup needs it
            log.warning(
                "click refused: %s (tenant_key %r; add it to lark.tenant_keys if it is yours)",
                reason.value,
                click.tenant_key,
            )
        else:
            log.info("click refused: %s", reason.value, extra={"operation_id": click.operation_id})
        result = refusal_toast(reason, self.look.lang)
        if op is not None and reason in REFRESH_CARD_ON and click.message_id == op.card_message_id:
            result["card"] = {"type": "raw", "data": await self._card(op)}
        return result

    async def _card(self, op: Operation) -> dict[str, Any]:
        # only an operation with outcomes needs the extra read; a fresh claim has none yet
        projection = (
            await view(self.store, op) if op.state is State.OUTCOME_OBSERVED else operation_view(op)
        )
        return render_card(
            projection,
            lang=self.look.lang,
            now=self.store.clock(),
            tz=self.look.tz,
            people=self.look.people,
            second_look_above=self.look.second_look_above,
        )
