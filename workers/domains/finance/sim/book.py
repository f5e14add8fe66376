"""What matching reads and what it answers with: the book, the write events, the outcome.

This module owns the data at the seam between the pure matching functions and the venue's
file. A `Book` is the slice of stored state one call reads (instruments, the orders it can
touch, positions, accounts); an `Outcome` is the book after the call, the writes it implies
as events in the order they happened (`OrderPlaced`, `OrderChanged`, `FillMade`,
`PositionChanged`), and the client ids that changed. `transactions` builds books from the
tables and stores events; `matching` turns one into the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from workers.domains.finance.sim.rows import OrderRow, PositionRow
from workers.domains.finance.venues.model import Instrument, Liquidity


@dataclass(frozen=True)
class Book:
    """The slice of the venue's state one matching call reads.

    `orders` is in submission order and must hold every row the call can touch: for
    `submit`, the new order's protective children if they exist; for `tick`, every working
    order and every child of a resting parent. A position not in `positions` is flat.
    `accounts` is only read by `submit` (an unknown account is rejected)."""

    instruments: Mapping[str, Instrument]
    orders: Mapping[str, OrderRow] = field(default_factory=dict)
    positions: Mapping[tuple[str, str], PositionRow] = field(default_factory=dict)
    accounts: tuple[str, ...] = ()

    def position(self, account: str, instrument: str) -> PositionRow:
        found = self.positions.get((account, instrument))
        return found or PositionRow(account, instrument, Decimal(0), None)

    def children(self, client_id: str) -> list[OrderRow]:
        return [o for o in self.orders.values() if o.parent_client_id == client_id]


@dataclass(frozen=True)
class OrderPlaced:
    row: OrderRow  # a new order: insert it


@dataclass(frozen=True)
class OrderChanged:
    row: OrderRow  # a stored order's status, fill, quantity, reason or count changed


@dataclass(frozen=True)
class FillMade:
    client_id: str
    qty: Decimal
    price: Decimal
    fee: Decimal | None  # None: no fee reported (unknown, not zero)
    fee_currency: str
    liquidity: Liquidity
    at: str


@dataclass(frozen=True)
class PositionChanged:
    position: PositionRow


Event = OrderPlaced | OrderChanged | FillMade | PositionChanged


@dataclass(frozen=True)
class Outcome:
    """What one matching call did: the book after it, the writes in order, and the client ids
    it placed, filled, triggered or cancelled (for `tick`, with the children of those)."""

    book: Book
    events: tuple[Event, ...]
    changed: tuple[str, ...]
