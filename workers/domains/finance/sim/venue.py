"""`SimVenue`, the simulated venue's adapter: the async calls the finance executor makes.

This module owns the call boundary: opening and closing the venue's file, the venue clock
(with the offset `advance` moves and the file keeps), running each call's transaction
(`transactions`) in a worker thread, and the call-level faults: `timeout` raises before
anything is stored, `lose_response` after, `latency_ms` waits before answering.

SIMULATED: nothing here reaches a real exchange (docs/architecture.md §1, principle 7;
every order, listing and observation carries `world=SIMULATED`). It implements the one
`Venue` contract (venues/contract.py) the executor speaks to every venue.

State lives in the venue's own SQLite file (`store`), so a restarted bot
reconciles against what the venue really did. Every answer is committed before it
is given; `lose_response` commits and then raises, which is exactly the ambiguous
case the reconciler resolves with `lookup(client_id)`. The matching rules are in
`matching`, the faults in `faults`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Final, Self, TypeVar

from workers.domains.finance.preflight import observed_exposure
from workers.domains.finance.sim import transactions
from workers.domains.finance.sim.decimals import require_decimal
from workers.domains.finance.sim.errors import VenueClosed, VenueResponseLost, VenueTimeout
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.profile import PROFILE, VENUE_NAME, WORLD
from workers.domains.finance.sim.store import VenueStore
from workers.domains.finance.sim.tables import Txn
from workers.domains.finance.venues.contract import (
    AccountState,
    Balance,
    Evidence,
    NeverLanded,
    RecordEvidence,
    Venue,
)
from workers.domains.finance.venues.model import (
    Capabilities,
    Fill,
    Instrument,
    Observation,
    Submission,
    VenueOrder,
    VenueOrderState,
)

Clock = Callable[[], datetime]
T = TypeVar("T")

DEFAULT_VENUE_PATH: Final = Path("var/sim-venue.db")
FENCED: Final = "fenced"  # evidence key: the `fence` fault refused this request unstored


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SimVenue(Venue):
    """The simulated venue. Open with `await SimVenue.open(path)`; all calls are async."""

    profile = PROFILE
    world = WORLD

    def __init__(self, store: VenueStore, faults: Faults, clock: Clock) -> None:
        self._store: VenueStore | None = store
        self.faults = faults  # replaceable at run time (tests, demo)
        self._clock = clock
        self._offset = timedelta(0)
        # called with the client id once a submission is committed, before it is answered
        # (the crash suite's "after dispatch, before the response" point)
        self.after_commit: Callable[[str], None] | None = None
        # per account, the currency and amount `account_state` reports: the sim keeps no
        # money of its own, so the account's exposure budget stands in for its balance
        self.funds: Mapping[str, tuple[str, Decimal]] = {}

    @property
    def path(self) -> Path:
        return self._live().path

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        instruments: Sequence[Instrument] | None = None,
        accounts: Sequence[str] | None = None,
        faults: Faults | None = None,
        clock: Clock = _utc_now,
        create: bool = True,
    ) -> SimVenue:
        """Open (or create) the venue's state at `path`.

        A new file gets `instruments` (default BTC-PERP, ETH-PERP) and `accounts`
        (default sim-main). For a file that exists, the given instruments update the
        stored specs (tick, lot, fees...) and are added if new, but a stored mark is
        kept (`set_mark` is durable); given accounts are added. `create=False`
        refuses a missing file (read-only tools such as `venue orders`).
        """
        store = await asyncio.to_thread(VenueStore.connect, path, create=create)
        try:
            venue = cls(store, faults or Faults(), clock)
            seed = partial(transactions.seed, instruments=instruments, accounts=accounts)
            venue._offset = await asyncio.to_thread(store.run, seed, write=True)
        except BaseException:
            await asyncio.to_thread(store.close)
            raise
        return venue

    async def close(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            await asyncio.to_thread(store.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- plumbing --------------------------------------------------------------------------
    def _live(self) -> VenueStore:
        if self._store is None:
            raise VenueClosed()
        return self._store

    def _now(self) -> datetime:
        now = self._clock()
        if now.tzinfo is None:
            raise ValueError("the venue clock must return an aware datetime")
        return now.astimezone(UTC) + self._offset

    async def _run(self, fn: Callable[[Txn], T], *, write: bool) -> T:
        store = self._live()
        return await asyncio.to_thread(store.run, fn, write=write)

    async def _latency(self) -> None:
        if self.faults.latency_ms:
            await asyncio.sleep(self.faults.latency_ms / 1000)

    # -- reads -----------------------------------------------------------------------------
    async def capabilities(self) -> Capabilities:
        return await self._run(transactions.capabilities, write=False)

    async def observe(
        self,
        account: str,
        instruments: Collection[str] | None = None,
        *,
        max_age: timedelta | None = None,
    ) -> Observation:
        """A fresh snapshot of `account`; raises UnknownAccount for an account not here.
        Every instrument is in it (one read of one file, always fresh: `max_age` is moot);
        the sim sets no leverage."""
        faults = self.faults
        now = self._now()
        observation = await self._run(
            lambda tx: transactions.observation(tx, account, faults, now), write=False
        )
        await self._latency()
        return observation

    async def lookup(
        self, client_id: str, evidence: Evidence | None = None
    ) -> VenueOrderState | None:
        """What the venue knows about `client_id` (None: it never received it). The sim's own
        file is the whole truth; only a request its evidence says was fenced (the `fence`
        fault) is proved never to land: NeverLanded."""
        state = await self._run(lambda tx: transactions.lookup(tx, client_id), write=False)
        await self._latency()
        if state is None and evidence is not None and evidence.get(FENCED) is True:
            raise NeverLanded(
                "fenced: the simulated venue refused the request before storing it (fault: "
                "fence) and never stores one late, so the order can never land"
            )
        return state

    async def fills(self, client_id: str) -> tuple[Fill, ...]:
        state = await self._run(lambda tx: transactions.lookup(tx, client_id), write=False)
        return () if state is None else state.fills

    async def account_state(self, account: str) -> AccountState:
        """The account's mode and open orders; its balance is its budget (the sim holds no
        money), available what the positions and open orders leave of it."""
        observation = await self.observe(account)
        balances: tuple[Balance, ...] = ()
        if account in self.funds:
            currency, total = self.funds[account]
            free = max(total - observed_exposure(observation), Decimal(0))
            balances = (Balance(currency, total, free),)
        return AccountState(
            venue=VENUE_NAME,
            account=account,
            world=WORLD,
            balances=balances,
            account_mode=observation.account_mode,
            margin_mode=None,
            open_orders=sum(1 for o in observation.open_orders if o.role == "order"),
            facts=(("simulated", "nothing reaches a real exchange", True),),
        )

    async def orders(self, account: str | None = None) -> list[VenueOrderState]:
        """Every order in submission order (children are rows of their own too)."""
        return await self._run(lambda tx: transactions.orders(tx, account), write=False)

    # -- writes ----------------------------------------------------------------------------
    async def submit(self, order: VenueOrder, record: RecordEvidence | None = None) -> Submission:
        """Place `order` once per client id; a repeat returns the stored order. `record`
        (the executor's) is awaited with the request's evidence before anything is written;
        tools that place orders by hand may leave it out."""
        if not isinstance(order, VenueOrder):
            raise TypeError("submit takes a VenueOrder")
        faults = self.faults
        if record is not None:
            evidence: dict[str, object] = {"venue": VENUE_NAME, "client_id": order.client_id}
            if faults.fence:
                evidence[FENCED] = True  # this request is refused before it is stored
            await record(order.client_id, evidence)
        if faults.timeout or faults.fence:
            await self._latency()
            raise VenueTimeout(order.client_id)
        now = self._now()
        submission = await self._run(
            lambda tx: transactions.submit(tx, order, faults, now), write=True
        )
        if self.after_commit is not None:
            self.after_commit(order.client_id)
        await self._latency()
        if faults.lose_response:
            raise VenueResponseLost(order.client_id)
        return submission

    async def cancel(self, client_id: str) -> VenueOrderState | None:
        """Cancel a working order; a terminal one is returned unchanged; None if unknown.

        Cancelling a parent leaves its protective children working (they protect
        what has filled); cancel them by their own client ids.
        """
        now = self._now()
        state = await self._run(lambda tx: transactions.cancel(tx, client_id, now), write=True)
        await self._latency()
        return state

    async def set_mark(self, instrument: str, price: Decimal) -> None:
        """Move the mark (tests, demo). Resting orders react on the next tick."""
        if require_decimal("price", price) <= 0:
            raise ValueError(f"mark price must be greater than zero, not {price}")
        await self._run(lambda tx: transactions.set_mark(tx, instrument, price), write=True)

    async def watch(self) -> Sequence[str]:
        """One matching round (`tick`): the client ids it filled, triggered or cancelled."""
        return [state.client_id for state in await self.tick()]

    async def tick(self) -> list[VenueOrderState]:
        """One matching round at the current venue time.

        Returns the orders it filled, triggered or cancelled, with their children."""
        now = self._now()
        faults = self.faults
        return await self._run(lambda tx: transactions.tick(tx, faults, now), write=True)

    async def advance(self, seconds: int = 1) -> list[VenueOrderState]:
        """Move venue time forward `seconds`, one tick per simulated second."""
        if not isinstance(seconds, int) or seconds < 0:
            raise ValueError("seconds must be a whole number >= 0")
        changed: dict[str, VenueOrderState] = {}
        for _ in range(seconds):
            self._offset += timedelta(seconds=1)
            for state in await self._run(
                partial(
                    transactions.step, offset=self._offset, faults=self.faults, now=self._now()
                ),
                write=True,
            ):
                changed[state.client_id] = state
        return list(changed.values())
