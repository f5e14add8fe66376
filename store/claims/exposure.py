"""`Exposure`: what an operation would add to an account, as a value. Apart from the
reservations' SQL (`store/claims/reservations.py`) so a domain can name it without loading
SQLAlchemy (`countersign mcp` reads the domains' registry, issue 34)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal


@dataclass(frozen=True)
class Exposure:
    """What an operation would add to an account, against the account's budget."""

    account: str
    amount: Decimal
    budget: Decimal
    observed: Decimal  # positions and open orders from a fresh observation
    observed_at: datetime | None = None  # when that observation was taken
