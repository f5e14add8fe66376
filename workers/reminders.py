"""Reminder worker: one reply in an undecided operation's card thread before it expires.

Leases due reminders (store/deliveries/reminder_ledger.py), replies to the card naming the operators who may
still act (cards/reminder.py), then marks each sent. A failed reply is retried when its
lease runs out, with the same uuid, so Lark posts it once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import UTC, tzinfo
from typing import Any, Protocol

from cards.decide import Threshold
from cards.reminder import reminder_text, waiting_for
from cards.render import render_card
from cards.strings import Lang
from kernel.logcontext import about
from store import CardLedger, Operation, ReminderLedger, Store, operation_view, view

log = logging.getLogger("countersign.reminders")

BATCH = 20


class ReplyChannel(Protocol):
    async def send_card(self, chat_id: str, card: dict[str, Any], uuid: str) -> str: ...

    async def reply_text(self, message_id: str, text: str, uuid: str) -> str: ...


def reminder_uuid(operation_id: str) -> str:
    """The same on every try: Lark dedupes a reply by it (at most 50 characters)."""
    return f"cs-remind-{operation_id}"


def escalation_uuid(operation_id: str) -> str:
    return f"cs-escalate-{operation_id}"


class ReminderWorker:
    def __init__(
        self,
        store: Store,
        channel: ReplyChannel,
        *,
        lang: Lang = "en",
        tz: tzinfo = UTC,
        poll_s: float = 1.0,
        people: Mapping[str, str] | None = None,
        second_look_above: Threshold | None = None,
    ) -> None:
        self.store = store
        self.ledger = ReminderLedger(store)
        self.cards = CardLedger(store)
        self.channel = channel
        self.lang = lang
        self.tz = tz
        self.people = people or {}  # open id -> display name, for the card
        self.second_look_above = second_look_above  # Confirm's dialog above it (cards/decide)
        self.poll_s = poll_s

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                for op in await self.ledger.lease_due(BATCH):
                    await self.remind(op)
            except Exception:
                log.exception("reminder look failed; retrying in %.1fs", self.poll_s)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.poll_s)

    async def remind(self, op: Operation) -> None:
        with about(op.id):
            view = operation_view(op)
            if op.card_message_id is None or not waiting_for(view):
                await self.ledger.sent(op.id)  # nobody left to ask: nothing to say
                return
            text = reminder_text(view, lang=self.lang, now=self.store.clock(), tz=self.tz)
            try:
                await self.escalate(op)
                await self.channel.reply_text(op.card_message_id, text, reminder_uuid(op.id))
            except Exception as error:  # tried again when the lease runs out
                log.warning("reminder for %s not sent: %s", op.id, error)
                return
            await self.ledger.sent(op.id)
            log.info("reminded the operators of %s", op.id)

    async def escalate(self, op: Operation) -> None:
        """A copy of the card in the escalation chat, if the audience escalates (once: the
        uuid makes a retried send the same message)."""
        chat_id = op.envelope.approval.escalation_chat_id
        if chat_id is None or op.escalation_message_id is not None:
            return
        card = render_card(
            await view(self.store, op),
            lang=self.lang,
            now=self.store.clock(),
            tz=self.tz,
            people=self.people,
            second_look_above=self.second_look_above,
        )
        message_id = await self.channel.send_card(chat_id, card, escalation_uuid(op.id))
        await self.cards.escalated(op.id, message_id, op.version)
        log.info("card of %s escalated to %s as %s", op.id, chat_id, message_id)
