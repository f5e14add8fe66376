"""Answers for a click already on record or in flight: a replay gets the first answer.

Lark redelivers a click it saw no answer to, under the same event id, maybe to another
replica. The one write (bot/decide/decider.py) finds the entry the first delivery left,
and the replay is answered with that delivery's answer, never decided again: the stored
answer; else the one kept in memory between its leaving and its being stored (`deciding`);
else, the click being another replica's, the stored answer polled to the budget's deadline.
A replay whose first answer does not come within the budget gets "processing".
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

from bot.ingress.ack import AckTerms
from bot.ingress.stats import ConsumerStats
from store import Inbox, InboxEntry

POLL_S = 0.05  # how often a replay of another replica's click looks for its stored answer


class Replays:
    def __init__(self, inbox: Inbox, kind: str, terms: AckTerms, stats: ConsumerStats) -> None:
        self.inbox = inbox
        self.kind = kind
        self.terms = terms
        self.stats = stats
        # event key -> the first answer, between the answer leaving and its being stored
        self._first_answers: dict[str, asyncio.Future[dict[str, Any]]] = {}

    @contextlib.contextmanager
    def deciding(self, event_key: str) -> Iterator[asyncio.Future[dict[str, Any]]]:
        """While a first delivery is decided and its answer stored: the future its answer
        is set on, for the replays that come meanwhile."""
        first = asyncio.get_running_loop().create_future()
        self._first_answers[event_key] = first
        try:
            yield first
        finally:
            pending = self._first_answers.pop(event_key)
            if not pending.done():
                pending.cancel()

    async def answer(self, entry: InboxEntry, event_key: str) -> dict[str, Any]:
        """The answer for a replay of the click `entry` holds."""
        self.stats.outcomes["replayed"] += 1
        return entry.answer or await self._first_answer(event_key)

    async def _first_answer(self, event_id: str) -> dict[str, Any]:
        """A replay of a click still being decided or recorded: its first answer, if it
        comes within the budget (from this process, or from the replica that took it)."""
        budget = self.terms.answer_budget_s
        pending = self._first_answers.get(event_id)
        if pending is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                return await asyncio.wait_for(asyncio.shield(pending), budget)
            return self.terms.processing()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        while loop.time() < deadline:
            entry = await self.inbox.get(self.kind, event_id)
            if entry is not None and entry.answer is not None:
                return entry.answer
            await asyncio.sleep(POLL_S)  # another replica holds the click: poll to a deadline
        return self.terms.processing()
