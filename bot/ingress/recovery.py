"""On start, clicks a previous run received but never settled are put on record, never applied.

A crash between a click's inbox entry and its record leaves the entry unanswered. Each is
recorded with the reason the checks give now (or `recovered_unanswered`), and given the
answer a replay of it gets; a click decided or refused before the crash is on record
already and only gets its answer. Nothing here claims or rejects.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from bot.ingress.ack import toast
from bot.ingress.decision import INBOX_KIND, Decisions, refusal_toast
from bot.ingress.provenance import (
    ENVELOPE_CHECKS,
    VALUE_CHECKS,
    CardClick,
    first_refusal,
    parse_click,
    verify_operation,
)
from bot.ingress.stats import ConsumerStats
from cards.strings import toast_key
from store.authority import Store
from store.inbox import Inbox, InboxEntry
from store.logcontext import about
from store.reasons import Reason
from store.records import Confirmation, Operation

if TYPE_CHECKING:  # the consumer's settings; bot/ingress/callbacks.py wires this module
    from bot.ingress.callbacks import CallbackSettings

log = logging.getLogger("countersign.callbacks")

RECOVERY_BATCH = 100


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
        self, store: Store, settings: CallbackSettings, stats: ConsumerStats, decisions: Decisions
    ) -> None:
        self.store = store
        self.settings = settings
        self.stats = stats
        self.decisions = decisions
        self.inbox = Inbox(store)

    async def run(self, started_at: datetime) -> None:
        """Put on record each click a previous run received but never settled (it crashed
        between the inbox entry and the record). Nothing here claims or rejects."""
        await settle_leftovers(
            self.inbox, INBOX_KIND, started_at, self.settings.recover_after_s, self._settle_leftover
        )

    async def _settle_leftover(self, entry: InboxEntry) -> None:
        click = parse_click(entry.payload)
        stored = click.as_store_click()
        with about(stored.operation_id):
            record = await self.store.confirmation_of(stored.operation_id, entry.key)
            if record is None:  # decided by nobody: refused now, for the reason it has now
                reason, op = await self._leftover_reason(click)
                await self.store.record_refusal(stored, reason)
                answer = await self.decisions.refusal_answer(reason, op, click)
            else:  # claimed, rejected or refused before the crash: on record already
                answer = self._recorded_answer(record)
            await self.inbox.answered(INBOX_KIND, entry.key, answer)
        self.stats.outcomes["recovered"] += 1

    async def _leftover_reason(self, click: CardClick) -> tuple[Reason, Operation | None]:
        """What the checks say now; a click they would let through is not applied after the
        fact (nobody is waiting for it, and the operator may have moved on)."""
        ctx = self.decisions.context()
        for checks in (ENVELOPE_CHECKS, VALUE_CHECKS):
            if (reason := first_refusal(checks, click, ctx)) is not None:
                return reason, None
        op = await self.store.get(click.operation_id)
        return verify_operation(click, op, ctx) or Reason.RECOVERED_UNANSWERED, op

    def _recorded_answer(self, record: Confirmation) -> dict[str, Any]:
        """The toast a click on record was (or would have been) answered with, for replays."""
        lang = self.settings.lang
        if record.accepted:
            key = toast_key(record.action)
            return toast("success", key, lang)
        return refusal_toast(Reason(record.reason_code or Reason.MALFORMED_VALUE), lang)
