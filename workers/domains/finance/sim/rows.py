"""The simulated venue's stored records, decoded: what matching reads and changes, and the
store persists.

An `OrderRow` is one stored order (a submitted parent or a protective child), a `FillRow`
one execution, a `PositionRow` an account's one-way position in one instrument. They are
frozen: matching answers with new rows (`dataclasses.replace`), never by changing the rows
it was given. Timestamps stay ISO strings, as stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class OrderRow:
    """One stored order (a submitted parent or a protective child), decoded."""

    client_id: str
    parent_client_id: str | None
    role: str
    account: str
    instrument: str
    side: str
    quantity: Decimal
    order_type: str
    limit_price: Decimal | None
    max_slippage_bps: Decimal | None
    time_in_force: str
    reduce_only: bool
    leverage: Decimal
    trigger_price: Decimal | None
    stop_loss: Decimal | None
    take_profit: Decimal | None
    status: str
    filled_qty: Decimal
    reason: str | None
    submit_count: int
    created_at: str
    updated_at: str
    seq: int = 0  # submission order; 0 until the store has inserted it

    @property
    def remaining(self) -> Decimal:
        return self.quantity - self.filled_qty


@dataclass(frozen=True)
class FillRow:
    id: int
    client_id: str
    qty: Decimal
    price: Decimal
    fee: Decimal | None
    fee_currency: str
    liquidity: str
    at: str


@dataclass(frozen=True)
class PositionRow:
    account: str
    instrument: str
    qty: Decimal
    avg_price: Decimal | None
