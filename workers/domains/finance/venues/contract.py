"""The one contract every finance venue implements: `Venue`, and what it declares (`Profile`).

`FinanceRunner` holds one `Venue` per configured venue name and never asks which one it is:
the simulated venue (`finance.sim`) and the Hyperliquid adapter (`finance.hyperliquid`) answer
the same calls with the same types (`venues.model`), and both pass the one conformance suite
(tests/workers/domains/venues/). A venue an account names but this process did not open is an
error at start, never a silent fallback to another venue or product.

The calls, in the executor's order:
- `capabilities()` before a card is offered (what could ever execute: instruments, order
  types, accounts and their modes, marks for the worst case);
- `observe(account)` at filing and at preflight: a fresh snapshot (instrument precision and
  minimums, mark, account mode and leverage, positions, open orders);
- `submit(order)` once per client id, after the attempt is durable. An answer that may or may
  not mean the order landed raises `VenueAmbiguous`; a repeat of the same client id never
  places a second order (`Submission.created` False);
- `lookup(client_id, evidence)` to reconcile and to follow a working order: its state, None
  while the venue does not know it, or `NeverLanded` once the venue has proved it never can
  (a fenced nonce), which the runner records as `not_submitted` at once;
- `watch()` runs beside the executor (the sim's matching clock, a real venue's poll of the
  orders still working) and names the client ids that changed;
- `cancel`, `fills`, `account_state` for people and tools (`venue qualify`, `venue orders`).

Every state a venue returns carries its `world` (SIMULATED, EMULATOR, TESTNET, LIVE); the
runner stamps it on every outcome, so no surface can show a mock's fill as live.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from store import World
from workers.domains.finance.venues.model import (
    Capabilities,
    Fill,
    Observation,
    Submission,
    VenueOrder,
    VenueOrderState,
)

# What an adapter durably records for an attempt before its request leaves (the signed action
# and its nonce): handed back to `lookup` so any replica can fence or find it. JSON only.
Evidence = Mapping[str, Any]
# Persist evidence for a client id, durably, before the request leaves (the executor's store).
RecordEvidence = Callable[[str, Evidence], Awaitable[None]]


class VenueAmbiguous(Exception):
    """The request may or may not have landed (timeout, dropped answer, 5xx): reconcile by
    the client id; never send it again."""


class NeverLanded(Exception):
    """The venue proved this client id can never be placed (its request was fenced or
    expired unplaced): the attempt is `not_submitted`, and only a new confirmation may try
    again. The message says how it was proved."""


class VenueUnavailable(Exception):
    """A read failed (the venue did not answer): nothing is known, try again later."""


@dataclass(frozen=True)
class Profile:
    """What a venue declares about itself (design §6): read by the capability check, `countersign
    venue profile`, docs/venues.md and the conformance suite. Words are for people; the sets
    are what checks read."""

    name: str  # the venue name accounts and payloads use: "sim", "hyperliquid"
    executor_revision: str  # bound into each order's digest with the executor's name
    products: frozenset[str]  # {"perp"}
    order_types: frozenset[str]  # {"limit", "market"}
    time_in_force: frozenset[str]  # {"GTC", "IOC", "POST_ONLY"}
    protective: bool  # stop-loss / take-profit children with the order
    reduce_only: bool
    account_modes: frozenset[str]  # {"one_way"}
    precision: str  # "tick and lot per instrument" / "5 significant figures, ..."
    minimum: str  # "a minimum quantity per instrument" / "$10 notional per order"
    fees: str  # where fees come from, and that a missing fee is unknown, not zero
    authentication: str  # "none" / "an agent wallet key from the secret named in config"
    client_ids: str  # what a client id is at the venue, and how ours maps to it
    reconciliation: str  # how an ambiguous submit is settled, and its limits
    notes: tuple[str, ...] = ()  # what is not supported, said plainly
    # a market order goes out as an IOC limit at the confirmed slippage bound
    # (venues/pricing.py::bounded_market_price); False: the venue takes market orders itself
    market_as_bounded_limit: bool = False
    # the executor name bound into each order's digest (None: the venue's name); the sim's
    # is "sim-venue", kept from before there was more than one venue
    executor_name: str | None = None

    @property
    def executor(self) -> tuple[str, str]:
        """(name, revision) of the executor orders on this venue are confirmed for."""
        return self.executor_name or self.name, self.executor_revision

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "executor_revision": self.executor_revision,
            "products": sorted(self.products),
            "order_types": sorted(self.order_types),
            "time_in_force": sorted(self.time_in_force),
            "protective": self.protective,
            "reduce_only": self.reduce_only,
            "account_modes": sorted(self.account_modes),
            "precision": self.precision,
            "minimum": self.minimum,
            "fees": self.fees,
            "authentication": self.authentication,
            "client_ids": self.client_ids,
            "reconciliation": self.reconciliation,
            "notes": list(self.notes),
            "market_as_bounded_limit": self.market_as_bounded_limit,
            "executor": "{} r{}".format(*self.executor),
        }


@dataclass(frozen=True)
class Balance:
    currency: str
    total: Decimal
    available: Decimal  # free for new orders (margin not in use)


@dataclass(frozen=True)
class AccountState:
    """An account as the venue reports it, for `venue qualify` (reads only, never an effect)."""

    venue: str
    account: str
    world: World
    balances: tuple[Balance, ...]
    account_mode: str  # "one_way"; a venue that cannot say reports "unknown"
    margin_mode: str | None  # "cross", "isolated", None: not a margin account
    # per instrument: the leverage the account is set to (None: not reported)
    leverage: Mapping[str, Decimal | None] = field(default_factory=dict)
    open_orders: int = 0
    # facts a person must see before trusting the account: "agent wallet 0x… approved",
    # "rate-limit budget: 9 500 of 10 000 requests left"; (name, value, ok)
    facts: tuple[tuple[str, str, bool], ...] = ()


class Venue(ABC):
    """One venue, opened for this process from its settings; closed with `close()`."""

    profile: Profile
    world: World
    # called with a client id once its submission is committed at the venue, before the
    # answer is read (the crash suite's "after dispatch, before the response" point)
    after_commit: Callable[[str], None] | None = None

    @property
    def name(self) -> str:
        return self.profile.name

    @abstractmethod
    async def capabilities(self) -> Capabilities:
        """What this venue could ever execute, read now (VenueUnavailable if it cannot)."""

    @abstractmethod
    async def observe(
        self,
        account: str,
        instruments: Collection[str] | None = None,
        *,
        max_age: timedelta | None = None,
    ) -> Observation:
        """A fresh snapshot of `account` (UnknownAccount, VenueUnavailable). `instruments`:
        the ones the caller will weigh (preflight: the order's); the observation must hold
        their precision, mark and the account's leverage on them (a venue that reads
        leverage per instrument may leave others out). None: every instrument. `max_age`:
        how old its slowly changing parts (precision, fees) may be, for a venue that shares
        reads (the filing pre-check allows a minute); None: fresh enough for preflight."""

    @abstractmethod
    async def submit(self, order: VenueOrder, record: RecordEvidence) -> Submission:
        """Place `order` once. `record` is awaited with the evidence of the request (the
        signed action, its nonce) before it leaves; VenueAmbiguous when the answer is not
        decisive. Rejections by the venue are states (`rejected` with its reason)."""

    @abstractmethod
    async def lookup(self, client_id: str, evidence: Evidence | None) -> VenueOrderState | None:
        """What the venue knows of `client_id` (None: not known yet); NeverLanded when it
        proved it can never be placed; VenueAmbiguous/VenueUnavailable: ask again later."""

    @abstractmethod
    async def cancel(self, client_id: str) -> VenueOrderState | None:
        """Cancel a working order (None: the venue does not know it)."""

    @abstractmethod
    async def fills(self, client_id: str) -> tuple[Fill, ...]:
        """The fills of `client_id`, oldest first (a fill without a fee has fee None)."""

    @abstractmethod
    async def account_state(self, account: str) -> AccountState:
        """The account as the venue reports it, read only."""

    async def watch(self) -> Sequence[str]:
        """One round of following the venue (the sim's matching tick; a real venue's poll of
        working orders): the client ids whose state changed. Default: nothing to follow."""
        return ()

    async def close(self) -> None:  # noqa: B027 (a venue that opened nothing)
        """Release what the venue opened (files, sessions)."""
