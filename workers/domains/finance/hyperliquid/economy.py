"""Hyperliquid's request weights and this process's budget of them (reference/venues.md §1.6).

The venue allows 1200 weight per minute per IP and answers 429 beyond it. `WeightBudget`
counts what this process sent in the last minute and makes a read wait (bounded) while the
window is full, rather than be refused: a 429 on a read is a failed preflight, and one on
an order is an ambiguous submit to reconcile. `/exchange` requests never wait (an order
already has its evidence recorded and its expiresAfter running): reads stop `ACTIONS_RESERVE`
short of the limit so that orders still fit.

One budget per `Transport`, i.e. per process: another process on the same IP (the API
process filing, a second replica) spends the same venue limit unseen; its own budget paces
it. The freshness each read may have is stated here too, in one place.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final

from workers.domains.finance.preflight import OBSERVATION_MAX_AGE
from workers.domains.finance.venues.contract import VenueUnavailable

log = logging.getLogger("countersign.venue.hyperliquid")

IP_WEIGHT_PER_MIN: Final = 1200
WINDOW_S: Final = 60.0
ACTIONS_RESERVE: Final = 100  # weight reads leave free for orders and cancels
MAX_WAIT_S: Final = 20.0  # a read that would wait longer fails now (VenueUnavailable)
LIGHT_INFO: Final = frozenset(
    {
        "l2Book",
        "allMids",
        "clearinghouseState",
        "orderStatus",
        "spotClearinghouseState",
        "exchangeStatus",
    }
)
PER_20_ITEMS: Final = frozenset({"userFills", "userFillsByTime", "historicalOrders"})

# How old a shared read may be, per use (seconds). Precision and fees change rarely: the
# capability check takes them a minute old. Preflight takes them at most half the
# observation's max age old, so the whole observation is still inside that age when it is
# checked; the account's own reads (positions, open orders, leverage) and the marks are
# shared only within a second (well inside the runner's 5 s clock-skew allowance, so an
# order dispatched after the read is still counted by the store).
SLOW_S: Final = 60.0
PRECISION_S: Final = OBSERVATION_MAX_AGE.total_seconds() / 2
ACCOUNT_WINDOW_S: Final = 1.0
# fills read after an answer must start after it; such reads of one account start at most
# this often, so a burst of answers shares a few reads
FILLS_SPACING_S: Final = 0.5


def info_weight(body: Mapping[str, Any]) -> int:
    kind = body.get("type")
    if kind in LIGHT_INFO:
        return 2
    return 60 if kind == "userRole" else 20


def items_weight(body: Mapping[str, Any], answer: Any) -> int:
    """The weight an answer adds for its items (1 per 20 for fills and historical orders)."""
    if body.get("type") in PER_20_ITEMS and isinstance(answer, list):
        return len(answer) // 20
    return 0


def exchange_weight(payload: Mapping[str, Any]) -> int:
    action = payload.get("action")
    batch: Any = ()
    if isinstance(action, Mapping):
        batch = action.get("orders") or action.get("cancels") or ()
    return 1 + len(batch) // 40


class WeightBudget:
    """The weight this process sent in the last minute, and the wait before the next read."""

    def __init__(
        self,
        per_min: int = IP_WEIGHT_PER_MIN,
        *,
        reserve: int = ACTIONS_RESERVE,
        max_wait_s: float = MAX_WAIT_S,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_min = per_min  # per window_s: the venue's is a minute
        self.window_s = window_s
        self.reserve = min(reserve, per_min // 2)
        self.max_wait_s = max_wait_s
        self.clock = clock
        self.spent_total = 0  # every weight sent since opening (for benches and qualify)
        self.waits = 0  # reads that had to wait
        self._spent: deque[tuple[float, int]] = deque()
        self._told = False

    def used(self) -> int:
        horizon = self.clock() - self.window_s
        while self._spent and self._spent[0][0] <= horizon:
            self._spent.popleft()
        return sum(weight for _, weight in self._spent)

    def _spend(self, weight: int) -> None:
        self._spent.append((self.clock(), weight))
        self.spent_total += weight

    def _free_in(self, weight: int, cap: int) -> float:
        """Seconds until `weight` more fits under `cap` (the oldest entries leave first)."""
        over = self.used() + weight - cap
        horizon = self.clock() - self.window_s
        for at, spent in self._spent:
            over -= spent
            if over <= 0:
                return max(0.0, at - horizon)
        return self.window_s

    async def read(self, kind: str, weight: int) -> None:
        """Spend `weight` for a read, waiting while the window is full (at most max_wait_s;
        VenueUnavailable beyond, and nothing is spent)."""
        await self.room(kind, weight)
        self._spend(weight)

    async def room(self, kind: str, weight: int) -> None:
        """Wait until `weight` more fits under the reads' cap, spending nothing (an
        observation waits for room for all its reads first, so they go out together and
        none waits after another was sent: it stays as fresh as it says)."""
        cap = self.per_min - self.reserve
        deadline = self.clock() + self.max_wait_s
        waited = False
        while self.used() + weight > cap:
            delay = self._free_in(weight, cap)
            if self.clock() + delay > deadline:
                raise VenueUnavailable(
                    f"Hyperliquid /info {kind}: this process's request weight for the minute "
                    f"({self.per_min}, the venue's per-IP limit) is spent; try again shortly"
                )
            if not waited:
                waited = True
                self.waits += 1
                if not self._told:
                    self._told = True  # once per process: the pacing is normal, not a fault
                    log.info(
                        "Hyperliquid request weight near the limit (%d of %d per minute): "
                        "reads now wait for room instead of being refused",
                        self.used(),
                        self.per_min,
                    )
            await asyncio.sleep(delay + 0.001)  # pacing against the venue's clock, not a sync

    def extra(self, weight: int) -> None:
        """Weight learned from an answer (items returned)."""
        if weight > 0:
            self._spend(weight)

    def action(self, weight: int) -> None:
        """An /exchange request: counted, never held back (reads left room for it)."""
        self._spend(weight)
