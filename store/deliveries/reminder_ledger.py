"""Reminders before expiry, as the store keeps them: due, leased, sent once.

An operation filed for an audience with `remind_before_s` has a `remind_at`. While it is
undecided and its card is out, a worker leases it when that time comes (moving `remind_at`
ahead, so a worker that dies leaves it to fall due again) and marks it sent after the reply
went: `reminded_at` set, `remind_at` cleared. Retrying a reply never posts twice: it carries
the same uuid each time, and Lark dedupes.
"""

from __future__ import annotations

from store.authority.records import Operation
from store.authority.store import Store
from store.backend.leases import lease_due
from store.claims.click_sql import bound_time
from store.groupcommit import Intent, Statement
from store.lifecycle import State
from store.schema.tables import OperationRow

LEASE_S = 60.0
# still undecided, its card out, not reminded yet (our own words: no parameters)
UNDECIDED = (
    f"state = '{State.AWAITING_CONFIRMATION.value}' AND card_message_id IS NOT NULL "
    "AND reminded_at IS NULL"
)
SENT = """
UPDATE operations SET reminded_at = :at, remind_at = NULL
 WHERE id = :operation_id AND reminded_at IS NULL
RETURNING id
"""


class ReminderLedger:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def lease_due(self, limit: int) -> list[Operation]:
        """Undecided operations whose reminder is due, leased to this worker."""
        return await lease_due(self.store, OperationRow.remind_at, limit, LEASE_S, UNDECIDED)

    async def sent(self, operation_id: str) -> bool:
        """The reminder went: never again (False: another worker had marked it)."""
        (marked,) = await self.store.commit_intent(
            Intent(
                (
                    Statement(
                        SENT,
                        {
                            "operation_id": operation_id,
                            "at": bound_time(self.store.clock(), self.store.sqlite),
                        },
                    ),
                )
            )
        )
        return bool(marked)
