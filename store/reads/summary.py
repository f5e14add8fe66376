"""What `/readyz` and `/metrics` show from the store, read as one summary off the request
path (bot/api/summary.py refreshes it in the background, issue 34).

Only what is outstanding is counted (unknowns, unresolved operations, cards waiting or
refused, deliveries not delivered), never a total over history, so each count can be
served by an index on what is outstanding; the statements themselves are the store's reads
the dashboard shares (store/reads/counts.py, attention.py, cards/card_ledger.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from store.authority.store import Store
from store.cards.card_ledger import CardLedger
from store.reads.attention import UNRESOLVED, counts
from store.reads.counts import card_delivery_failures, unknown_outstanding
from store.schema.tables import DeliveryRow
from store.vocabulary import DeliveryState

# delivered is history; these two are work still to do (ix_deliveries_state seeks each)
OUTSTANDING_DELIVERIES = (DeliveryState.PENDING.value, DeliveryState.FAILED.value)


@dataclass(frozen=True)
class StoreSummary:
    unknown_outstanding: int  # submissions whose outcome the reconciler has not settled
    unresolved: int  # operations whose newest outcome waits for a person
    card_backlog: int  # operations whose card is due
    card_oldest: datetime | None  # since when the oldest of them waits
    card_delivery_failed: int  # cards Lark refused for good
    deliveries_pending: int
    deliveries_failed: int


async def deliveries_outstanding(store: Store) -> dict[str, int]:
    """Result deliveries not delivered, by state (pending, failed)."""
    query = (
        select(DeliveryRow.state, func.count())
        .where(DeliveryRow.state.in_(OUTSTANDING_DELIVERIES))
        .group_by(DeliveryRow.state)
    )
    async with store.read() as conn:
        rows = (await conn.execute(query)).all()
    return {state: int(count) for state, count in rows}


async def store_summary(store: Store) -> StoreSummary:
    """Every count above, one read each."""
    backlog, oldest = await CardLedger(store).backlog()
    deliveries = await deliveries_outstanding(store)
    return StoreSummary(
        unknown_outstanding=await unknown_outstanding(store),
        unresolved=(await counts(store, [UNRESOLVED]))[UNRESOLVED],
        card_backlog=backlog,
        card_oldest=oldest,
        card_delivery_failed=await card_delivery_failures(store),
        deliveries_pending=deliveries.get(DeliveryState.PENDING.value, 0),
        deliveries_failed=deliveries.get(DeliveryState.FAILED.value, 0),
    )
