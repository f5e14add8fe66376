"""Every venue's data: instruments, orders in and out, fills, positions, snapshots.

Frozen dataclasses and the vocabulary they use (sides, order types, time in force,
statuses, roles), the same for the simulated venue and a real one (venues/contract.py). An
order the executor submits is a `VenueOrder`; what a venue knows about a client id is a
`VenueOrderState` (with its fills and protective children); `Observation` and
`Capabilities` are what preflight and the card read. Nothing here does I/O; every value
that leaves a venue carries the `world` it comes from (SIMULATED, EMULATOR, TESTNET, LIVE).

Statuses: `accepted` (acknowledged, not working yet: here only untriggered protective
children), `resting`, `partially_filled` (still working), `filled`, `rejected`
(never worked; `reason` says why), `cancelled` (`reason` says why; `filled_qty` may be
above zero when the rest was cancelled). A missing fee is `None`, never zero.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, localcontext
from typing import Any, Final, Literal

from store import World
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.sim.decimals import EXACT, require_decimal, text

Side = Literal["buy", "sell"]
OrderType = Literal["limit", "market"]
TimeInForce = Literal["GTC", "IOC", "FOK", "POST_ONLY"]
OrderStatus = Literal["accepted", "resting", "partially_filled", "filled", "rejected", "cancelled"]
Role = Literal["order", "stop_loss", "take_profit"]
Liquidity = Literal["maker", "taker"]

SIDES: Final = ("buy", "sell")
ORDER_TYPES: Final = ("limit", "market")
TIME_IN_FORCE: Final = ("GTC", "IOC", "FOK", "POST_ONLY")
ROLES: Final = ("order", "stop_loss", "take_profit")
WORKING: Final = ("accepted", "resting", "partially_filled")
TERMINAL: Final = ("filled", "rejected", "cancelled")
# the two an order ends in unfilled, by name: an operation's lifecycle has states spelled the
# same (store.State), and meaning something else
ORDER_REJECTED: Final = "rejected"
ORDER_CANCELLED: Final = "cancelled"
# protective children's client ids on every venue: the parent's plus the suffix
CHILD_SUFFIX: Final = {"stop_loss": ":sl", "take_profit": ":tp"}
# the worlds whose effects never leave this machine ("simulated" in the old JSON shape)
LOCAL_WORLDS: Final = frozenset({World.SIMULATED, World.EMULATOR})
CLIENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,95}$")


@dataclass(frozen=True)
class Instrument:
    """A tradable instrument: its increments, its mark price and its fee rates.

    `liquidity` is the quantity a taker order can fill at the mark at once
    (None: unlimited); the rest of a GTC limit rests, of IOC/market is cancelled.
    `sig_figs`: a venue whose prices must also have at most this many significant figures
    (Hyperliquid: 5; a whole number is always allowed), None: the tick alone decides.
    `min_notional`: the smallest quantity x price the venue takes (Hyperliquid: $10).
    """

    name: str
    tick: Decimal
    lot: Decimal
    min_qty: Decimal
    mark: Decimal
    maker_fee_rate: Decimal = Decimal("0.0002")
    taker_fee_rate: Decimal = Decimal("0.0005")
    max_leverage: Decimal = Decimal("20")
    fee_currency: str = "USDC"
    liquidity: Decimal | None = None
    sig_figs: int | None = None
    min_notional: Decimal | None = None

    def __post_init__(self) -> None:
        if self.sig_figs is not None and (
            isinstance(self.sig_figs, bool) or not isinstance(self.sig_figs, int)
        ):
            raise TypeError(f"{self.name}.sig_figs must be an int or None")
        if self.sig_figs is not None and self.sig_figs < 1:
            raise ValueError(f"{self.name}.sig_figs must be at least 1")
        if self.min_notional is not None:
            if require_decimal(f"{self.name}.min_notional", self.min_notional) <= 0:
                raise ValueError(f"{self.name}.min_notional must be greater than zero")
        for attr in ("tick", "lot", "min_qty", "mark", "max_leverage"):
            if require_decimal(f"{self.name}.{attr}", getattr(self, attr)) <= 0:
                raise ValueError(f"{self.name}.{attr} must be greater than zero")
        for attr in ("maker_fee_rate", "taker_fee_rate"):
            if require_decimal(f"{self.name}.{attr}", getattr(self, attr)) < 0:
                raise ValueError(f"{self.name}.{attr} must not be negative")
        with localcontext(EXACT):
            if self.min_qty % self.lot != 0:
                raise ValueError(f"{self.name}.min_qty must be a multiple of the lot {self.lot}")
            if self.liquidity is not None:
                require_decimal(f"{self.name}.liquidity", self.liquidity)
                if self.liquidity <= 0 or self.liquidity % self.lot != 0:
                    raise ValueError(
                        f"{self.name}.liquidity must be a positive multiple of the lot {self.lot}"
                    )


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
                f"client_id {self.client_id!r} must be 1 to 96 letters, digits, _ . : or -, "
                "starting with a letter or a digit"
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
    world: World = field(kw_only=True)  # required: no venue's answer may go unmarked

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
            "world": self.world.value,
            # kept for readers of the old shape: nothing left this machine
            "simulated": self.world in LOCAL_WORLDS,
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
    world: World
    # the leverage the account is set to per instrument (absent: not set, or not reported):
    # an order at another leverage is refused, countersign never changes it as a side effect
    leverage: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True)
class Capabilities:
    """What the venue could ever execute: read before a card is offered."""

    venue: str
    world: World
    accounts: frozenset[str]
    account_modes: frozenset[str]
    instruments: frozenset[str]
    order_types: frozenset[str]
    time_in_force: frozenset[str]
    protective: bool = True
    # each account's mode at the venue; an account whose mode is not in account_modes
    # could never take an order through this adapter
    modes_by_account: Mapping[str, str] = field(default_factory=dict)
    # each instrument's mark when read: the worst-case notional of a market order (approval
    # rules by amount) is computed from it at proposal time
    marks: Mapping[str, Decimal] = field(default_factory=dict)
