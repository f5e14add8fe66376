"""What this process remembers of its Hyperliquid orders: the terms of recent ones (so a
cancel or a fills read can name them) and the ones still working, which `watch()` polls.

Memory is a convenience, never the authority: after a restart it is empty, lookups read the
terms from the recorded evidence, and cancel/fills read them from the venue.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from workers.domains.finance.hyperliquid.answers import terms_of
from workers.domains.finance.hyperliquid.wire import cloid_of
from workers.domains.finance.venues.model import VenueOrder, VenueOrderState

KNOWN_ORDERS: Final = 10_000  # terms of recent orders kept for cancel/fills


@dataclass
class Followed:
    order: VenueOrder
    user: str  # the account's address
    last: VenueOrderState | None = None
    key: Any = None  # what the last poll compared (orders.Key), None: not polled yet
    # a request not found yet can land only until then (its expiresAfter, in ms)
    lands_until_ms: int | None = None


def settled(state: VenueOrderState) -> bool:
    """Nothing of it can change any more: it and its protective children are terminal."""
    return state.terminal and all(c.terminal for c in state.children)


def digest(state: VenueOrderState) -> tuple[Any, ...]:
    """What a watcher compares to tell that an order changed."""
    return (
        state.status,
        state.filled_qty,
        len(state.fills),
        state.fees,
        tuple(digest(c) for c in state.children),
    )


class Memory:
    def __init__(self) -> None:
        self.following: dict[str, Followed] = {}
        self._known: OrderedDict[str, tuple[VenueOrder, str]] = OrderedDict()

    def known(self, client_id: str) -> tuple[VenueOrder, str] | None:
        return self._known.get(client_id)

    def remember(self, order: VenueOrder, user: str) -> None:
        self._known[order.client_id] = (order, user)
        self._known.move_to_end(order.client_id)
        while len(self._known) > KNOWN_ORDERS:
            self._known.popitem(last=False)

    def follow(
        self,
        order: VenueOrder,
        user: str,
        state: VenueOrderState | None,
        key: Any = None,
        lands_until_ms: int | None = None,
    ) -> bool:
        """Remember `state`; follow the order while it can change. True: it changed."""
        self.remember(order, user)
        before = self.following.get(order.client_id)
        changed = (
            before is None
            or before.last is None
            or (state is not None and digest(state) != digest(before.last))
        )
        if state is not None and settled(state):
            self.following.pop(order.client_id, None)
        else:
            until = lands_until_ms if before is None else before.lands_until_ms
            self.following[order.client_id] = Followed(order, user, state, key, until)
        return changed

    def forget(self, client_id: str) -> None:
        self.following.pop(client_id, None)

    def cloids(self) -> dict[str, str]:
        """cloid -> client id, for every order (and child) this process follows."""
        cloids: dict[str, str] = {}
        for followed in self.following.values():
            for terms in terms_of(followed.order):
                cloids[cloid_of(terms.client_id)] = terms.client_id
        return cloids
