"""A real hlsandbox on a loopback port (`hl_sandbox`), a funded account with its approved
agent (`hl_wallets`), the Hyperliquid venue opened on them through `open_venue`
(`hl_venue`), an evidence recorder (`evidence`) and an order factory (`new_order`).

The venue's clock is the sandbox's own (`Venue.now_ms`, which `POST clock` moves), so
expiresAfter and nonces are read on one clock, as a venue and a synced client would.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import HlWallets, hl_sandbox, hl_wallets  # noqa: F401
from tests.support.waiting import scaled
from workers.domains.finance.hyperliquid import open_venue
from workers.domains.finance.hyperliquid.venue import HyperliquidVenue
from workers.domains.finance.hyperliquid.wire import cloid_of
from workers.domains.finance.settings import FinanceAccount, HyperliquidSettings
from workers.domains.finance.venues.contract import Evidence
from workers.domains.finance.venues.model import ProtectiveSpec, VenueOrder

KEY_ENV = "HL_TEST_AGENT_KEY"
ACCOUNT = "hl-main"


def settings_for(sandbox: RunningSandbox, **overrides: Any) -> HyperliquidSettings:
    values: dict[str, Any] = {
        "network": "emulator",
        "url": sandbox.base_url,
        # a read the emulator is slow to answer on a busy machine is not a timeout the test
        # means (ciB: userRole timed out at 2 s and the order took another path)
        "request_timeout_s": scaled(2.0),
        "poll_s": 0.01,
        "expires_after_s": 30,
    }
    return HyperliquidSettings(**(values | overrides))


def account_for(wallets: HlWallets, **overrides: Any) -> FinanceAccount:
    values: dict[str, Any] = {
        "name": ACCOUNT,
        "venue": "hyperliquid",
        "budget": "100000",
        "address": wallets.address,
        "agent_key_env": KEY_ENV,
    }
    return FinanceAccount(**(values | overrides))


def sandbox_clock(sandbox: RunningSandbox) -> Callable[[], datetime]:
    def now() -> datetime:
        ms = sandbox.venue.now_ms()
        return datetime.fromtimestamp(ms / 1000, UTC)

    return now


OpenVenue = Callable[..., Awaitable[HyperliquidVenue]]


@pytest.fixture
async def open_hl(
    hl_sandbox: RunningSandbox,  # noqa: F811
    hl_wallets: HlWallets,  # noqa: F811
) -> AsyncIterator[OpenVenue]:
    """Open the venue on the sandbox's account (or `address`), signing with `key` (default:
    its approved agent); settings overridable. Every venue opened is closed at the end."""
    opened: list[HyperliquidVenue] = []

    async def open_(
        key: str | None = None, address: str | None = None, **overrides: Any
    ) -> HyperliquidVenue:
        environ = {KEY_ENV: key or hl_wallets.agent.key.hex()}
        account = account_for(hl_wallets, address=address or hl_wallets.address)
        venue = await open_venue(
            settings_for(hl_sandbox, **overrides),
            [account],
            environ,
            sandbox_clock(hl_sandbox),
        )
        assert isinstance(venue, HyperliquidVenue)
        opened.append(venue)
        return venue

    try:
        yield open_
    finally:
        for venue in opened:
            await venue.close()


@pytest.fixture
async def hl_venue(open_hl: OpenVenue) -> HyperliquidVenue:
    return await open_hl()


@dataclass
class Recorder:
    """The executor's evidence store, with what the sandbox had seen of the cloid at the
    moment each record was written (it must be nothing: record comes before the POST)."""

    sandbox: RunningSandbox
    evidence: dict[str, Evidence] = field(default_factory=dict)
    seen_at_record: dict[str, int] = field(default_factory=dict)

    async def __call__(self, client_id: str, evidence: Evidence) -> None:
        self.seen_at_record[client_id] = await self.sandbox.requests_seen(cloid_of(client_id))
        self.evidence[client_id] = evidence


@pytest.fixture
def evidence(hl_sandbox: RunningSandbox) -> Recorder:  # noqa: F811
    return Recorder(hl_sandbox)


_ids = itertools.count(1)


@pytest.fixture
def new_order() -> Callable[..., VenueOrder]:
    def make(**overrides: Any) -> VenueOrder:
        protective = overrides.pop("protective", None)
        values: dict[str, Any] = {
            "client_id": f"cs-{datetime.now(UTC):%H%M%S%f}-{next(_ids)}",
            "account": ACCOUNT,
            "instrument": "BTC-PERP",
            "side": "buy",
            "quantity": Decimal("0.001"),
            "order_type": "limit",
            "time_in_force": "GTC",
            "leverage": Decimal("20"),
            "limit_price": Decimal("60000"),
        }
        if protective is not None:
            values["protective"] = ProtectiveSpec(*protective)
        return VenueOrder(**(values | overrides))

    return make
