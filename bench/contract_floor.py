"""The floor under the answer contract: a bare lark-oapi handler doing the least a countersign
answer needs, so `bench/callback_ack.py` can show what its 2x target asks of any implementation.

Per click, in the SDK's own synchronous handler (the SDK runs them one at a time):

* ONE durable SQLite commit (WAL, synchronous=FULL, the store's schema and migrations): the
  click's inbox entry and the claim's statements, conditional on the card it came from, with
  the operation's row back -- raw sqlite3 and the store's own SQL (store/claims/click_sql.py,
  store/claims/claim_sql.py);
* the operation read from that row (`Operation.from_stored`), its card rendered by
  `render_card` from `operation_view`, and the success toast with that card as the answer.

Nothing else: no envelope checks in Python, no stats, no log context, no second write (the
answer kept for replays, the card recorded as shown), no group commit, no thread hop. The
operations are real finance orders (the demo's payload, the domain's projection), so the card
is the one the bot renders.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ulid import ULID

from cards.render import render_card
from cards.strings import text
from store import (
    ENTRY_INSERT,
    Draft,
    InboxStatus,
    Intent,
    Operation,
    Statement,
    claim_statements,
    open_store,
    operation_view,
    run_intent,
)
from workers.domains.finance.demo import order_payload
from workers.domains.finance.domain import FinanceDomain
from workers.domains.finance.schema import FinanceOrderV1

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling module
from claim_floor import Target, finance_draft, sqlite_connect

CHAT_ID = "oc_ops"  # the chat of finance_draft's audience


@dataclass(frozen=True)
class Card:
    """A posted card's operation, as the handler's claim needs it."""

    operation_id: str
    digest: str


def order_draft(index: int, tag: str) -> Draft:
    """The demo's order, projected as the finance domain projects it: the bot's own card."""
    payload = order_payload()
    projection = FinanceDomain().project(FinanceOrderV1.model_validate(payload))
    return finance_draft(
        f"contract-{tag}-{index}", payload, projection, expires_in_s=3600, index=index
    )


async def prepare(path: Path, message_ids: Sequence[str]) -> dict[str, Card]:
    """An operation waiting for a confirm click behind each posted card, in a fresh store."""
    store = await open_store(f"sqlite+aiosqlite:///{path}")
    try:
        cards: dict[str, Card] = {}
        tag = str(ULID())
        for index, message_id in enumerate(message_ids):
            proposed = await store.propose(order_draft(index, tag))
            op = await store.mark_card_sent(proposed.operation.id, message_id)
            cards[message_id] = Card(op.id, op.confirm_digest)
        return cards
    finally:
        await store.close()


class ContractHandler:
    """The SDK handler: one durable write, the card rendered from what it returned. The SDK
    runs its handlers on its own one thread, so one connection serves them all."""

    def __init__(self, path: Path, cards: Mapping[str, Card]) -> None:
        self.path = path
        self.cards = cards
        self.claimed = 0
        self._db: sqlite3.Connection | None = None

    def owns(self, message_id: str) -> bool:
        return message_id in self.cards

    def answer(self, data: Any) -> dict[str, Any]:
        event_id = str(data.header.event_id)
        message_id = str(data.event.context.open_message_id)
        card = self.cards[message_id]
        operator = str(data.event.operator.open_id)
        values = Target(card.operation_id, card.digest, operator).claim_values(
            sqlite=True, chat_id=CHAT_ID, message_id=message_id, event_id=event_id
        )
        entry = {
            "kind": "callback",
            "key": event_id,
            "at": values["at"],
            "payload": json.dumps(data.event.action.value, separators=(",", ":")),
            "status": InboxStatus.RECEIVED.value,
        }
        # the entry, then the claim only if the entry was new: the click path's own intent
        click = Intent(
            (
                Statement(ENTRY_INSERT, entry),
                *claim_statements(values, sqlite=True, at=1, after=0, card_click=True),
            )
        )
        if self._db is None:
            self._db = sqlite_connect(str(self.path))
        self._db.execute("BEGIN IMMEDIATE")
        try:
            claimed = run_intent(self._db, click)[1]
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        if not claimed:
            raise AssertionError(f"{card.operation_id}: nothing claimed (event {event_id})")
        self.claimed += 1
        op = Operation.from_stored(claimed[0])
        return {
            "toast": {"type": "success", "content": text("toast.confirmed", "en")},
            "card": {"type": "raw", "data": render_card(operation_view(op), now=datetime.now(UTC))},
        }
