"""The simulated venue: the adapter the finance executor submits to and reconciles against.

SIMULATED: nothing here reaches a real exchange (docs/architecture.md §1, principle 7;
every order, listing and observation carries `simulated=True`).

State lives in the venue's own SQLite file (`venue_store`), so a restarted bot
reconciles against what the venue really did. Every answer is committed before it
is given; `lose_response` commits and then raises, which is exactly the ambiguous
case the reconciler resolves with `lookup(client_id)`.

Matching rules (one-way account mode, liquidity at the mark):

* A limit buy at or above the mark fills at once **at the mark** (taker fee); below
  the mark it rests at its limit (maker). Sells are symmetric.
* A market order fills at once at the mark, or with the `slippage_bps` fault at the
  mark moved that many basis points against the order and put on the tick (adversely).
  If that price is beyond `max_slippage_bps` from the mark, the order is rejected
  with the reason. Market orders never rest: an unfilled rest is cancelled.
* `Instrument.liquidity` caps what one taker order fills at once (None: unlimited).
  GTC: the rest of a limit rests; IOC: the rest is cancelled (status `cancelled`
  with `filled_qty > 0`); FOK: all now or nothing (`cancelled`, nothing filled);
  POST_ONLY: rejected if it would take, otherwise rests like GTC.
* `reduce_only` is rejected if it would open, increase or flip the position; a
  resting reduce-only order fills at most what is left to reduce, the rest is
  cancelled.
* Nothing is rounded: a price off the tick, a quantity off the lot or below the
  minimum is rejected with the reason (the executor's preflight reads tick, lot and
  minimum from `observe`).
* Over time, `tick()` (or `advance(seconds)`, one tick per simulated second) fills
  resting orders whose limit the mark has reached (buy: mark <= limit, sell: mark
  >= limit) at their limit as maker, the whole rest at once or, with the
  `partial_fill` fault, a fraction of the order's quantity per tick (at least one
  lot), so an order goes resting -> partially_filled -> filled.
* Protective stop-loss / take-profit become child orders `<client_id>:sl` /
  `<client_id>:tp` only once the parent has a fill: reduce-only stop-market orders
  on the other side, sized to the parent's filled quantity (and grown with later
  parent fills while untriggered), status `accepted` until the mark reaches their
  trigger on a tick; then they fill at the mark (taker) and cancel their sibling
  (one-cancels-other). A child that would trigger at once when placed is rejected
  with its own reason; the parent stands.
* Fees accrue per fill (rate x quantity x price, exact). With `fees_unknown` the
  venue reports no fee (`None`, never zero).

Statuses: `accepted` (acknowledged, not working yet: here only untriggered protective
children), `resting`, `partially_filled` (still working), `filled`, `rejected`
(never worked; `reason` says why), `cancelled` (`reason` says why; `filled_qty` may be
above zero when the rest was cancelled). A missing fee is `None`, never zero.

Faults (`Faults`, or `COUNTERSIGN_SIM_FAULTS="reject,timeout,lose_response,latency_ms=200"`)
apply to `submit`, except `latency_ms` (submit, lookup, observe, cancel),
`incomplete` (observe), `partial_fill` (tick) and `fees_unknown` (every fill).
If several are set, `timeout` wins over the others, and a duplicate client id is
answered with the stored order before `reject` is looked at.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal, Self, TypeVar

from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.venue_store import (
    AVERAGE,
    FillRow,
    Instrument,
    OrderRow,
    PositionRow,
    Txn,
    VenueStore,
    plain,
    require_decimal,
    text,
)

__all__ = [
    "DEFAULT_ACCOUNTS",
    "DEFAULT_INSTRUMENTS",
    "DEFAULT_VENUE_PATH",
    "FAULTS_ENV",
    "VENUE_NAME",
    "Capabilities",
    "Fault",
    "Faults",
    "FaultsError",
    "Fill",
    "Instrument",
    "Observation",
    "OpenOrder",
    "Position",
    "ProtectiveSpec",
    "SimVenue",
    "Submission",
    "UnknownAccount",
    "UnknownInstrument",
    "VenueClosed",
    "VenueError",
    "VenueOrder",
    "VenueOrderState",
    "VenueResponseLost",
    "VenueTimeout",
    "render_orders",
    "venue_orders_text",
]

Side = Literal["buy", "sell"]
OrderType = Literal["limit", "market"]
TimeInForce = Literal["GTC", "IOC", "FOK", "POST_ONLY"]
OrderStatus = Literal["accepted", "resting", "partially_filled", "filled", "rejected", "cancelled"]
Role = Literal["order", "stop_loss", "take_profit"]
Liquidity = Literal["maker", "taker"]
Clock = Callable[[], datetime]
T = TypeVar("T")

VENUE_NAME: Final = "sim"
ACCOUNT_MODE: Final = "one_way"
FAULTS_ENV: Final = "COUNTERSIGN_SIM_FAULTS"
DEFAULT_VENUE_PATH: Final = Path("var/sim-venue.db")
DEFAULT_ACCOUNTS: Final = ("sim-main",)
DEFAULT_INSTRUMENTS: Final = (
    Instrument("BTC-PERP", Decimal("0.5"), Decimal("0.001"), Decimal("0.001"), Decimal("60000")),
    Instrument("ETH-PERP", Decimal("0.05"), Decimal("0.01"), Decimal("0.01"), Decimal("3000")),
)
SIDES: Final = ("buy", "sell")
ORDER_TYPES: Final = ("limit", "market")
TIME_IN_FORCE: Final = ("GTC", "IOC", "FOK", "POST_ONLY")
WORKING: Final = ("accepted", "resting", "partially_filled")
TERMINAL: Final = ("filled", "rejected", "cancelled")
CHILD_SUFFIX: Final = {"stop_loss": ":sl", "take_profit": ":tp"}
CLIENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,95}$")
BPS: Final = Decimal(10000)


# -- errors ----------------------------------------------------------------------------------
class VenueError(Exception):
    """Base of the venue's errors."""


class VenueTimeout(VenueError):
    """The venue did not answer. With the simulated `timeout` fault nothing was stored;
    an executor cannot know that, so it treats this as unknown and reconciles by lookup."""

    def __init__(self, client_id: str) -> None:
        super().__init__(f"simulated venue timed out on {client_id!r} (fault: timeout)")
        self.client_id = client_id


class VenueResponseLost(VenueError):
    """The venue acted on the request but its answer was lost: reconcile by lookup."""

    def __init__(self, client_id: str) -> None:
        super().__init__(
            f"simulated venue response for {client_id!r} was lost after it was processed "
            "(fault: lose_response); reconcile with lookup(client_id)"
        )
        self.client_id = client_id


class VenueClosed(VenueError):
    def __init__(self) -> None:
        super().__init__("the simulated venue is closed")


class UnknownAccount(VenueError):
    def __init__(self, account: str, known: Sequence[str]) -> None:
        super().__init__(
            f"no account {account!r} on venue {VENUE_NAME!r} (known: {', '.join(known) or 'none'})"
        )
        self.account = account


class UnknownInstrument(VenueError):
    def __init__(self, instrument: str, known: Sequence[str]) -> None:
        super().__init__(
            f"no instrument {instrument!r} on venue {VENUE_NAME!r} "
            f"(known: {', '.join(known) or 'none'})"
        )
        self.instrument = instrument


class FaultsError(ValueError):
    """A fault specification that cannot be parsed; the message names the bad item."""


# -- faults ----------------------------------------------------------------------------------
Fault = Literal[
    "reject",
    "timeout",
    "lose_response",
    "latency_ms",
    "partial_fill",
    "slippage_bps",
    "incomplete",
    "fees_unknown",
]
_FLAG_FAULTS: Final = ("reject", "timeout", "lose_response", "incomplete", "fees_unknown")
_VALUE_FAULTS: Final = {
    "latency_ms": "latency_ms=N (whole milliseconds, 0..600000)",
    "partial_fill": "partial_fill=F (fraction of the order per tick, 0 < F <= 1)",
    "slippage_bps": "slippage_bps=B (basis points, >= 0)",
}
_FAULT_HELP: Final = ", ".join((*_FLAG_FAULTS, *_VALUE_FAULTS.values()))


@dataclass(frozen=True)
class Faults:
    """Faults injected into the simulated venue.

    reject         submit stores the order as rejected ("simulated fault: reject")
    timeout        submit raises VenueTimeout before anything is stored
    lose_response  submit stores (and matches) the order, then raises VenueResponseLost
    latency_ms     submit/lookup/observe/cancel sleep this long after the work, before answering
    partial_fill   each tick fills this fraction of a crossed resting order (>= 1 lot)
    slippage_bps   market orders fill this many bps worse than the mark (on the tick)
    incomplete     observe() answers complete=False and leaves out open orders
    fees_unknown   fills record no fee: fees are reported as None (unknown), never 0
    """

    reject: bool = False
    timeout: bool = False
    lose_response: bool = False
    latency_ms: int = 0
    partial_fill: Decimal | None = None
    slippage_bps: Decimal | None = None
    incomplete: bool = False
    fees_unknown: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.latency_ms <= 600_000:
            raise FaultsError(f"latency_ms={self.latency_ms}: use {_VALUE_FAULTS['latency_ms']}")
        if self.partial_fill is not None:
            frac = require_decimal("partial_fill", self.partial_fill)
            if not 0 < frac <= 1:
                raise FaultsError(f"partial_fill={frac}: use {_VALUE_FAULTS['partial_fill']}")
        if self.slippage_bps is not None:
            bps = require_decimal("slippage_bps", self.slippage_bps)
            if bps < 0:
                raise FaultsError(f"slippage_bps={bps}: use {_VALUE_FAULTS['slippage_bps']}")

    @classmethod
    def parse(cls, spec: str) -> Faults:
        """Parse `"reject,timeout,lose_response,latency_ms=200"`; blank means no faults."""
        if not spec.strip():
            return cls()
        values: dict[str, Any] = {}
        for number, raw in enumerate(spec.split(","), start=1):
            item = raw.strip()
            if not item:
                raise FaultsError(
                    f"fault item {number} is empty in {spec!r}; separate faults with single commas"
                )
            name, has_value, value = (part.strip() for part in item.partition("="))
            if name in values:
                raise FaultsError(f"fault item {item!r} repeats {name!r}; give each fault once")
            if name in _FLAG_FAULTS:
                if has_value:
                    raise FaultsError(f"fault item {item!r}: {name!r} takes no value; write {name}")
                values[name] = True
            elif name in _VALUE_FAULTS:
                if not has_value or not value:
                    raise FaultsError(
                        f"fault item {item!r}: {name!r} needs a value; write {_VALUE_FAULTS[name]}"
                    )
                values[name] = _fault_value(item, name, value)
            else:
                raise FaultsError(f"fault item {item!r} is unknown; valid items: {_FAULT_HELP}")
        try:
            return cls(**values)
        except (FaultsError, TypeError, ValueError) as exc:
            raise FaultsError(f"faults {spec!r}: {exc}") from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str], default: str = "") -> Faults:
        """`COUNTERSIGN_SIM_FAULTS` if set (even empty: no faults), else `default` (config)."""
        return cls.parse(environ.get(FAULTS_ENV, default))

    def __str__(self) -> str:
        items: list[str] = [name for name in _FLAG_FAULTS if getattr(self, name)]
        if self.latency_ms:
            items.append(f"latency_ms={self.latency_ms}")
        if self.partial_fill is not None:
            items.append(f"partial_fill={text(self.partial_fill)}")
        if self.slippage_bps is not None:
            items.append(f"slippage_bps={text(self.slippage_bps)}")
        return ",".join(items)

    @property
    def active(self) -> bool:
        return bool(str(self))


def _fault_value(item: str, name: str, value: str) -> int | Decimal:
    if name == "latency_ms":
        if not value.isdecimal() or not value.isascii():
            raise FaultsError(f"fault item {item!r}: write {_VALUE_FAULTS[name]}")
        return int(value)
    if not re.fullmatch(r"(0|[1-9][0-9]*)(\.[0-9]+)?", value):
        raise FaultsError(f"fault item {item!r}: write {_VALUE_FAULTS[name]}")
    try:
        return Decimal(value)
    except InvalidOperation:  # pragma: no cover - the pattern admits only plain decimals
        raise FaultsError(f"fault item {item!r}: write {_VALUE_FAULTS[name]}") from None


# -- orders in and out -----------------------------------------------------------------------
@dataclass(frozen=True)
class ProtectiveSpec:
    """Trigger prices of the protective children; at least one."""

    stop_loss: Decimal | None = None
    take_profit: Decimal | None = None

    def __post_init__(self) -> None:
        if self.stop_loss is None and self.take_profit is None:
            raise ValueError("protective needs stop_loss, take_profit or both")
        for name in ("stop_loss", "take_profit"):
            value = getattr(self, name)
            if value is not None:
                require_decimal(f"protective.{name}", value)


@dataclass(frozen=True)
class VenueOrder:
    """One order as the executor submits it. `client_id` is its idempotency key.

    Decimals must be `Decimal` (a float raises TypeError here, before anything is
    sent); whether the values are acceptable (tick, lot, minimum, sides...) is the
    venue's answer: a rejected order with the reason.
    """

    client_id: str
    account: str
    instrument: str
    side: Side
    quantity: Decimal
    order_type: OrderType
    time_in_force: TimeInForce
    leverage: Decimal
    limit_price: Decimal | None = None
    max_slippage_bps: Decimal | None = None
    reduce_only: bool = False
    protective: ProtectiveSpec | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.client_id, str) or not CLIENT_ID.fullmatch(self.client_id):
            raise ValueError(
                f"client_id {self.client_id!r} must match {CLIENT_ID.pattern} "
                "(letters, digits, _ . : -, at most 96)"
            )
        if self.client_id.endswith(tuple(CHILD_SUFFIX.values())):
            raise ValueError(
                f"client_id {self.client_id!r} ends with a suffix reserved for protective "
                "children (:sl, :tp); choose another"
            )
        require_decimal("quantity", self.quantity)
        require_decimal("leverage", self.leverage)
        for name in ("limit_price", "max_slippage_bps"):
            if getattr(self, name) is not None:
                require_decimal(name, getattr(self, name))
        if not isinstance(self.reduce_only, bool):
            raise TypeError(f"reduce_only must be a bool, not {type(self.reduce_only).__name__}")
        if self.protective is not None and not isinstance(self.protective, ProtectiveSpec):
            raise TypeError("protective must be a ProtectiveSpec or None")

    @classmethod
    def from_payload(cls, client_id: str, payload: FinanceOrderV1) -> VenueOrder:
        """The order exactly as confirmed: decimal strings become Decimals, nothing else."""

        def opt(value: str | None) -> Decimal | None:
            return None if value is None else Decimal(value)

        protective = None
        if payload.protective is not None:
            protective = ProtectiveSpec(
                stop_loss=opt(payload.protective.stop_loss),
                take_profit=opt(payload.protective.take_profit),
            )
        return cls(
            client_id=client_id,
            account=payload.account,
            instrument=payload.instrument,
            side=payload.side,
            quantity=Decimal(payload.quantity),
            order_type=payload.order_type,
            time_in_force=payload.time_in_force,
            leverage=Decimal(payload.leverage),
            limit_price=opt(payload.limit_price),
            max_slippage_bps=opt(payload.max_slippage_bps),
            reduce_only=payload.reduce_only,
            protective=protective,
        )


@dataclass(frozen=True)
class Fill:
    fill_id: int
    quantity: Decimal
    price: Decimal
    fee: Decimal | None  # None: the venue reported no fee (unknown, not zero)
    fee_currency: str
    liquidity: Liquidity
    at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "fill_id": self.fill_id,
            "quantity": text(self.quantity),
            "price": text(self.price),
            "fee": None if self.fee is None else text(self.fee),
            "fee_currency": self.fee_currency,
            "liquidity": self.liquidity,
            "at": self.at.isoformat(),
        }


@dataclass(frozen=True)
class VenueOrderState:
    """What the venue knows about one client id: the answer to `lookup`."""

    client_id: str
    role: Role
    parent_client_id: str | None
    account: str
    instrument: str
    side: Side
    order_type: OrderType
    time_in_force: TimeInForce
    reduce_only: bool
    leverage: Decimal
    quantity: Decimal
    limit_price: Decimal | None
    max_slippage_bps: Decimal | None
    trigger_price: Decimal | None  # protective children: the stop / take-profit price
    status: OrderStatus
    filled_qty: Decimal
    remaining_qty: Decimal  # still working on the venue (0 once terminal)
    avg_price: Decimal | None  # None until the first fill
    fees: Decimal | None  # sum of fill fees; None if any fill's fee is unknown
    fee_currency: str
    fills: tuple[Fill, ...]
    reason: str | None  # why it was rejected or cancelled
    submit_count: int
    created_at: datetime
    updated_at: datetime
    children: tuple[VenueOrderState, ...] = ()
    simulated: bool = True

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def child(self, role: Role) -> VenueOrderState | None:
        return next((c for c in self.children if c.role == role), None)

    def to_json(self, *, children: bool = True) -> dict[str, Any]:
        def opt(value: Decimal | None) -> str | None:
            return None if value is None else text(value)

        data: dict[str, Any] = {
            "client_id": self.client_id,
            "role": self.role,
            "parent_client_id": self.parent_client_id,
            "account": self.account,
            "instrument": self.instrument,
            "side": self.side,
            "order_type": self.order_type,
            "time_in_force": self.time_in_force,
            "reduce_only": self.reduce_only,
            "leverage": text(self.leverage),
            "quantity": text(self.quantity),
            "limit_price": opt(self.limit_price),
            "max_slippage_bps": opt(self.max_slippage_bps),
            "trigger_price": opt(self.trigger_price),
            "status": self.status,
            "filled_qty": text(self.filled_qty),
            "remaining_qty": text(self.remaining_qty),
            "avg_price": opt(self.avg_price),
            "fees": opt(self.fees),
            "fee_currency": self.fee_currency,
            "fills": [f.to_json() for f in self.fills],
            "reason": self.reason,
            "submit_count": self.submit_count,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "simulated": self.simulated,
        }
        if children:
            data["children"] = [c.to_json() for c in self.children]
        return data


@dataclass(frozen=True)
class Submission:
    """The answer to `submit`.

    created: False when the client id already existed: nothing new was placed and
             `order` is the stored order (its submit_count counts this submit too).
    matches: whether the submitted terms equal the stored ones (False is an executor
             bug: one client id was used for two different orders).
    """

    order: VenueOrderState
    created: bool
    matches: bool = True


@dataclass(frozen=True)
class Position:
    instrument: str
    qty: Decimal  # signed: > 0 long, < 0 short
    avg_price: Decimal


@dataclass(frozen=True)
class OpenOrder:
    client_id: str
    instrument: str
    side: Side
    remaining_qty: Decimal
    price: Decimal | None  # limit price; the trigger price for protective children
    reduce_only: bool
    role: Role
    status: OrderStatus


@dataclass(frozen=True)
class Observation:
    """A fresh snapshot of one account, for preflight and the exposure computation."""

    venue: str
    account: str
    observed_at: datetime
    account_mode: str
    instruments: Mapping[str, Instrument]
    positions: Mapping[str, Position]  # non-zero positions only
    open_orders: tuple[OpenOrder, ...]
    complete: bool  # False: part of the account could not be read; do not rely on it
    simulated: bool = True


@dataclass(frozen=True)
class Capabilities:
    """What the venue could ever execute: read before a card is offered."""

    venue: str
    simulated: bool
    accounts: frozenset[str]
    account_modes: frozenset[str]
    instruments: frozenset[str]
    order_types: frozenset[str]
    time_in_force: frozenset[str]
    protective: bool = True
    # each account's mode at the venue; an account whose mode is not in account_modes
    # could never take an order through this adapter
    modes_by_account: Mapping[str, str] = field(default_factory=dict)


# -- the venue -------------------------------------------------------------------------------
def _utc_now() -> datetime:
    return datetime.now(UTC)


class SimVenue:
    """The simulated venue. Open with `await SimVenue.open(path)`; all calls are async."""

    name: Final = VENUE_NAME
    simulated: Final = True

    def __init__(self, store: VenueStore, faults: Faults, clock: Clock) -> None:
        self._store: VenueStore | None = store
        self.faults = faults  # replaceable at run time (tests, demo)
        self._clock = clock
        self._offset = timedelta(0)
        # called with the client id once a submission is committed, before it is answered
        # (the crash suite's "after dispatch, before the response" point)
        self.after_commit: Callable[[str], None] | None = None

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

            def seed(tx: Txn) -> timedelta:
                if instruments is not None:
                    for inst in instruments:
                        tx.upsert_instrument(inst)
                elif not tx.instruments():
                    for inst in DEFAULT_INSTRUMENTS:
                        tx.upsert_instrument(inst)
                if accounts is not None:
                    for account in accounts:
                        tx.add_account(account, ACCOUNT_MODE)
                elif not tx.accounts():
                    for account in DEFAULT_ACCOUNTS:
                        tx.add_account(account, ACCOUNT_MODE)
                return timedelta(seconds=int(tx.meta("clock_offset_s") or 0))

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
        def read(tx: Txn) -> Capabilities:
            return Capabilities(
                venue=VENUE_NAME,
                simulated=True,
                accounts=frozenset(tx.accounts()),
                account_modes=frozenset({ACCOUNT_MODE}),
                modes_by_account={name: tx.account_mode(name) or "" for name in tx.accounts()},
                instruments=frozenset(tx.instruments()),
                order_types=frozenset(ORDER_TYPES),
                time_in_force=frozenset(TIME_IN_FORCE),
            )

        return await self._run(read, write=False)

    async def observe(self, account: str) -> Observation:
        """A fresh snapshot of `account`; raises UnknownAccount for an account not here."""
        faults = self.faults
        now = self._now()

        def read(tx: Txn) -> Observation:
            mode = tx.account_mode(account)
            if mode is None:
                raise UnknownAccount(account, tx.accounts())
            positions = {
                p.instrument: Position(p.instrument, p.qty, p.avg_price)
                for p in tx.positions(account)
                if p.qty != 0 and p.avg_price is not None
            }
            open_orders: tuple[OpenOrder, ...] = ()
            if not faults.incomplete:
                open_orders = tuple(
                    OpenOrder(
                        client_id=o.client_id,
                        instrument=o.instrument,
                        side=_side(o.side),
                        remaining_qty=o.remaining,
                        price=o.trigger_price if o.role != "order" else o.limit_price,
                        reduce_only=o.reduce_only,
                        role=_role(o.role),
                        status=_status(o.status),
                    )
                    for o in tx.orders(account=account, statuses=WORKING)
                )
            return Observation(
                venue=VENUE_NAME,
                account=account,
                observed_at=now,
                account_mode=mode,
                instruments=tx.instruments(),
                positions=positions,
                open_orders=open_orders,
                complete=not faults.incomplete,
            )

        observation = await self._run(read, write=False)
        await self._latency()
        return observation

    async def lookup(self, client_id: str) -> VenueOrderState | None:
        """What the venue knows about `client_id` (None: it never received it)."""

        def read(tx: Txn) -> VenueOrderState | None:
            row = tx.order(client_id)
            return None if row is None else _state(tx, row)

        state = await self._run(read, write=False)
        await self._latency()
        return state

    async def orders(self, account: str | None = None) -> list[VenueOrderState]:
        """Every order in submission order (children are rows of their own too)."""

        def read(tx: Txn) -> list[VenueOrderState]:
            return [_state(tx, row) for row in tx.orders(account=account)]

        return await self._run(read, write=False)

    # -- writes ----------------------------------------------------------------------------
    async def submit(self, order: VenueOrder) -> Submission:
        """Place `order` once per client id; a repeat returns the stored order."""
        if not isinstance(order, VenueOrder):
            raise TypeError("submit takes a VenueOrder")
        faults = self.faults
        if faults.timeout:
            await self._latency()
            raise VenueTimeout(order.client_id)
        now = self._now()
        submission = await self._run(lambda tx: _submit(tx, order, faults, now), write=True)
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

        def write(tx: Txn) -> VenueOrderState | None:
            row = tx.order(client_id)
            if row is None:
                return None
            if row.status in WORKING:
                _finish(row, "cancelled", "cancelled on request", now)
                tx.save_order(row)
            return _state(tx, row)

        state = await self._run(write, write=True)
        await self._latency()
        return state

    async def set_mark(self, instrument: str, price: Decimal) -> None:
        """Move the mark (tests, demo). Resting orders react on the next tick."""
        if require_decimal("price", price) <= 0:
            raise ValueError(f"mark price must be greater than zero, not {price}")

        def write(tx: Txn) -> None:
            if not tx.set_mark(instrument, price):
                raise UnknownInstrument(instrument, list(tx.instruments()))

        await self._run(write, write=True)

    async def tick(self) -> list[VenueOrderState]:
        """One matching round at the current venue time.

        Returns the orders it filled, triggered or cancelled, with their children."""
        now = self._now()
        faults = self.faults
        return await self._run(lambda tx: _tick(tx, faults, now), write=True)

    async def advance(self, seconds: int = 1) -> list[VenueOrderState]:
        """Move venue time forward `seconds`, one tick per simulated second."""
        if not isinstance(seconds, int) or seconds < 0:
            raise ValueError("seconds must be a whole number >= 0")
        changed: dict[str, VenueOrderState] = {}
        for _ in range(seconds):
            self._offset += timedelta(seconds=1)
            for state in await self._run(
                partial(_step, offset=self._offset, faults=self.faults, now=self._now()),
                write=True,
            ):
                changed[state.client_id] = state
        return list(changed.values())


# -- matching (runs inside one write transaction, exact decimal context) ---------------------
def _step(tx: Txn, *, offset: timedelta, faults: Faults, now: datetime) -> list[VenueOrderState]:
    tx.set_meta("clock_offset_s", str(int(offset.total_seconds())))
    return _tick(tx, faults, now)


def _submit(tx: Txn, order: VenueOrder, faults: Faults, now: datetime) -> Submission:
    stamp = now.isoformat()
    existing = tx.order(order.client_id)
    if existing is not None:
        existing.submit_count += 1
        existing.updated_at = stamp
        tx.save_order(existing)
        return Submission(_state(tx, existing), created=False, matches=_same_terms(existing, order))
    protective = order.protective
    row = OrderRow(
        client_id=order.client_id,
        parent_client_id=None,
        role="order",
        account=order.account,
        instrument=order.instrument,
        side=order.side,
        quantity=order.quantity,
        order_type=order.order_type,
        limit_price=order.limit_price,
        max_slippage_bps=order.max_slippage_bps,
        time_in_force=order.time_in_force,
        reduce_only=order.reduce_only,
        leverage=order.leverage,
        trigger_price=None,
        stop_loss=protective.stop_loss if protective else None,
        take_profit=protective.take_profit if protective else None,
        status="accepted",
        filled_qty=Decimal(0),
        reason=None,
        submit_count=1,
        created_at=stamp,
        updated_at=stamp,
    )
    inst = tx.instrument(order.instrument)
    reason = "simulated fault: reject" if faults.reject else _refusal(tx, order, inst, faults)
    if reason is not None or inst is None:
        row.status, row.reason = "rejected", reason or "unknown instrument"
        tx.insert_order(row)
        return Submission(_state(tx, row), created=True)
    tx.insert_order(row)
    _match_new(tx, row, inst, faults, now)
    return Submission(_state(tx, row), created=True)


def _refusal(tx: Txn, o: VenueOrder, inst: Instrument | None, faults: Faults) -> str | None:
    """Why the venue rejects `o`, or None. Nothing is ever rounded to make it fit."""
    accounts = tx.accounts()
    if o.account not in accounts:
        return f"unknown account {o.account!r} (known: {', '.join(accounts) or 'none'})"
    if inst is None:
        known = ", ".join(tx.instruments()) or "none"
        return f"unknown instrument {o.instrument!r} (known: {known})"
    if o.side not in SIDES:
        return f"side {o.side!r} is not one of {', '.join(SIDES)}"
    if o.order_type not in ORDER_TYPES:
        return f"order_type {o.order_type!r} is not one of {', '.join(ORDER_TYPES)}"
    if o.time_in_force not in TIME_IN_FORCE:
        return f"time_in_force {o.time_in_force!r} is not one of {', '.join(TIME_IN_FORCE)}"
    if o.quantity <= 0:
        return f"quantity {text(o.quantity)} must be greater than zero"
    if o.quantity % inst.lot != 0:
        return (
            f"quantity {text(o.quantity)} is not a multiple of the lot {text(inst.lot)} "
            f"for {inst.name} (quantities are never rounded)"
        )
    if o.quantity < inst.min_qty:
        return (
            f"quantity {text(o.quantity)} is below the minimum {text(inst.min_qty)} "
            f"for {inst.name} (quantities are never rounded up)"
        )
    if o.leverage <= 0 or o.leverage > inst.max_leverage:
        return (
            f"leverage {text(o.leverage)} is outside 0 < leverage <= "
            f"{text(inst.max_leverage)} for {inst.name}"
        )
    if o.order_type == "limit":
        if o.limit_price is None:
            return "a limit order needs limit_price"
        if o.max_slippage_bps is not None:
            return "max_slippage_bps is for market orders"
        if (bad := _off_tick("limit_price", o.limit_price, inst)) is not None:
            return bad
    else:
        if o.max_slippage_bps is None:
            return "a market order needs max_slippage_bps (its slippage bound)"
        if o.max_slippage_bps < 0:
            return f"max_slippage_bps {text(o.max_slippage_bps)} must not be negative"
        if o.limit_price is not None:
            return "limit_price is for limit orders"
        if o.time_in_force == "POST_ONLY":
            return "POST_ONLY needs a limit order"
    if o.protective is not None:
        for name in ("stop_loss", "take_profit"):
            price = getattr(o.protective, name)
            if price is not None and (bad := _off_tick(f"protective.{name}", price, inst)):
                return bad
    if o.reduce_only:
        pos = tx.position(o.account, o.instrument).qty
        closable = _closable(pos, o.side)
        if o.quantity > closable:
            return (
                f"reduce-only {o.side} {text(o.quantity)} would "
                f"{'open or increase' if closable == 0 else 'flip'} the position "
                f"({text(pos)} {inst.name}); at most {text(closable)} can be reduced"
            )
    if o.order_type == "limit" and o.time_in_force == "POST_ONLY":
        assert o.limit_price is not None
        if _marketable(o.side, o.limit_price, inst.mark):
            return (
                f"post-only {o.side} at {text(o.limit_price)} would take liquidity "
                f"at the mark {text(inst.mark)}"
            )
    if o.order_type == "market":
        assert o.max_slippage_bps is not None
        price = _market_price(o.side, inst, faults)
        bound = inst.mark * (BPS + o.max_slippage_bps) / BPS
        if o.side == "sell":
            bound = inst.mark * (BPS - o.max_slippage_bps) / BPS
        if (o.side == "buy" and price > bound) or (o.side == "sell" and price < bound):
            return (
                f"market {o.side} would fill at {text(price)}, beyond max_slippage_bps "
                f"{text(o.max_slippage_bps)} from the mark {text(inst.mark)} "
                f"(bound {text(bound)})"
            )
    return None


def _off_tick(name: str, price: Decimal, inst: Instrument) -> str | None:
    if price <= 0:
        return f"{name} {text(price)} must be greater than zero"
    if price % inst.tick != 0:
        return (
            f"{name} {text(price)} is not a multiple of the tick {text(inst.tick)} "
            f"for {inst.name} (prices are never rounded)"
        )
    return None


def _marketable(side: str, limit: Decimal, mark: Decimal) -> bool:
    return limit >= mark if side == "buy" else limit <= mark


def _market_price(side: str, inst: Instrument, faults: Faults) -> Decimal:
    """The mark, or with `slippage_bps` the mark moved against the order, on the tick."""
    if not faults.slippage_bps:
        return inst.mark
    sign = 1 if side == "buy" else -1
    raw = inst.mark * (BPS + sign * faults.slippage_bps) / BPS
    # Onto the tick, against the order: up for a buy, down for a sell. This is a fill
    # price the venue chooses, not the operator's order, so it may be put on the tick.
    ticks, rest = divmod(raw, inst.tick)
    if side == "buy" and rest != 0:
        ticks += 1
    return ticks * inst.tick


def _closable(position: Decimal, side: str) -> Decimal:
    """How much a reduce-only order on `side` may fill without increasing the position."""
    if side == "buy":
        return -position if position < 0 else Decimal(0)
    return position if position > 0 else Decimal(0)


def _match_new(tx: Txn, row: OrderRow, inst: Instrument, faults: Faults, now: datetime) -> None:
    if row.order_type == "market":
        price, marketable = _market_price(row.side, inst, faults), True
    else:
        assert row.limit_price is not None
        price, marketable = inst.mark, _marketable(row.side, row.limit_price, inst.mark)
    tif = row.time_in_force
    if not marketable:
        if tif in ("GTC", "POST_ONLY"):
            row.status = "resting"
            tx.save_order(row)
        else:
            assert row.limit_price is not None
            _finish(
                row,
                "cancelled",
                f"{tif}: limit {text(row.limit_price)} does not reach the mark "
                f"{text(inst.mark)}; nothing filled",
                now,
            )
            tx.save_order(row)
        return
    available = row.quantity if inst.liquidity is None else min(row.quantity, inst.liquidity)
    if tif == "FOK" and available < row.quantity:
        _finish(
            row,
            "cancelled",
            f"FOK: only {text(available)} of {text(row.quantity)} fillable now; nothing filled",
            now,
        )
        tx.save_order(row)
        return
    _fill(tx, row, inst, available, price, "taker", faults, now)
    if row.remaining > 0 and (row.order_type == "market" or tif == "IOC"):
        _finish(
            row,
            "cancelled",
            f"{'market' if row.order_type == 'market' else 'IOC'}: remaining "
            f"{text(row.remaining)} cancelled (only {text(available)} available at the mark)",
            now,
        )
        tx.save_order(row)


def _finish(row: OrderRow, status: str, reason: str | None, now: datetime) -> None:
    row.status = status
    row.reason = reason
    row.updated_at = now.isoformat()


def _fill(
    tx: Txn,
    row: OrderRow,
    inst: Instrument,
    qty: Decimal,
    price: Decimal,
    liquidity: Liquidity,
    faults: Faults,
    now: datetime,
) -> None:
    rate = inst.maker_fee_rate if liquidity == "maker" else inst.taker_fee_rate
    fee = None if faults.fees_unknown else plain(qty * price * rate)
    tx.add_fill(row.client_id, qty, price, fee, inst.fee_currency, liquidity, now.isoformat())
    row.filled_qty += qty
    row.status = "filled" if row.filled_qty == row.quantity else "partially_filled"
    row.updated_at = now.isoformat()
    tx.save_order(row)
    pos = tx.position(row.account, row.instrument)
    pos.qty, pos.avg_price = _apply(pos, row.side, qty, price)
    tx.save_position(pos)
    if row.role == "order":
        _sync_children(tx, row, inst, now)


def _apply(
    pos: PositionRow, side: str, qty: Decimal, price: Decimal
) -> tuple[Decimal, Decimal | None]:
    """One-way position after a fill: (signed qty, average entry price)."""
    signed = qty if side == "buy" else -qty
    new = pos.qty + signed
    if new == 0:
        return new, None
    if pos.qty == 0 or (pos.qty > 0) == (signed > 0):  # opening or increasing
        held = abs(pos.qty) * (pos.avg_price or Decimal(0))
        return new, plain(AVERAGE.divide(held + qty * price, abs(new)))
    if (pos.qty > 0) == (new > 0):  # reducing: the entry price stays
        return new, pos.avg_price
    return new, price  # flipped: the rest opened at this fill's price


def _sync_children(tx: Txn, parent: OrderRow, inst: Instrument, now: datetime) -> None:
    """Place (after the first fill) or grow the protective children of `parent`."""
    if parent.filled_qty <= 0:
        return
    for role, trigger in (("stop_loss", parent.stop_loss), ("take_profit", parent.take_profit)):
        if trigger is None:
            continue
        client_id = parent.client_id + CHILD_SUFFIX[role]
        child = tx.order(client_id)
        if child is not None:
            if child.status == "accepted" and child.quantity != parent.filled_qty:
                child.quantity = parent.filled_qty
                child.updated_at = now.isoformat()
                tx.save_order(child)
            continue
        side = "sell" if parent.side == "buy" else "buy"
        reason = _child_refusal(role, side, trigger, inst.mark)
        stamp = now.isoformat()
        tx.insert_order(
            OrderRow(
                client_id=client_id,
                parent_client_id=parent.client_id,
                role=role,
                account=parent.account,
                instrument=parent.instrument,
                side=side,
                quantity=parent.filled_qty,
                order_type="market",
                limit_price=None,
                max_slippage_bps=None,
                time_in_force="GTC",
                reduce_only=True,
                leverage=parent.leverage,
                trigger_price=trigger,
                stop_loss=None,
                take_profit=None,
                status="rejected" if reason else "accepted",
                filled_qty=Decimal(0),
                reason=reason,
                submit_count=1,
                created_at=stamp,
                updated_at=stamp,
            )
        )


def _child_refusal(role: str, side: str, trigger: Decimal, mark: Decimal) -> str | None:
    if _triggered(role, side, trigger, mark):
        return (
            f"{role} {text(trigger)} would trigger at once: the mark is {text(mark)} "
            f"({'above' if (role == 'take_profit') == (side == 'sell') else 'below'} "
            "the mark is needed)"
        )
    return None


def _triggered(role: str, side: str, trigger: Decimal, mark: Decimal) -> bool:
    """A sell child protects a long: stop below, take-profit above (buy: the reverse)."""
    falls_to = (role == "stop_loss") == (side == "sell")
    return mark <= trigger if falls_to else mark >= trigger


def _tick(tx: Txn, faults: Faults, now: datetime) -> list[VenueOrderState]:
    instruments = tx.instruments()
    changed: dict[str, OrderRow] = {}
    # 1. protective children whose trigger the mark has reached
    for listed in tx.orders(statuses=("accepted",), roles=("stop_loss", "take_profit")):
        child = tx.order(listed.client_id)
        if child is None or child.status != "accepted" or child.trigger_price is None:
            continue
        inst = instruments[child.instrument]
        if not _triggered(child.role, child.side, child.trigger_price, inst.mark):
            continue
        closable = _closable(tx.position(child.account, child.instrument).qty, child.side)
        qty = min(child.remaining, closable)
        if qty > 0:
            _fill(tx, child, inst, qty, inst.mark, "taker", faults, now)
        if child.remaining > 0:
            left = "nothing" if qty == 0 else f"only {text(qty)}"
            _finish(
                child,
                "cancelled",
                f"triggered at {text(inst.mark)}; reduce-only: {left} was left to reduce",
                now,
            )
            tx.save_order(child)
        changed[child.client_id] = child
        for sibling in tx.children(child.parent_client_id or ""):
            if sibling.client_id != child.client_id and sibling.status == "accepted":
                _finish(
                    sibling,
                    "cancelled",
                    f"one-cancels-other: {child.client_id} triggered at {text(inst.mark)}",
                    now,
                )
                tx.save_order(sibling)
                changed[sibling.client_id] = sibling
    # 2. resting orders whose limit the mark has reached
    for listed in tx.orders(statuses=("resting", "partially_filled"), roles=("order",)):
        row = tx.order(listed.client_id)
        if row is None or row.status not in ("resting", "partially_filled"):
            continue
        assert row.limit_price is not None
        inst = instruments[row.instrument]
        if not _marketable(row.side, row.limit_price, inst.mark):
            continue
        chunk = row.remaining
        if faults.partial_fill is not None:
            part = (row.quantity * faults.partial_fill // inst.lot) * inst.lot
            chunk = min(max(part, inst.lot), row.remaining)
        capped = False
        if row.reduce_only:
            closable = _closable(tx.position(row.account, row.instrument).qty, row.side)
            if chunk > closable:
                chunk, capped = closable, True
        if chunk > 0:
            _fill(tx, row, inst, chunk, row.limit_price, "maker", faults, now)
        if capped and row.remaining > 0:
            _finish(
                row,
                "cancelled",
                f"reduce-only: remaining {text(row.remaining)} cancelled, "
                "the position has nothing more to reduce",
                now,
            )
            tx.save_order(row)
        changed[row.client_id] = row
    # Children placed or grown by these fills changed too.
    for client_id in list(changed):
        for child in tx.children(client_id):
            changed.setdefault(child.client_id, child)
    return [_state(tx, tx.order(cid) or row) for cid, row in changed.items()]


def _same_terms(row: OrderRow, o: VenueOrder) -> bool:
    protective = o.protective
    return (
        row.account == o.account
        and row.instrument == o.instrument
        and row.side == o.side
        and row.quantity == o.quantity
        and row.order_type == o.order_type
        and row.limit_price == o.limit_price
        and row.max_slippage_bps == o.max_slippage_bps
        and row.time_in_force == o.time_in_force
        and row.reduce_only == o.reduce_only
        and row.leverage == o.leverage
        and row.stop_loss == (protective.stop_loss if protective else None)
        and row.take_profit == (protective.take_profit if protective else None)
    )


def _side(value: str) -> Side:
    assert value in SIDES
    return "buy" if value == "buy" else "sell"


def _role(value: str) -> Role:
    assert value in ("order", "stop_loss", "take_profit")
    return value  # type: ignore[return-value]


def _status(value: str) -> OrderStatus:
    assert value in (*WORKING, *TERMINAL)
    return value  # type: ignore[return-value]


def _state(tx: Txn, row: OrderRow) -> VenueOrderState:
    kids = tx.children(row.client_id) if row.role == "order" else []
    fills_by_order = tx.fills([row.client_id])
    fills = fills_by_order[row.client_id]
    return _state_of(row, fills, tuple(_state(tx, k) for k in kids), tx)


def _state_of(
    row: OrderRow, fills: list[FillRow], children: tuple[VenueOrderState, ...], tx: Txn
) -> VenueOrderState:
    inst = tx.instrument(row.instrument)
    fee_currency = inst.fee_currency if inst is not None else ""
    filled = sum((f.qty for f in fills), Decimal(0))
    avg = None
    if fills:
        notional = sum((f.qty * f.price for f in fills), Decimal(0))
        avg = plain(AVERAGE.divide(notional, filled))
    fees: Decimal | None = Decimal(0)
    for f in fills:
        fees = None if fees is None or f.fee is None else fees + f.fee
    return VenueOrderState(
        client_id=row.client_id,
        role=_role(row.role),
        parent_client_id=row.parent_client_id,
        account=row.account,
        instrument=row.instrument,
        side=_side(row.side),
        order_type="market" if row.order_type == "market" else "limit",
        time_in_force=_tif(row.time_in_force),
        reduce_only=row.reduce_only,
        leverage=row.leverage,
        quantity=row.quantity,
        limit_price=row.limit_price,
        max_slippage_bps=row.max_slippage_bps,
        trigger_price=row.trigger_price,
        status=_status(row.status),
        filled_qty=row.filled_qty,
        remaining_qty=row.remaining if row.status in WORKING else Decimal(0),
        avg_price=avg,
        fees=fees,
        fee_currency=fee_currency,
        fills=tuple(
            Fill(
                fill_id=f.id,
                quantity=f.qty,
                price=f.price,
                fee=f.fee,
                fee_currency=f.fee_currency,
                liquidity="maker" if f.liquidity == "maker" else "taker",
                at=datetime.fromisoformat(f.at),
            )
            for f in fills
        ),
        reason=row.reason,
        submit_count=row.submit_count,
        created_at=datetime.fromisoformat(row.created_at),
        updated_at=datetime.fromisoformat(row.updated_at),
        children=children,
    )


def _tif(value: str) -> TimeInForce:
    assert value in TIME_IN_FORCE
    return value  # type: ignore[return-value]


# -- the `countersign venue orders` listing --------------------------------------------------
_COLUMNS = (
    ("CLIENT ID", "client_id"),
    ("ROLE", "role"),
    ("ACCOUNT", "account"),
    ("INSTRUMENT", "instrument"),
    ("SIDE", "side"),
    ("TYPE", "type"),
    ("QTY", "quantity"),
    ("FILLED", "filled_qty"),
    ("PRICE", "price"),
    ("AVG", "avg_price"),
    ("FEES", "fees"),
    ("STATUS", "status"),
    ("SUBMITS", "submit_count"),
    ("REASON", "reason"),
)


def render_orders(orders: Sequence[VenueOrderState], *, as_json: bool = False) -> str:
    """The venue's orders for `countersign venue orders [--json]`. Always marked SIMULATED."""
    if as_json:
        document = {
            "venue": VENUE_NAME,
            "simulated": True,
            "orders": [o.to_json(children=False) for o in orders],
        }
        return json.dumps(document, ensure_ascii=False, indent=2)
    header = f"SIMULATED venue {VENUE_NAME!r}: {len(orders)} order(s)"
    if not orders:
        return header + "\n"
    rows = [[title for title, _ in _COLUMNS]]
    for o in orders:
        price = o.trigger_price if o.role != "order" else o.limit_price
        cells = {
            "client_id": o.client_id,
            "role": {"order": "order", "stop_loss": "sl", "take_profit": "tp"}[o.role],
            "account": o.account,
            "instrument": o.instrument,
            "side": o.side,
            "type": o.order_type + ("" if o.role != "order" else f"/{o.time_in_force}"),
            "quantity": text(o.quantity),
            "filled_qty": text(o.filled_qty),
            "price": "-" if price is None else text(price),
            "avg_price": "-" if o.avg_price is None else text(o.avg_price),
            "fees": "unknown" if o.fees is None else f"{text(o.fees)} {o.fee_currency}".strip(),
            "status": o.status,
            "submit_count": str(o.submit_count),
            "reason": o.reason or "",
        }
        rows.append([cells[key] for _, key in _COLUMNS])
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join([header, *lines]) + "\n"


async def venue_orders_text(
    path: Path, *, as_json: bool = False, account: str | None = None
) -> str:
    """Open the venue file read-only-ish (never creates it) and render its orders."""
    venue = await SimVenue.open(path, create=False)
    try:
        return render_orders(await venue.orders(account), as_json=as_json)
    finally:
        await venue.close()
