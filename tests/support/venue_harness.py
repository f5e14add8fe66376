"""One interface to every finance venue for the conformance suite: `VenueHarness`.

Two implementations, both real: `SimHarness` (the simulated venue in a tmp file) and
`HyperliquidHarness` (the Hyperliquid adapter, opened through `open_venue` on an in-process
hlsandbox with a funded account and its approved agent). Each opens the venue, the settings
for one account and a `FinanceRunner` on the store's evidence; moves the mark; caps the
liquidity (partial fills); sets fees to zero; injects a fault by a venue-neutral name; and
counts what the venue saw of a client id. Both list BTC-PERP at 60000 with Hyperliquid's
precision (lot 0.00001, 5 significant figures, $10 minimum) and base-tier fees, so one
order means the same on both.

Faults (`FAULTS`, what each harness declares it can inject in `faults`):
answer_lost_after_commit   the order lands, its answer is lost
never_landed               the request times out and is fenced: it can never land
error_after_commit         the order lands, the answer is an error (HL: HTTP 500)
delivered_twice            the network delivers one signed request twice (HL only)
rate_limited               the request is refused with 429, nothing processed (HL only)
fee_missing                the order fills, its fills carry no fee
"""

from __future__ import annotations

import contextlib
import hashlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar, Final

import eth_account
from eth_account.signers.local import LocalAccount

from hlsandbox.testing import RunningSandbox, start
from store import ExecutionLedger, World
from tests.support.processes import free_port
from workers.domains.finance.hyperliquid import open_venue
from workers.domains.finance.hyperliquid.wire import cloid_of
from workers.domains.finance.runner import FinanceRunner
from workers.domains.finance.settings import (
    FinanceAccount,
    FinanceSettings,
    HyperliquidSettings,
)
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.contract import Venue
from workers.domains.finance.venues.model import Instrument

FAULTS: Final = (
    "answer_lost_after_commit",
    "never_landed",
    "error_after_commit",
    "delivered_twice",
    "rate_limited",
    "fee_missing",
)
INSTRUMENT: Final = "BTC-PERP"
MARK: Final = Decimal("60000")
MAKER, TAKER = Decimal("0.00015"), Decimal("0.00045")  # Hyperliquid's base tier
HL_KEY_ENV: Final = "HL_CONFORMANCE_AGENT_KEY"
HL_FUNDS: Final = "100000"


def throwaway_key(label: str) -> LocalAccount:
    """A test key derived from `label`: deterministic, never funded outside the sandbox."""
    account: LocalAccount = eth_account.Account.from_key(
        "0x" + hashlib.sha256(f"venue harness throwaway {label}".encode()).hexdigest()
    )
    return account


class VenueHarness(ABC):
    """One venue, opened for one account, with the knobs the conformance suite turns."""

    kind: ClassVar[str]  # the payload's venue name
    faults: ClassVar[frozenset[str]]  # the FAULTS this harness can inject
    account: ClassVar[str]
    executor: ClassVar[tuple[str, str]]
    world: ClassVar[World]

    venue: Venue
    settings: FinanceSettings

    def runner(self, ledger: ExecutionLedger, clock: Callable[[], datetime]) -> FinanceRunner:
        """A runner on this venue alone, keeping evidence in the store (as the bot does)."""
        return FinanceRunner(
            {self.kind: self.venue},
            self.settings,
            clock=clock,
            record_evidence=ledger.record_evidence,
            evidence_of=ledger.evidence,
        )

    def payload(self, **overrides: Any) -> dict[str, Any]:
        """A limit buy of 0.001 BTC-PERP at the mark (it crosses: filled at once)."""
        payload: dict[str, Any] = {
            "venue": self.kind,
            "account": self.account,
            "instrument": INSTRUMENT,
            "side": "buy",
            "quantity": "0.001",
            "order_type": "limit",
            "limit_price": "60000",
            "time_in_force": "GTC",
            "reduce_only": False,
            "leverage": "20",
            "max_fee": "1",
            "fee_currency": "USDC",
        }
        return payload | overrides

    def draft_fields(self) -> dict[str, Any]:
        """What a store draft of an order on this venue names (executor, world, account)."""
        return {
            "executor_name": self.executor[0],
            "executor_revision": self.executor[1],
            "world": self.world,
            "simulated": self.world in (World.SIMULATED, World.EMULATOR),
            "target_ref": f"account:{self.kind}/{self.account}",
        }

    def finance_table(self) -> dict[str, Any]:
        """[domains.finance] for a bot that trades on this venue (JSON, as a config file)."""
        return self.settings.model_dump(mode="json", exclude_none=True)

    def environ(self) -> dict[str, str]:
        """The secrets that table names, for the bot's environment (never in the file)."""
        return {}

    @abstractmethod
    async def set_mark(self, price: Decimal) -> None:
        """Move BTC-PERP's mark; resting orders and triggers react at once."""

    @abstractmethod
    async def set_liquidity(self, quantity: Decimal | None) -> None:
        """Cap what one match fills (None: unlimited)."""

    @abstractmethod
    async def zero_fees(self) -> None:
        """Maker and taker rates 0: fills then report a fee of 0 (known), not None."""

    @abstractmethod
    async def match(self) -> None:
        """One match event at the current mark."""

    @abstractmethod
    async def inject(self, fault: str) -> None:
        """Arm `fault` (one of `faults`) for the next order submitted."""

    async def settle(self) -> None:  # noqa: B027 (a venue that holds nothing in flight)
        """Let whatever the venue holds in flight finish (a delayed commit), so the counts
        are final: a fenced request must still not land."""

    @abstractmethod
    async def seen(self, client_id: str) -> int:
        """How many requests naming `client_id` reached the venue (whatever became of them)."""

    @abstractmethod
    async def placed(self, client_id: str) -> int:
        """How many orders the venue holds (or held) for `client_id`."""

    @abstractmethod
    async def close(self) -> None: ...


class SimHarness(VenueHarness):
    kind = "sim"
    faults = frozenset(
        {"answer_lost_after_commit", "never_landed", "error_after_commit", "fee_missing"}
    )
    account = "sim-main"
    executor = ("sim-venue", "1")
    world = World.SIMULATED
    # the sim's stand-ins: both "landed, answer lost" cases are lose_response; a fenced
    # timeout is `fence`; a missing fee is `fees_unknown`
    SIM_FAULTS: ClassVar[dict[str, str]] = {
        "answer_lost_after_commit": "lose_response",
        "never_landed": "fence",
        "error_after_commit": "lose_response",
        "fee_missing": "fees_unknown",
    }

    def __init__(self, venue: SimVenue, path: Path, instrument: Instrument, budget: str) -> None:
        self.venue = self.sim = venue
        self.path = path
        self.instrument = instrument
        self.settings = FinanceSettings(
            accounts=[FinanceAccount(name=self.account, budget=budget)], venue_path=str(path)
        )

    @classmethod
    async def open(cls, tmp_path: Path, budget: str) -> SimHarness:
        instrument = Instrument(
            INSTRUMENT,
            tick=Decimal("0.1"),
            lot=Decimal("0.00001"),
            min_qty=Decimal("0.00001"),
            mark=MARK,
            maker_fee_rate=MAKER,
            taker_fee_rate=TAKER,
            max_leverage=Decimal("40"),
            sig_figs=5,
            min_notional=Decimal("10"),
        )
        path = tmp_path / "venue.db"
        venue = await SimVenue.open(path, instruments=[instrument], accounts=[cls.account])
        return cls(venue, path, instrument, budget)

    async def _respec(self, **changes: Any) -> None:
        """Change the instrument's stored spec (the file is the venue's whole truth: another
        handle on it updates what this one reads)."""
        self.instrument = replace(self.instrument, **changes)
        async with await SimVenue.open(self.path, instruments=[self.instrument], create=False):
            pass

    async def set_mark(self, price: Decimal) -> None:
        await self.sim.set_mark(INSTRUMENT, price)
        await self.sim.tick()

    async def set_liquidity(self, quantity: Decimal | None) -> None:
        await self._respec(liquidity=quantity)

    async def zero_fees(self) -> None:
        await self._respec(maker_fee_rate=Decimal(0), taker_fee_rate=Decimal(0))

    async def match(self) -> None:
        await self.sim.tick()

    async def inject(self, fault: str) -> None:
        armed = {name for name in str(self.sim.faults).split(",") if name}
        self.sim.faults = Faults.parse(",".join(sorted(armed | {self.SIM_FAULTS[fault]})))

    async def seen(self, client_id: str) -> int:
        state = await self.sim.lookup(client_id)
        return 0 if state is None else state.submit_count

    async def placed(self, client_id: str) -> int:
        return sum(1 for order in await self.sim.orders() if order.client_id == client_id)

    async def close(self) -> None:
        await self.sim.close()


class HyperliquidHarness(VenueHarness):
    kind = "hyperliquid"
    faults = frozenset(FAULTS)
    account = "hl-main"
    executor = ("hyperliquid", "1")
    world = World.EMULATOR
    SANDBOX_FAULTS: ClassVar[dict[str, dict[str, Any]]] = {
        "answer_lost_after_commit": {"kind": "drop_answer", "close": True},
        "never_landed": {"kind": "delay_commit", "delay_ms": None},  # held: fenced meanwhile
        "error_after_commit": {"kind": "error_5xx_after_commit"},
        "delivered_twice": {"kind": "deliver_twice"},
        "rate_limited": {"kind": "rate_limited"},
        "fee_missing": {"kind": "drop_fee"},
    }

    def __init__(
        self,
        sandbox: RunningSandbox,
        venue: Venue,
        settings: FinanceSettings,
        hl: HyperliquidSettings,
        agent_key: str,
    ) -> None:
        self.sandbox = sandbox
        self.venue = venue
        self.settings = settings
        self.hl = hl
        self.agent_key = agent_key  # for a bot process's environment (never logged)

    @classmethod
    async def open(cls, tmp_path: Path, budget: str) -> HyperliquidHarness:
        sandbox = await start(free_port())
        try:
            owner, agent = throwaway_key("account"), throwaway_key("agent")
            await sandbox.add_account(owner.address, HL_FUNDS)
            await sandbox.approve_agent(owner.address, agent.address)
            # the suite reads a lot; the venue's IP weight is not what it is about
            await sandbox.set_limits(ip_weight_per_min=1_000_000)
            hl = HyperliquidSettings(
                network="emulator",
                url=sandbox.base_url,
                request_timeout_s=2.0,
                poll_s=0.01,
                expires_after_s=30,
                ip_weight_per_min=1_000_000,  # as the sandbox's, raised above
            )
            account = FinanceAccount(
                name=cls.account,
                venue=cls.kind,
                budget=budget,
                address=owner.address,
                agent_key_env=HL_KEY_ENV,
            )
            key = agent.key.hex()
            clock = sandbox_clock(sandbox)
            venue = await open_venue(hl, [account], {HL_KEY_ENV: key}, clock)
            settings = FinanceSettings(accounts=[account], hyperliquid=hl)
        except BaseException:
            await sandbox.stop()
            raise
        return cls(sandbox, venue, settings, hl, key)

    def environ(self) -> dict[str, str]:
        return {HL_KEY_ENV: self.agent_key}

    async def set_mark(self, price: Decimal) -> None:
        await self.sandbox.set_mark("BTC", str(price))

    async def set_liquidity(self, quantity: Decimal | None) -> None:
        await self.sandbox.set_liquidity("BTC", None if quantity is None else str(quantity))

    async def zero_fees(self) -> None:
        await self.sandbox.set_fees("0", "0")

    async def match(self) -> None:
        await self.sandbox.tick()

    async def inject(self, fault: str) -> None:
        await self.sandbox.fault(**self.SANDBOX_FAULTS[fault])

    async def settle(self) -> None:
        await self.sandbox.release()

    async def seen(self, client_id: str) -> int:
        return await self.sandbox.requests_seen(cloid_of(client_id))

    async def placed(self, client_id: str) -> int:
        return await self.sandbox.committed(cloid_of(client_id))

    async def close(self) -> None:
        try:
            await self.venue.close()
        finally:
            await self.sandbox.stop()


def sandbox_clock(sandbox: RunningSandbox) -> Callable[[], datetime]:
    """The sandbox's own clock: nonces and expiresAfter are read on the venue's time."""

    def now() -> datetime:
        return datetime.fromtimestamp(sandbox.venue.now_ms() / 1000, UTC)

    return now


HARNESSES: Final[dict[str, type[VenueHarness]]] = {
    SimHarness.kind: SimHarness,
    HyperliquidHarness.kind: HyperliquidHarness,
}


@contextlib.asynccontextmanager
async def open_harness(
    kind: str, tmp_path: Path, *, budget: str = "100000"
) -> AsyncIterator[VenueHarness]:
    """The harness for venue `kind` ("sim", "hyperliquid"), closed at the end."""
    harness_type = HARNESSES[kind]
    assert issubclass(harness_type, SimHarness | HyperliquidHarness)
    harness: VenueHarness = await harness_type.open(tmp_path, budget)
    try:
        yield harness
    finally:
        await harness.close()
