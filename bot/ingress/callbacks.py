"""The card.action.trigger consumer: its own intake, supervision and stats, wiring a click's
parts, one module each:

- bot/ingress/ack.py: the one ack budget (`lark.answer_budget_s`) and every deadline inside
  Lark's 3 s derived from it; the definitive answer within the budget, else "processing",
  else "busy". The transports' safety net takes its deadline and its toast from here too
  (`transport_deadline_s`, `processing`).
- bot/ingress/decision.py: the click read from Lark's envelope, decided by bot/decide
  (the checks, the one write, the verdict), the answer rendered from what it returned, and
  the second write (the answer, the card as shown).
- bot/ingress/replay.py: a click already on record or in flight gets its first answer.
- bot/ingress/recovery.py: on start, clicks a previous run left unanswered are put on
  record, never applied (bot/decide/recovery.py), with the card's answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any

from bot.decide.counters import DecisionCounters
from bot.decide.decider import Decider, DecideSettings
from bot.decide.recovery import RECOVER_AFTER_S, Recovery
from bot.ingress.ack import ANSWER_BUDGET_S, AckTerms, Flight, answer_in_time
from bot.ingress.decision import INBOX_KIND, CardLook, Decisions
from bot.ingress.overruled import Overruled
from bot.ingress.recovery import CardLeftovers
from bot.ingress.replay import Replays
from bot.ingress.stats import ConsumerStats
from cards.decide import Threshold
from cards.strings import Lang
from store import Entry, Inbox, Store

__all__ = ["INBOX_KIND", "MAX_IN_FLIGHT", "CallbackConsumer", "CallbackSettings"]

log = logging.getLogger("countersign.callbacks")

MAX_IN_FLIGHT = 2000


@dataclass(frozen=True)
class CallbackSettings:
    app_id: str
    tenant_keys: frozenset[str]
    lang: Lang = "en"
    tz: tzinfo = UTC
    answer_budget_s: float = ANSWER_BUDGET_S  # the one ack budget (bot/ingress/ack.py)
    recover_after_s: float = RECOVER_AFTER_S  # bot/decide/recovery.py
    # audience name -> its approval policy's digest as configured now (bot/config/policy.py): a
    # card filed under another policy is stale. None: not compared (no config at hand)
    policies: Mapping[str, str] | None = None
    # open id -> display name: how a card patched in an answer names people ([people])
    people: Mapping[str, str] = field(default_factory=dict)
    # Confirm asks Lark's dialog above this worst case (cards/decide.py; [web] reauth_above)
    second_look_above: Threshold | None = None

    @property
    def decide(self) -> DecideSettings:
        return DecideSettings(self.app_id, self.tenant_keys, self.policies)

    @property
    def look(self) -> CardLook:
        return CardLook(self.lang, self.tz, self.people, self.second_look_above)


class CallbackConsumer:
    def __init__(
        self,
        store: Store,
        settings: CallbackSettings,
        *,
        counters: DecisionCounters | None = None,  # the process's, shared with the web
        on_card_due: Callable[[], None] = lambda: None,
        on_claimed: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.stats = ConsumerStats()
        self.ack = AckTerms(settings.answer_budget_s, settings.lang)
        counters = counters if counters is not None else DecisionCounters()
        self.decider = Decider(
            store,
            Entry.LARK,
            settings.decide,
            counters,
            on_card_due=on_card_due,
            on_claimed=on_claimed,
        )
        self.clicks = self.decider.clicks
        self.replays = Replays(Inbox(store), INBOX_KIND, self.ack, self.stats)
        self.decisions = Decisions(self.decider, settings.look, self.stats, self.replays)
        self.recovery = Recovery(
            store,
            Entry.LARK,
            CardLeftovers(self.decisions),
            counters,
            recover_after_s=settings.recover_after_s,
            on_settled=self._recovered,
        )
        self.on_card_due = on_card_due
        self.overruled = Overruled(self._due_again)
        self.decisions.overruled = self.overruled
        self._in_flight: set[asyncio.Task[None]] = set()
        self._recovery: asyncio.Task[None] | None = None
        self._running = False
        self._draining = False

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._running = True
        # recovery runs once and ends; it is not part of `healthy`
        self._recovery = asyncio.create_task(
            self.recovery.run(self.store.clock()), name="callback-recovery"
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

    def _recovered(self) -> None:
        self.stats.outcomes["recovered"] += 1

    # -- what a transport needs of us (bot/lark/ingress_port.py CallbackAck) -----------------

    @property
    def transport_deadline_s(self) -> float:
        """How long a transport waits for `on_callback` before it answers for us."""
        return self.ack.transport_deadline_s

    def processing(self) -> dict[str, Any]:
        """What a transport answers for us then: our own "processing" toast."""
        return self.ack.processing()

    def answered_for(self, event_id: str) -> None:
        """A transport answered this click for us (any thread): its card is due again if our
        late answer was recorded as showing it (bot/ingress/overruled.py)."""
        self.overruled.answered_for(event_id)

    def _due_again(self, operation_id: str) -> None:
        task = asyncio.ensure_future(self._make_due(operation_id))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _make_due(self, operation_id: str) -> None:
        try:
            await self.decider.cards.due_again(operation_id)
        except Exception:  # the card worker's poll finds it on its next look otherwise
            log.exception("making the card of %s due again failed", operation_id)
            return
        self.on_card_due()

    # -- the ack path -------------------------------------------------------------------------

    async def on_callback(self, envelope: dict[str, Any], transport: str) -> dict[str, Any]:
        """Called by a transport; returns the answer body within the budget."""
        started = time.perf_counter()
        self.stats.received()
        if self._draining or len(self._in_flight) >= MAX_IN_FLIGHT:
            # shutting down or overloaded: Lark's user is told to click again
            self.stats.observe_ack((time.perf_counter() - started) * 1000, "busy")
            return self.ack.busy()
        flight = Flight(asyncio.get_running_loop().create_future())
        task = asyncio.create_task(self._take(envelope, flight), name="callback")
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)
        result, outcome = await answer_in_time(flight, started, self.ack, self.clicks)
        self.stats.observe_ack((time.perf_counter() - started) * 1000, outcome)
        return result

    async def _take(self, envelope: dict[str, Any], flight: Flight) -> None:
        try:
            await self.decisions.decide(envelope, flight)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug in one click must not reach the transport
            log.exception("callback failed")
            flight.give(self.ack.busy("error"))
