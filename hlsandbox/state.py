"""What the sandbox venue holds: accounts, agents, orders, fills, positions, nonces, marks.

All of it lives in memory and changes only on the event loop (the handlers are synchronous
between awaits), so one request's commit is never interleaved with another's.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hlsandbox.universe import Asset, Seed, demo_seed

OPEN = "open"
DEFAULT_LEVERAGE = 20
# the sandbox's agents do not expire within any test or demo (shown in extraAgents)
AGENT_VALIDITY_MS = 180 * 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class Trigger:
    px: Decimal
    is_market: bool
    tpsl: str  # "tp" | "sl"


@dataclass
class Order:
    oid: int
    user: str
    asset: Asset
    is_buy: bool
    limit_px: Decimal
    orig_sz: Decimal
    reduce_only: bool
    tif: str | None  # None for a trigger order, as the venue shows it
    trigger: Trigger | None
    cloid: str | None
    timestamp: int
    status: str = OPEN
    status_timestamp: int = 0
    filled_sz: Decimal = Decimal(0)
    parent: int | None = None
    children: list[int] = field(default_factory=list)
    # a normalTpsl child waits for its parent to fill before its trigger is armed
    waiting_parent: bool = False
    triggered: bool = False
    position_tpsl: bool = False

    @property
    def remaining(self) -> Decimal:
        return self.orig_sz - self.filled_sz

    @property
    def is_open(self) -> bool:
        return self.status == OPEN

    @property
    def armed_trigger(self) -> bool:
        """A trigger order waiting for the mark (not for its parent, not yet triggered)."""
        return self.trigger is not None and not self.triggered and not self.waiting_parent


@dataclass
class Position:
    szi: Decimal = Decimal(0)
    entry_px: Decimal = Decimal(0)


@dataclass
class Account:
    address: str
    usdc: Decimal
    positions: dict[str, Position] = field(default_factory=dict)
    leverage: dict[str, tuple[int, bool]] = field(default_factory=dict)  # coin -> (value, cross)
    volume: Decimal = Decimal(0)
    actions_used: int = 0
    cancels_used: int = 0
    scheduled_cancel: int | None = None
    scheduled_cancel_triggers: int = 0

    def position(self, coin: str) -> Position:
        return self.positions.setdefault(coin, Position())


@dataclass
class Limits:
    ip_weight_per_min: int = 1200
    address_actions: int = 10000  # the initial buffer; 1 more per USDC traded
    nonce_window: int = 100


@dataclass
class RequestRecord:
    """One /exchange order request that named a cloid, as it arrived and what became of it."""

    nonce: int
    committed: bool = False
    answer: Any = None


class Venue:
    """The whole venue: read by /info, changed by /exchange and the control API."""

    def __init__(self, seed: Seed | None = None) -> None:
        seed = seed or demo_seed()
        self.assets: dict[str, Asset] = {asset.name: asset for asset in seed.assets}
        self.by_index: dict[int, Asset] = {asset.index: asset for asset in seed.assets}
        self.marks: dict[str, Decimal] = dict(seed.marks)
        self.liquidity: dict[str, Decimal | None] = {name: None for name in self.assets}
        self.maker_rate = Decimal("0.00015")
        self.taker_rate = Decimal("0.00045")
        self.limits = Limits()
        self.accounts: dict[str, Account] = {}
        self.agents: dict[str, str] = {}  # agent address -> account address
        self.agent_names: dict[str, str] = {}
        self.agent_valid_until: dict[str, int] = {}
        self.nonces: dict[str, list[int]] = {}  # signer -> the highest nonces kept, ascending
        self.orders: dict[int, Order] = {}
        self.cloids: dict[tuple[str, str], int] = {}  # (user, cloid) -> oid
        self.fills: dict[str, list[dict[str, Any]]] = {}  # user -> fills, oldest first
        self.requests: dict[str, list[RequestRecord]] = {}  # cloid -> order requests naming it
        self.clock_offset_ms = 0
        self.next_oid = 1000
        self.next_tid = 1
        self.events = 0
        for account in seed.accounts:
            self.add_account(account.address, account.usdc)
            for agent in account.agents:
                self.approve_agent(account.address, agent)

    # -- clock --------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return int(time.time() * 1000) + self.clock_offset_ms

    # -- accounts -----------------------------------------------------------------------------

    def add_account(self, address: str, usdc: Decimal) -> Account:
        address = address.lower()
        account = self.accounts.get(address)
        if account is None:
            account = self.accounts[address] = Account(address, usdc)
        else:
            account.usdc = usdc
        return account

    def approve_agent(self, account: str, agent: str, name: str = "") -> None:
        agent = agent.lower()
        self.agents[agent] = account.lower()
        self.agent_names[agent] = name
        self.agent_valid_until[agent] = self.now_ms() + AGENT_VALIDITY_MS

    def agent_terms(self) -> dict[str, tuple[str, int]]:
        """agent -> (account, valid until ms), as `extraAgents` lists them."""
        return {a: (owner, self.agent_valid_until[a]) for a, owner in self.agents.items()}

    def account_of_signer(self, signer: str) -> Account | None:
        """The signer is the account itself or an approved agent wallet of it."""
        signer = signer.lower()
        address = self.agents.get(signer, signer)
        return self.accounts.get(address)

    def leverage(self, account: Account, asset: Asset) -> tuple[int, bool]:
        return account.leverage.get(asset.name, (min(DEFAULT_LEVERAGE, asset.max_leverage), True))

    # -- orders -------------------------------------------------------------------------------

    def new_oid(self) -> int:
        self.next_oid += 1
        return self.next_oid

    def new_tid(self) -> int:
        self.next_tid += 1
        return self.next_tid

    def add_order(self, order: Order) -> None:
        self.orders[order.oid] = order
        if order.cloid is not None:
            self.cloids[(order.user, order.cloid)] = order.oid

    def order_by_cloid(self, user: str, cloid: str) -> Order | None:
        oid = self.cloids.get((user.lower(), cloid.lower()))
        return None if oid is None else self.orders[oid]

    def user_orders(self, user: str) -> list[Order]:
        user = user.lower()
        return [order for order in self.orders.values() if order.user == user]

    def open_orders(self, coin: str | None = None) -> list[Order]:
        return [
            order
            for order in self.orders.values()
            if order.is_open and (coin is None or order.asset.name == coin)
        ]

    def finish(self, order: Order, status: str) -> None:
        order.status = status
        order.status_timestamp = self.now_ms()

    # -- money --------------------------------------------------------------------------------

    def unrealized(self, account: Account) -> Decimal:
        return sum(
            (p.szi * (self.marks[coin] - p.entry_px) for coin, p in account.positions.items()),
            Decimal(0),
        )

    def account_value(self, account: Account) -> Decimal:
        return account.usdc + self.unrealized(account)

    def margin_used(self, account: Account) -> Decimal:
        total = Decimal(0)
        for coin, position in account.positions.items():
            leverage, _cross = self.leverage(account, self.assets[coin])
            total += abs(position.szi) * self.marks[coin] / leverage
        return total

    def order_margin(self, account: Account) -> Decimal:
        """Margin the open orders that can add to a position hold back."""
        total = Decimal(0)
        for order in self.user_orders(account.address):
            if order.is_open and not order.reduce_only and order.trigger is None:
                leverage, _cross = self.leverage(account, order.asset)
                total += order.remaining * order.limit_px / leverage
        return total

    def free_margin(self, account: Account) -> Decimal:
        return self.account_value(account) - self.margin_used(account) - self.order_margin(account)

    # -- requests -----------------------------------------------------------------------------

    def tx_hash(self, *parts: object) -> str:
        self.events += 1
        text = "|".join(str(part) for part in (self.events, *parts))
        return "0x" + hashlib.sha256(text.encode()).hexdigest()
