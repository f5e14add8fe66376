"""The card.action.trigger consumer: its own queue, workers, supervision and stats.

A click is answered with the definitive card whenever the decision commits within the
budget (about 2 s); otherwise with a "processing" toast, and the card worker patches the
result later. The claim is durable before any success answer leaves; the writes that
decide it take the store's fast lane. Work that can wait (recording the answer for
replays, marking the card as shown) happens after the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, tzinfo
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
from store.authority import Claimed, Decided, Refused, Store
from store.cards import CardLedger
from store.execution import view
from store.inbox import Inbox
from store.lifecycle import State
from store.logcontext import about
from store.projection import operation_view
from store.reasons import Reason
from store.records import Operation
from store.writelane import answering_a_person
from workers.crash import crash_point

log = logging.getLogger("countersign.callbacks")

INBOX_KIND = "callback"
ANSWER_BUDGET_S = 2.0
QUEUE_SIZE = 2000
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
    workers: int = 16
    answer_budget_s: float = ANSWER_BUDGET_S


Job = tuple[dict[str, Any], str, "asyncio.Future[dict[str, Any]]", float]


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
        self.settings = settings
        self.on_card_due = on_card_due
        self.on_claimed = on_claimed  # the executor has work
        self.stats = ConsumerStats()
        self.queue: asyncio.Queue[Job] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._workers: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()
        # event_id -> the first answer, between the answer leaving and its being stored
        self._first_answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._running = False
        self._draining = False

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._running = True
        self._workers = [
            asyncio.create_task(self._supervised(index), name=f"callback-worker-{index}")
            for index in range(self.settings.workers)
        ]

    async def drain(self, grace_s: float) -> None:
        """Stop intake (new clicks get "busy") and let queued and in-flight clicks finish."""
        self._draining = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.queue.join(), grace_s)  # every click taken is done
        if self._background:
            await asyncio.wait(self._background, timeout=max(0.0, deadline - loop.time()))

    async def stop(self) -> None:
        self._running = False
        for task in [*self._workers, *self._background]:
            task.cancel()
        for task in [*self._workers, *self._background]:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def healthy(self) -> bool:
        return self._running and all(not task.done() for task in self._workers)

    async def _supervised(self, index: int) -> None:
        while self._running:
            try:
                await self._work()
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug in one click must not stop the consumer
                log.exception("callback worker %d crashed; restarting", index)

    async def _work(self) -> None:
        while True:
            envelope, transport, answer, _queued_at = await self.queue.get()
            try:
                result = await self.decide(envelope, transport, answer)
            except Exception:
                log.exception("callback failed")
                result = self._toast("error", "toast.busy")
            finally:
                self.queue.task_done()
            if not answer.done():
                answer.set_result(result)

    # -- the ack path -------------------------------------------------------------------------

    async def on_callback(self, envelope: dict[str, Any], transport: str) -> dict[str, Any]:
        """Called by a transport; returns the answer body within the budget."""
        started = time.perf_counter()
        self.stats.received()
        if self._draining:  # shutting down: Lark's user is told to click again (another replica)
            self.stats.observe_ack((time.perf_counter() - started) * 1000, "busy")
            return self._toast("warning", "toast.busy")
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        try:
            self.queue.put_nowait((envelope, transport, answer, started))
        except asyncio.QueueFull:
            self.stats.observe_ack((time.perf_counter() - started) * 1000, "busy")
            return self._toast("warning", "toast.busy")
        try:
            result = await asyncio.wait_for(asyncio.shield(answer), self.settings.answer_budget_s)
            outcome = "answered"
        except TimeoutError:
            # Too late for the definitive answer: mark it so the decision, when it commits,
            # leaves the card to the card worker instead of counting it as shown.
            answer.cancel()
            result, outcome = self._toast("info", "toast.processing"), "processing"
        self.stats.observe_ack((time.perf_counter() - started) * 1000, outcome)
        return result

    async def decide(
        self,
        envelope: dict[str, Any],
        transport: str,
        answer: asyncio.Future[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        click = parse_click(envelope)
        ctx = Context(self.settings.app_id, self.settings.tenant_keys, self.store.clock())
        if (reason := first_refusal(ENVELOPE_CHECKS, click, ctx)) is not None:
            result = await self._refusal_answer(reason, None, click)
            if answer is not None and not answer.done():
                answer.set_result(result)  # the refusal changes nothing: store it after
            await self.store.record_refusal(click.as_store_click(), reason)
            return result
        self.stats.verified()
        if click.event_id:
            with answering_a_person():
                received = await self.inbox.receive(INBOX_KIND, click.event_id, envelope)
            if not received.first:
                self.stats.outcomes["replayed"] += 1
                return received.entry.answer or await self._first_answer(click.event_id)
            first_answer = asyncio.get_running_loop().create_future()
            self._first_answers[click.event_id] = first_answer
        try:
            return await self._decide_first(click, ctx, answer)
        finally:
            if click.event_id:
                pending = self._first_answers.pop(click.event_id)
                if not pending.done():
                    pending.cancel()

    async def _decide_first(
        self,
        click: CardClick,
        ctx: Context,
        answer: asyncio.Future[dict[str, Any]] | None,
    ) -> dict[str, Any]:
        with about(click.operation_id or "-"), answering_a_person():
            result, decided, unrecorded = await self._decide_click(click, ctx)
        late = answer is not None and answer.cancelled()
        if answer is not None and not answer.done():
            answer.set_result(result)  # answer first; the bookkeeping below can wait
        if click.event_id:  # a replay arriving before the answer is stored gets it from here
            self._first_answers[click.event_id].set_result(result)
        if unrecorded is not None:  # a refusal the checks found: stored after the answer
            await self.store.record_refusal(click.as_store_click(), unrecorded)
        if decided is not None:
            if late:
                self.on_card_due()  # the "processing" answer showed nothing: patch the card
            else:
                self._card_answered(decided)
        if click.event_id:
            await self.inbox.answered(INBOX_KIND, click.event_id, result)
        return result

    async def _decide_click(
        self, click: CardClick, ctx: Context
    ) -> tuple[dict[str, Any], Operation | None, Reason | None]:
        """The answer; the operation if this click decided it; a refusal still to be stored.

        A refusal found by the checks changes nothing, so storing it waits until the
        operator has the answer (the 3-second contract); a refusal the database found is
        already stored.
        """
        if (reason := first_refusal(VALUE_CHECKS, click, ctx)) is not None:
            return await self._refusal_answer(reason, None, click), None, reason
        op = await self.store.get(click.operation_id)
        if (reason := verify_operation(click, op, ctx)) is not None:
            return await self._refusal_answer(reason, op, click), None, reason
        assert op is not None
        if click.action == "confirm":
            outcome: Claimed | Decided | Refused = await self.store.confirm_and_claim(
                click.as_store_click()
            )
        else:
            outcome = await self.store.reject(click.as_store_click())
        if isinstance(outcome, Refused):  # the database saw a race the checks could not
            return await self._refusal_answer(outcome.reason, outcome.operation, click), None, None
        if click.action == "confirm":
            crash_point("after_claim")
            self.on_claimed()
        decided = outcome.operation
        self.stats.decisions[click.action] += 1
        key = "toast.confirmed" if click.action == "confirm" else "toast.rejected"
        answer = {
            **self._toast("success", key),
            "card": {"type": "raw", "data": await self._card(decided)},
        }
        return answer, decided, None

    async def _refusal_answer(
        self, reason: Reason, op: Operation | None, click: CardClick
    ) -> dict[str, Any]:
        self.stats.refusals[reason.value] += 1
        if reason is Reason.TENANT_NOT_ALLOWED:  # a tenant key is no secret, and setup needs it
            log.warning(
                "click refused: %s (tenant_key %r; add it to lark.tenant_keys if it is yours)",
                reason.value,
                click.tenant_key,
            )
        else:
            log.info("click refused: %s", reason.value, extra={"operation_id": click.operation_id})
        texts = REFUSALS[reason]
        result: dict[str, Any] = {
            "toast": {
                "type": "error",
                "content": texts[self.settings.lang],
                "i18n": {LARK_LOCALE[lang]: texts[lang] for lang in LANGS},
            }
        }
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

    # -- helpers ------------------------------------------------------------------------------

    async def _card(self, op: Operation) -> dict[str, Any]:
        # only an operation with outcomes needs the extra read; a fresh claim has none yet
        projection = (
            await view(self.store, op) if op.state is State.OUTCOME_OBSERVED else operation_view(op)
        )
        return render_card(
            projection, lang=self.settings.lang, now=self.store.clock(), tz=self.settings.tz
        )

    def _toast(self, kind: str, key: str) -> dict[str, Any]:
        return {
            "toast": {"type": kind, "content": text(key, self.settings.lang), "i18n": i18n(key)}
        }

    def _card_answered(self, op: Operation) -> None:
        """The answer carried the new card; record it off the ack path."""

        async def record() -> None:
            try:
                await self.cards.shown(op.id, op.version, "callback")
            except Exception:
                log.exception("could not record the card shown for %s", op.id)
                self.on_card_due()

        task = asyncio.create_task(record())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
