"""On start, clicks a previous run wrote but never answered get their answer; none is applied.

A click's first write holds its inbox entry and its decision in one commit; its answer, and
a refusal's record, come in a second (bot/decide/decider.py). A crash between the two leaves the
entry `received`: a replay (or the page the post redirected to) would wait for an answer
for ever, and a refusal would be on record nowhere. So each such entry is settled: a click
on record (claimed, counted, rejected or refused before the crash) gets the answer it would
have had; a click with no record is recorded refused, for the reason its entry gives now
(`Leftovers.refusal`: the card's checks, or `recovered_unanswered`), and answered so, in one
write. Nothing here claims or rejects: the person has moved on, and may click again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Protocol

from bot.decide.counters import DecisionCounters
from bot.decide.decider import INBOX_KINDS
from kernel.logcontext import about
from kernel.reasons import Reason
from store import Click, Confirmation, Entry, Inbox, InboxEntry, Store

log = logging.getLogger("countersign.decide")

RECOVERY_BATCH = 100
# On a shared PostgreSQL another replica may still be deciding a click it received just
# before we started: recovery leaves an entry alone until it is this old.
RECOVER_AFTER_S = 10.0


class Leftovers(Protocol):
    """What an entry says of a click it left unanswered, in its own answers' shape."""

    def click(self, entry: InboxEntry) -> Click:
        """The click the entry holds, as the store keeps it."""
        ...

    async def refusal(self, entry: InboxEntry) -> tuple[Reason, dict[str, Any]]:
        """A click with no record: why it is refused now, and its answer."""
        ...

    async def recorded_answer(self, record: Confirmation) -> dict[str, Any]:
        """A click on record: the answer it had (or would have had)."""
        ...


async def settle_leftovers(
    inbox: Inbox,
    kind: str,
    started_at: datetime,
    recover_after_s: float,
    settle: Callable[[InboxEntry], Awaitable[None]],
) -> None:
    """`settle` each entry of `kind` received before `started_at` and still unanswered, once
    it is `recover_after_s` old (on a shared PostgreSQL another replica may still be
    answering one it received just before this run started). A failure is logged: the next
    start tries again."""
    clock = inbox.store.clock
    try:
        while entries := await inbox.unanswered(kind, RECOVERY_BATCH, received_before=started_at):
            for entry in entries:
                due = entry.received_at + timedelta(seconds=recover_after_s)
                await asyncio.sleep(max(0.0, (due - clock()).total_seconds()))
                await settle(entry)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("recovering unanswered %s entries failed", kind)


class Recovery:
    def __init__(
        self,
        store: Store,
        entry: Entry,
        leftovers: Leftovers,
        counters: DecisionCounters,
        *,
        recover_after_s: float = RECOVER_AFTER_S,
        on_settled: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.entry = entry
        self.kind = INBOX_KINDS[entry]
        self.leftovers = leftovers
        self.counters = counters
        self.recover_after_s = recover_after_s
        self.on_settled = on_settled
        self.inbox = Inbox(store)

    async def run(self, started_at: datetime) -> None:
        """Settle each click a previous run (received before `started_at`) left open."""
        await settle_leftovers(self.inbox, self.kind, started_at, self.recover_after_s, self.settle)

    async def settle(self, entry: InboxEntry) -> None:
        click = self.leftovers.click(entry)
        with about(click.operation_id):
            record = await self.store.confirmation_of(click.operation_id, entry.key)
            if record is None:  # decided by nobody: refused now, never applied now
                reason, answer = await self.leftovers.refusal(entry)
                also = self.store.refusal_statements(click, reason)
                self.counters.refused(self.entry, reason)
            else:  # claimed, counted, rejected or refused before the crash: on record
                answer, also = await self.leftovers.recorded_answer(record), ()
            if await self.inbox.answered(self.kind, entry.key, answer, None, also):
                log.info("recovered a %s click left unanswered", self.entry.value)
        self.on_settled()
