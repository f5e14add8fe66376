"""The card.action.trigger consumer: its own intake, supervision and stats.

A click costs two writes (store/clicks.py) and no read: before its answer, ONE group-commit
intent holding its inbox entry and, when its own values pass the checks, its decision (the
claim or the reject, conditional in the database on state, digest, expiry and where the
click came from), which returns the operation as decided, so the answer's card is rendered
from it; after the answer, the answer kept for replays and the card it carried recorded as
shown. Only a click the database refused reads its operation, for the checks to name why.

A click is answered with the definitive card whenever its write commits within the budget
(about 2 s); otherwise "processing" (its write is committed, or in a batch being
committed), and the card worker patches the result as soon as it commits. The claim is
durable before any success answer leaves. A click whose write no batch has taken by
RECORD_DEADLINE_S is answered "busy" and its write withdrawn, so "busy" (click again)
never comes with an effect; it is then recorded as refused (`answered_busy`).

Every answer but "busy" leaves only once the click is on record (or committing): its
inbox entry or, for a click the envelope checks refuse (no entry), its refusal itself.
On start, entries a previous run left unanswered are recorded with the reason the checks
give now (or `recovered_unanswered`), never applied again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from bot.ingress.provenance import (
    ENVELOPE_CHECKS,
    VALUE_CHECKS,
    CardClick,
    Context,
    first_refusal,
    parse_click,
    verify_operation,
)
from bot.ingress.stats import ConsumerStats
from cards.render import render_card
from cards.strings import LANGS, LARK_LOCALE, REFUSALS, Lang, i18n, text
from store.authority import Claimed, Decided, Store, refusal_reason
from store.canonical import EncodedObject
from store.cards import CardLedger
from store.click_sql import ShownCard
from store.clicks import ClickWrites
from store.execution import view
from store.groupcommit import Withdrawn, answering_a_person
from store.groupcommit.contract import Pending
from store.inbox import Inbox, InboxEntry
from store.lifecycle import State
from store.logcontext import about
from store.projection import operation_view
from store.reasons import Reason
from store.records import Confirmation, Operation
from workers.crash import crash_point

log = logging.getLogger("countersign.callbacks")

INBOX_KIND = "callback"
ANSWER_BUDGET_S = 2.0
# A click not yet on record when its decision misses the budget may still be answered
# "processing" once its first write lands, until this long after it arrived (inside the
# transports' 2.7 s); only then is it answered "busy". A shorter budget leaves more room.
RECORD_DEADLINE_S = 2.5
MAX_IN_FLIGHT = 2000
# On a shared PostgreSQL another replica may still be deciding a click it received just
# before we started: recovery leaves an entry alone until it is this old.
RECOVER_AFTER_S = 10.0
RECOVERY_BATCH = 100
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
class CallbackSettings:
    app_id: str
    tenant_keys: frozenset[str]
    lang: Lang = "en"
    tz: tzinfo = UTC
    answer_budget_s: float = ANSWER_BUDGET_S
    recover_after_s: float = RECOVER_AFTER_S


@dataclass(eq=False)
class Flight:
    """One click between its arrival and its answer."""

    answer: asyncio.Future[dict[str, Any]]
    on_record: asyncio.Event = field(default_factory=asyncio.Event)
    # answered "busy" before it was on record: the operator will click again, so this one
    # must have no effect
    abandoned: bool = False
    write: Pending | None = None  # its first write, once queued (withdrawn on "busy")

    def give(self, result: dict[str, Any]) -> None:
        if not self.answer.done():
            self.answer.set_result(result)


class CallbackConsumer:
    def __init__(
        self,
        store: Store,
        settings: CallbackSettings,
        *,
        on_card_due: Callable[[], None] = lambda: None,
        on_claimed: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.inbox = Inbox(store)
        self.cards = CardLedger(store)
        self.clicks = ClickWrites(store, INBOX_KIND)
        self.settings = settings
        self.on_card_due = on_card_due
        self.on_claimed = on_claimed  # the executor has work
        self.stats = ConsumerStats()
        self._in_flight: set[asyncio.Task[None]] = set()
        self._recovery: asyncio.Task[None] | None = None
        # event key -> the first answer, between the answer leaving and its being stored
        self._first_answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._running = False
        self._draining = False

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._running = True
        # recovery runs once and ends; it is not part of `healthy`
        self._recovery = asyncio.create_task(
            self._recover(self.store.clock()), name="callback-recovery"
        )

    async def drain(self, grace_s: float) -> None:
        """Stop intake (new clicks get "busy") and let clicks in flight finish."""
        self._draining = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=max(0.0, deadline - loop.time()))

    async def stop(self) -> None:
        self._running = False
        tasks = [*self._in_flight, *([self._recovery] if self._recovery else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def healthy(self) -> bool:
        return self._running

    # -- the ack path -------------------------------------------------------------------------

    async def on_callback(self, envelope: dict[str, Any], transport: str) -> dict[str, Any]:
        """Called by a transport; returns the answer body within the budget."""
        started = time.perf_counter()
        self.stats.received()
        if self._draining or len(self._in_flight) >= MAX_IN_FLIGHT:
            # shutting down or overloaded: Lark's user is told to click again
            self.stats.observe_ack((time.perf_counter() - started) * 1000, "busy")
            return self._toast("warning", "toast.busy")
        flight = Flight(asyncio.get_running_loop().create_future())
        task = asyncio.create_task(self._take(envelope, flight), name="callback")
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)
        result, outcome = await self._answer(flight, started)
        self.stats.observe_ack((time.perf_counter() - started) * 1000, outcome)
        return result

    async def _answer(self, flight: Flight, started: float) -> tuple[dict[str, Any], str]:
        """The definitive answer within the budget; else "processing", which promises the
        click is on record (or in a batch being committed), so it waits for that up to
        RECORD_DEADLINE_S; else "busy", and then the click's write is taken back."""
        with contextlib.suppress(TimeoutError):
            budget = self.settings.answer_budget_s
            return await asyncio.wait_for(asyncio.shield(flight.answer), budget), "answered"
        if not flight.on_record.is_set():
            left = RECORD_DEADLINE_S - (time.perf_counter() - started)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(flight.on_record.wait(), max(0.0, left))
        if flight.answer.done():
            return flight.answer.result(), "answered"
        # Too late for the definitive answer: mark it so the decision, when it commits,
        # leaves the card to the card worker instead of counting it as shown.
        flight.answer.cancel()
        if flight.on_record.is_set():
            return self._toast("info", "toast.processing"), "processing"
        # No await from here to the end: the click's task cannot move in between.
        if flight.write is not None and not self.clicks.withdraw(flight.write):
            # a batch holds its write already: it commits (or fails) within moments, and
            # the card worker shows the result; telling the operator to click again would
            # make them do it twice
            return self._toast("info", "toast.processing"), "processing"
        flight.abandoned = True  # never written, and now never will be: "click again"
        return self._toast("warning", "toast.busy"), "busy"

    async def _take(self, envelope: dict[str, Any], flight: Flight) -> None:
        try:
            await self.decide(envelope, flight)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug in one click must not reach the transport
            log.exception("callback failed")
            flight.give(self._toast("error", "toast.busy"))

    async def decide(self, envelope: dict[str, Any], flight: Flight) -> None:
        click = parse_click(envelope)
        ctx = Context(self.settings.app_id, self.settings.tenant_keys, self.store.clock())
        if (reason := first_refusal(ENVELOPE_CHECKS, click, ctx)) is not None:
            # No inbox entry holds this click (it may not even be storable as sent), so
            # its refusal is stored before the answer: one write, as an entry would be.
            with about(click.operation_id or "-"), answering_a_person():
                await self.store.record_refusal(click.as_store_click(), reason)
            flight.on_record.set()
            flight.give(await self._refusal_answer(reason, None, click))
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
            self.stats.outcomes["replayed"] += 1
            flight.give(first.received.entry.answer or await self._first_answer(click.event_key))
            return
        self._first_answers[click.event_key] = asyncio.get_running_loop().create_future()
        try:
            await self._decided(click, ctx, refusal, first.decided, flight)
        finally:
            pending = self._first_answers.pop(click.event_key)
            if not pending.done():
                pending.cancel()

    async def _record_abandoned(self, click: CardClick, envelope: dict[str, Any]) -> None:
        """A click answered "busy" before it was written: on record as refused, never
        decided (the operator was told to click again)."""
        self.stats.refusals[Reason.ANSWERED_BUSY.value] += 1
        received = await self.inbox.receive(INBOX_KIND, click.event_id, envelope)
        if not received.first:
            return  # a delivery before this one holds the click; it answers for it
        await self.store.record_refusal(click.as_store_click(), Reason.ANSWERED_BUSY)
        await self.inbox.answered(
            INBOX_KIND, click.event_id, self._refusal_toast(Reason.ANSWERED_BUSY)
        )

    async def _decided(
        self,
        click: CardClick,
        ctx: Context,
        refusal: Reason | None,
        decided: Claimed | Decided | None,
        flight: Flight,
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
                result = await self._refusal_answer(refusal, op, click)
            else:
                assert decided is not None
                result = await self._decision_answer(click, decided)
        result = EncodedObject(result)  # sent in the ack and stored below: encoded once
        late = flight.answer.cancelled()
        flight.give(result)  # answer first; the bookkeeping below can wait
        # a replay arriving before the answer is stored gets it from here
        self._first_answers[click.event_key].set_result(result)
        # The answer kept for replays with, in the same write, the refusal (if refused) or,
        # if the answer carried the decision's card, that card as shown (the decision made
        # the card due only after a grace, so the card worker does not race this). A
        # "processing" answer showed no card: due at once.
        refused = self.store.refusal_statements(click.as_store_click(), refusal) if refusal else ()
        shown = decided.operation if decided is not None else None
        carried = ShownCard(shown.id, shown.version) if shown and not late else None
        try:
            await self.inbox.answered(INBOX_KIND, click.event_id, result, carried, refused)
        finally:
            if shown is not None:
                if late:
                    await self.cards.due_now(shown)
                self.on_card_due()

    async def _decision_answer(
        self, click: CardClick, decided: Claimed | Decided
    ) -> dict[str, Any]:
        if isinstance(decided, Claimed):
            crash_point("after_claim")
            self.on_claimed()
        self.stats.decisions[click.action] += 1
        key = "toast.confirmed" if isinstance(decided, Claimed) else "toast.rejected"
        return {
            **self._toast("success", key),
            "card": {"type": "raw", "data": await self._card(decided.operation)},
        }

    async def _refusal_answer(
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
        result = self._refusal_toast(reason)
        if op is not None and reason in REFRESH_CARD_ON and click.message_id == op.card_message_id:
            result["card"] = {"type": "raw", "data": await self._card(op)}
        return result

    async def _first_answer(self, event_id: str) -> dict[str, Any]:
        """A replay of a click still being decided or recorded: its first answer, if it
        comes within the budget (from this process, or from the replica that took it)."""
        budget = self.settings.answer_budget_s
        pending = self._first_answers.get(event_id)
        if pending is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                return await asyncio.wait_for(asyncio.shield(pending), budget)
            return self._toast("info", "toast.processing")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        while loop.time() < deadline:
            entry = await self.inbox.get(INBOX_KIND, event_id)
            if entry is not None and entry.answer is not None:
                return entry.answer
            await asyncio.sleep(0.05)  # another replica holds the click: poll to a deadline
        return self._toast("info", "toast.processing")

    # -- recovery -----------------------------------------------------------------------------

    async def _recover(self, started_at: datetime) -> None:
        """Put on record each click a previous run received but never settled (it crashed
        between the inbox entry and the record). Nothing here claims or rejects."""
        try:
            while entries := await self.inbox.unanswered(
                INBOX_KIND, RECOVERY_BATCH, received_before=started_at
            ):
                for entry in entries:
                    due = entry.received_at + timedelta(seconds=self.settings.recover_after_s)
                    await asyncio.sleep(max(0.0, (due - self.store.clock()).total_seconds()))
                    await self._settle_leftover(entry)
        except asyncio.CancelledError:
            raise
        except Exception:  # the next start tries again
            log.exception("recovering unanswered clicks failed")

    async def _settle_leftover(self, entry: InboxEntry) -> None:
        click = parse_click(entry.payload)
        stored = click.as_store_click()
        with about(stored.operation_id):
            record = await self.store.confirmation_of(stored.operation_id, entry.key)
            if record is None:  # decided by nobody: refused now, for the reason it has now
                reason, op = await self._leftover_reason(click)
                await self.store.record_refusal(stored, reason)
                answer = await self._refusal_answer(reason, op, click)
            else:  # claimed, rejected or refused before the crash: on record already
                answer = self._recorded_answer(record)
            await self.inbox.answered(INBOX_KIND, entry.key, answer)
        self.stats.outcomes["recovered"] += 1

    async def _leftover_reason(self, click: CardClick) -> tuple[Reason, Operation | None]:
        """What the checks say now; a click they would let through is not applied after the
        fact (nobody is waiting for it, and the operator may have moved on)."""
        ctx = Context(self.settings.app_id, self.settings.tenant_keys, self.store.clock())
        for checks in (ENVELOPE_CHECKS, VALUE_CHECKS):
            if (reason := first_refusal(checks, click, ctx)) is not None:
                return reason, None
        op = await self.store.get(click.operation_id)
        return verify_operation(click, op, ctx) or Reason.RECOVERED_UNANSWERED, op

    def _recorded_answer(self, record: Confirmation) -> dict[str, Any]:
        """The toast a click on record was (or would have been) answered with, for replays."""
        if record.accepted:
            key = "toast.confirmed" if record.action == "confirm" else "toast.rejected"
            return self._toast("success", key)
        return self._refusal_toast(Reason(record.reason_code or Reason.MALFORMED_VALUE))

    # -- helpers ------------------------------------------------------------------------------

    async def _card(self, op: Operation) -> dict[str, Any]:
        # only an operation with outcomes needs the extra read; a fresh claim has none yet
        projection = (
            await view(self.store, op) if op.state is State.OUTCOME_OBSERVED else operation_view(op)
        )
        return render_card(
            projection, lang=self.settings.lang, now=self.store.clock(), tz=self.settings.tz
        )

    def _refusal_toast(self, reason: Reason) -> dict[str, Any]:
        texts = REFUSALS[reason]
        return {
            "toast": {
                "type": "error",
                "content": texts[self.settings.lang],
                "i18n": {LARK_LOCALE[lang]: texts[lang] for lang in LANGS},
            }
        }

    def _toast(self, kind: str, key: str) -> dict[str, Any]:
        return {
            "toast": {"type": kind, "content": text(key, self.settings.lang), "i18n": i18n(key)}
        }
