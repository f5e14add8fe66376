"""A click's decision: the checks, the one write, and the answer rendered from it.

A click costs two writes (store/clicks.py) and no read: before its answer, ONE group-commit
intent holding its inbox entry and, when its own values pass the checks, its decision (the
claim or the reject, conditional in the database on state, digest, expiry and where the
click came from), which returns the operation as decided, so the answer's card is rendered
from it; after the answer, the answer kept for replays and the card it carried recorded as
shown. Only a click the database refused reads its operation, for the checks to name why.

Every answer but "busy" leaves only once the click is on record (or committing): its
inbox entry or, for a click the envelope checks refuse (no entry), its refusal itself. A
click answered "busy" before it was written (bot/ingress/ack.py) is recorded as refused
(`answered_busy`) and never decided.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.ingress.ack import Flight, toast
from bot.ingress.overruled import Overruled
from bot.ingress.provenance import (
    ENVELOPE_CHECKS,
    VALUE_CHECKS,
    CardClick,
    Context,
    first_refusal,
    parse_click,
    verify_operation,
)
from bot.ingress.replay import Replays
from bot.ingress.stats import ConsumerStats
from cards.render import render_card
from cards.strings import COUNTED_TOAST, LANGS, LARK_LOCALE, REFUSALS, Lang, toast_key
from store.authority import Store
from store.canonical import EncodedObject
from store.cards import CardLedger
from store.click_sql import ShownCard
from store.clicks import ClickWrites
from store.decisions import Claimed, Counted, Decided, refusal_reason
from store.execution_reads import view
from store.groupcommit import Withdrawn, answering_a_person
from store.inbox import Inbox
from store.lifecycle import State
from store.logcontext import about
from store.projection import operation_view
from store.reasons import Reason
from store.records import Operation
from workers.crash import crash_point

if TYPE_CHECKING:  # the consumer's settings; bot/ingress/callbacks.py wires this module
    from bot.ingress.callbacks import CallbackSettings

log = logging.getLogger("countersign.callbacks")

INBOX_KIND = "callback"
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
    def __init__(
        self,
        store: Store,
        settings: CallbackSettings,
        stats: ConsumerStats,
        clicks: ClickWrites,
        replays: Replays,
        *,
        on_card_due: Callable[[], None],
        on_claimed: Callable[[], None],
    ) -> None:
        self.store = store
        self.settings = settings
        self.stats = stats
        self.clicks = clicks
        self.replays = replays
        self.inbox = Inbox(store)
        self.cards = CardLedger(store)
        self.on_card_due = on_card_due
        self.on_claimed = on_claimed  # the executor has work
        self.overruled: Overruled | None = None  # set by the consumer (bot/ingress/callbacks.py)

    def context(self) -> Context:
        return Context(
            self.settings.app_id,
            self.settings.tenant_keys,
            self.store.clock(),
            self.settings.policies,
        )

    async def decide(self, envelope: dict[str, Any], flight: Flight) -> None:
        click = parse_click(envelope)
        ctx = self.context()
        if (reason := first_refusal(ENVELOPE_CHECKS, click, ctx)) is not None:
            # No inbox entry holds this click (it may not even be storable as sent), so
            # its refusal is stored before the answer: one write, as an entry would be.
            with about(click.operation_id or "-"), answering_a_person():
                await self.store.record_refusal(click.as_store_click(), reason)
            flight.on_record.set()
            flight.give(await self.refusal_answer(reason, None, click))
            return
        self.stats.verified()
        with about(click.operation_id or "-"):
            # what the click says of itself is checked here; what it needs of its operation,
            # by the database in the decision's one write (the reason read only if refused)
            refusal = first_refusal(VALUE_CHECKS, click, ctx)
            if flight.abandoned:  # answered "busy" before this task even ran
                await self._record_abandoned(click, envelope)
                return
            queued = self.clicks.enqueue(
                click.event_id, envelope, click.as_store_click() if refusal is None else None
            )
            flight.write = queued.pending
            try:
                first = await self.clicks.outcome(queued)
            except Withdrawn:  # answered "busy" while it waited for a batch
                await self._record_abandoned(click, envelope)
                return
        flight.on_record.set()
        if not first.received.first:
            flight.give(await self.replays.answer(first.received.entry, click.event_key))
            return
        if first.already_confirmed:  # counted once before: the database changed nothing
            refusal = Reason.ALREADY_CONFIRMED
        with self.replays.deciding(click.event_key) as first_answer:
            await self._decided(click, ctx, refusal, first.decided, flight, first_answer)

    async def _record_abandoned(self, click: CardClick, envelope: dict[str, Any]) -> None:
        """A click answered "busy" before it was written: on record as refused, never
        decided (the operator was told to click again)."""
        self.stats.refusals[Reason.ANSWERED_BUSY.value] += 1
        received = await self.inbox.receive(INBOX_KIND, click.event_id, envelope)
        if not received.first:
            return  # a delivery before this one holds the click; it answers for it
        await self.store.record_refusal(click.as_store_click(), Reason.ANSWERED_BUSY)
        await self.inbox.answered(
            INBOX_KIND, click.event_id, refusal_toast(Reason.ANSWERED_BUSY, self.settings.lang)
        )

    async def _decided(
        self,
        click: CardClick,
        ctx: Context,
        refusal: Reason | None,
        decided: Claimed | Counted | Decided | None,
        flight: Flight,
        first_answer: asyncio.Future[dict[str, Any]],
    ) -> None:
        """The click is on record (and decided, if it could be): answer, then store the
        answer (and, where the checks or the database refused it, the refusal)."""
        op: Operation | None = None
        with about(click.operation_id or "-"), answering_a_person():
            if refusal is None and decided is None:
                # the database refused it: the checks name why, on the operation as it is
                # now (else a race they cannot see: decided or expired since)
                op = await self.store.get(click.operation_id)
                now = self.store.clock()
                refusal = verify_operation(click, op, replace(ctx, now=now)) or refusal_reason(
                    op, click.as_store_click(), now
                )
            if refusal is not None:
                result = await self.refusal_answer(refusal, op, click)
            else:
                assert decided is not None
                result = await self._decision_answer(click, decided)
        result = EncodedObject(result)  # sent in the ack and stored below: encoded once
        late = flight.answer.cancelled()
        flight.give(result)  # answer first; the bookkeeping below can wait
        # a replay arriving before the answer is stored gets it from here
        first_answer.set_result(result)
        # The answer kept for replays with, in the same write, the refusal (if refused) or,
        # if the answer carried the decision's card, that card as shown (the decision made
        # the card due only after a grace, so the card worker does not race this). A
        # "processing" answer showed no card: due at once.
        refused = self.store.refusal_statements(click.as_store_click(), refusal) if refusal else ()
        shown = decided.operation if decided is not None else None
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
            await self.inbox.answered(INBOX_KIND, click.event_id, result, carried, refused)
            if carried is not None and self.overruled is not None:
                # a transport that acked this click itself at its deadline never sent our
                # card: then it is due again (bot/ingress/overruled.py)
                self.overruled.shown(click.event_id, carried.operation_id)
        finally:
            if shown is not None:
                if late:
                    await self.cards.due_now(shown)
                self.on_card_due()

    async def _decision_answer(
        self, click: CardClick, decided: Claimed | Counted | Decided
    ) -> dict[str, Any]:
        if isinstance(decided, Claimed):
            crash_point("after_claim")
            self.on_claimed()
        self.stats.decisions[click.action] += 1
        if isinstance(decided, Counted):
            answer = counted_toast(decided.operation, self.settings.lang)
        else:
            key = toast_key(click.action)
            answer = toast("success", key, self.settings.lang)
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
        result = refusal_toast(reason, self.settings.lang)
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
            lang=self.settings.lang,
            now=self.store.clock(),
            tz=self.settings.tz,
            people=self.settings.people,
            second_look_above=self.settings.second_look_above,
        )
