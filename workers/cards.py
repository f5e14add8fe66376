"""Card delivery worker: posts each new operation's card and patches the original card.

What is due is derived from versions in the store (`store.cards.card_ledger`): only the newest
projection is ever rendered, so a burst of changes becomes one patch. A send carries the
operation's uuid, so a retried send can never post a second card. Delivery never executes
anything.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any, Protocol

from cards.decide import Threshold
from cards.render import render_card
from cards.strings import Lang
from kernel.logcontext import about
from store import CardLedger, Operation, State, Store, view
from workers.loop import window_loop

log = logging.getLogger("countersign.cards")

MAX_ATTEMPTS = 8
MAX_BACKOFF_S = 60.0
WINDOW = 20  # card calls in flight at most


class CardChannel(Protocol):
    """Where cards go (Lark). Errors may carry `kind` ("terminal" stops retries) and `code`.

    Anything else is retried with backoff, e.g. a patch Lark refuses while a click on the card
    is being answered (230099 "card action is lock", `LarkApiError.card_locked`)."""

    async def send_card(self, chat_id: str, card: dict[str, Any], uuid: str) -> str: ...

    async def patch_card(self, message_id: str, card: dict[str, Any]) -> None: ...


@dataclass
class CardTurn:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0


def card_uuid(operation_id: str) -> str:
    return f"cs-card-{operation_id}"


class CardWorker:
    def __init__(
        self,
        store: Store,
        channel: CardChannel,
        *,
        lang: Lang = "en",
        tz: tzinfo = UTC,
        poll_s: float = 1.0,
        people: Mapping[str, str] | None = None,
        second_look_above: Threshold | None = None,
    ) -> None:
        self.store = store
        self.ledger = CardLedger(store)
        self.channel = channel
        self.lang = lang
        self.tz = tz
        self.people = people or {}  # open id -> display name, for the card
        self.second_look_above = second_look_above  # Confirm's dialog above it (cards/decide)
        self.poll_s = poll_s
        self._kick = asyncio.Event()
        self._per_card: dict[str, CardTurn] = {}  # cards with a call under way or waiting

    def kick(self) -> None:
        """Something is due now (a proposal, a decision, an expiry): do not wait for the poll."""
        self._kick.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Up to `WINDOW` cards in flight; each one sent or patched makes room for the next
        lease, so a slow Lark call never holds back the cards behind it."""
        await window_loop(
            self.ledger.lease_due,
            self.deliver,
            width=WINDOW,
            kicked=self._kick,
            stop=stop,
            poll_s=self.poll_s,
            log=log,
        )

    async def drain(self) -> int:
        due = await self.ledger.lease_due()
        await asyncio.gather(*(self.deliver(op) for op in due))
        return len(due)

    async def deliver(self, op: Operation) -> None:
        # One call at a time per card: a newer version leased while an older one is still
        # being sent or patched waits for it, so the card never ends on the older one.
        turn = self._per_card.setdefault(op.id, CardTurn())
        turn.waiting += 1
        try:
            async with turn.lock:
                with about(op.id):
                    await self._deliver(op)
        finally:
            turn.waiting -= 1
            if not turn.waiting:
                del self._per_card[op.id]

    async def _deliver(self, op: Operation) -> None:
        card = render_card(
            await view(self.store, op),
            lang=self.lang,
            now=self.store.clock(),
            tz=self.tz,
            people=self.people,
            second_look_above=self.second_look_above,
        )
        action = "send" if op.card_message_id is None else "patch"
        try:
            if op.card_message_id is None:
                if op.state is not State.PREPARED:
                    # closed before any card went out: there is nothing to show or patch
                    await self.ledger.shown(op.id, op.version, "none")
                    return
                message_id = await self.channel.send_card(
                    op.envelope.audience.chat_id, card, card_uuid(op.id)
                )
                await self.store.mark_card_sent(op.id, message_id)  # and shown, one write
                log.info("card sent for %s as %s", op.id, message_id)
            else:
                await self.channel.patch_card(op.card_message_id, card)
                await self.ledger.shown(op.id, op.version, "patch")
                if op.escalation_message_id and (op.escalation_card_version or 0) < op.version:
                    # its copy in the escalation chat shows every change too
                    await self.channel.patch_card(op.escalation_message_id, card)
                    await self.ledger.shown(op.id, op.version, "patch", escalation=True)
        except Exception as error:
            kind = getattr(error, "kind", "transient")
            code = getattr(error, "code", None)
            attempts = op.card_attempts + 1
            permanent = kind == "terminal" or attempts >= MAX_ATTEMPTS
            retry_in = None if permanent else min(MAX_BACKOFF_S, 2.0**attempts)
            log.warning("card %s for %s failed (%s, code %s): %s", action, op.id, kind, code, error)
            await self.ledger.failed(
                op.id,
                op.version,
                action,
                code if isinstance(code, int) else None,
                str(error),
                retry_in_s=retry_in,
            )
