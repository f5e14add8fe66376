"""The adapter reads within Hyperliquid's rate limits without giving up freshness: identical
concurrent reads share one request, slowly changing reads are shared for a stated age,
preflight never takes precision older than its max age, and the weight budget paces reads
instead of letting the venue refuse them. Weights are counted where the venue counts them:
the sandbox's per-IP weight counter."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from hlsandbox.app import WEIGHTS_KEY
from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import HlWallets
from workers.domains.finance.hyperliquid.economy import (
    ACCOUNT_WINDOW_S,
    PRECISION_S,
    SLOW_S,
    WeightBudget,
)
from workers.domains.finance.hyperliquid.venue import HyperliquidVenue
from workers.domains.finance.preflight import OBSERVATION_MAX_AGE
from workers.domains.finance.venues.contract import VenueUnavailable
from workers.domains.finance.venues.model import VenueOrder

ACCOUNT = "hl-main"
# one observation of one instrument: meta 20, allMids 2, userFees 20, clearinghouseState 2,
# frontendOpenOrders 20, activeAssetData (the order's coin) 20
ONE_OBSERVATION = 84
PRECISION = 40  # meta + userFees
ACCOUNT_READS = 44  # allMids + clearinghouseState + frontendOpenOrders + activeAssetData
MARKS = 2  # allMids


def spent(sandbox: RunningSandbox) -> int:
    """The weight the sandbox charged so far (its rolling minute; these tests stay inside)."""
    return sum(w for entries in sandbox.app[WEIGHTS_KEY].spent.values() for _, w in entries)


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def manual_reads(venue: HyperliquidVenue) -> ManualClock:
    """The age of shared reads on a clock the test moves (the venue's own clock is untouched)."""
    clock = ManualClock()
    venue._transport.reads.clock = clock
    return clock


async def test_concurrent_observes_cost_one_read_of_each_kind(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox
) -> None:
    before = spent(hl_sandbox)
    observations = await asyncio.gather(
        *(hl_venue.observe(ACCOUNT, ["BTC-PERP"]) for _ in range(20))
    )
    assert spent(hl_sandbox) - before == ONE_OBSERVATION
    assert hl_venue._transport.reads.sent == 6
    assert all(o.complete for o in observations)


async def test_a_stale_read_is_sent_again_and_the_age_is_the_oldest_reads(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox
) -> None:
    clock = manual_reads(hl_venue)
    await hl_venue.observe(ACCOUNT, ["BTC-PERP"])
    before = spent(hl_sandbox)

    clock.now += ACCOUNT_WINDOW_S / 2  # everything still fresh: nothing is read
    shared = await hl_venue.observe(ACCOUNT, ["BTC-PERP"])
    assert spent(hl_sandbox) == before
    assert shared.observed_at <= hl_venue._clock() - timedelta(seconds=ACCOUNT_WINDOW_S / 2)

    clock.now += ACCOUNT_WINDOW_S  # the account's reads are stale, precision is not
    partly = await hl_venue.observe(ACCOUNT, ["BTC-PERP"])
    assert spent(hl_sandbox) - before == ACCOUNT_READS
    # built from a meta and fees sent 1.5 s ago: it says so
    assert partly.observed_at <= hl_venue._clock() - timedelta(seconds=1.5 * ACCOUNT_WINDOW_S)

    clock.now += PRECISION_S  # now precision and fees are stale too
    fresh = await hl_venue.observe(ACCOUNT, ["BTC-PERP"])
    assert spent(hl_sandbox) - before == ACCOUNT_READS + ONE_OBSERVATION
    assert fresh.observed_at > partly.observed_at


async def test_preflight_never_uses_meta_older_than_its_max_age(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox
) -> None:
    assert PRECISION_S < OBSERVATION_MAX_AGE.total_seconds()
    clock = manual_reads(hl_venue)
    await hl_venue.capabilities()  # meta read once, shared for a minute by capabilities
    before = spent(hl_sandbox)

    clock.now += SLOW_S / 2
    await hl_venue.capabilities()
    assert spent(hl_sandbox) - before == MARKS  # only the marks again

    before = spent(hl_sandbox)
    observation = await hl_venue.observe(ACCOUNT, ["BTC-PERP"])
    # meta read again for preflight (the marks just read by capabilities are shared)
    assert spent(hl_sandbox) - before == ONE_OBSERVATION - MARKS
    age = hl_venue._clock() - observation.observed_at
    assert age <= OBSERVATION_MAX_AGE

    # a filing pre-check may take precision and fees a minute old: only the account again
    clock.now += PRECISION_S + 0.5
    before = spent(hl_sandbox)
    await hl_venue.observe(ACCOUNT, ["BTC-PERP"], max_age=timedelta(seconds=SLOW_S))
    assert spent(hl_sandbox) - before == ACCOUNT_READS
    # and preflight right after does not take that meta: it reads it again
    before = spent(hl_sandbox)
    await hl_venue.observe(ACCOUNT, ["BTC-PERP"])
    assert spent(hl_sandbox) - before == PRECISION


async def test_reads_wait_for_room_in_the_budget_instead_of_being_refused(
    hl_venue: HyperliquidVenue,
    hl_sandbox: RunningSandbox,
    hl_wallets: HlWallets,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a budget of 50 weight per half second, so the wait is short; the order of events
    # (not their durations) is asserted
    budget = WeightBudget(50, reserve=0, window_s=0.5, max_wait_s=30.0)
    hl_venue._transport.budget = budget
    caplog.set_level(logging.INFO, logger="countersign.venue.hyperliquid")
    coins = ["BTC", "ETH", "SOL", "BTC", "ETH"]
    before = spent(hl_sandbox)
    for coin in coins:  # 20 each, one after the other: the third must wait
        body = {"type": "activeAssetData", "user": hl_wallets.address, "coin": coin}
        await hl_venue._transport.info(body)
    assert spent(hl_sandbox) - before == 20 * len(coins)  # every read answered, none refused
    assert budget.waits >= 2
    told = [r for r in caplog.records if "near the limit" in r.getMessage()]
    assert len(told) == 1  # said once, at INFO
    assert told[0].levelno == logging.INFO


async def test_a_read_that_would_wait_too_long_fails_without_being_sent(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    budget = WeightBudget(30, reserve=0, window_s=60.0, max_wait_s=0.01)
    hl_venue._transport.budget = budget
    await hl_venue._transport.info({"type": "meta"})  # 20 of 30
    before, sent = spent(hl_sandbox), hl_venue._transport.reads.sent
    with pytest.raises(VenueUnavailable, match="request weight"):
        await hl_venue._transport.info({"type": "userFees", "user": hl_wallets.address})
    assert spent(hl_sandbox) == before
    assert hl_venue._transport.reads.sent == sent


async def test_orders_are_never_held_back_by_reads(hl_venue: HyperliquidVenue) -> None:
    budget = WeightBudget(1200)
    assert budget.reserve > 0  # reads stop short of the limit: orders still fit
    budget.action(1)
    assert budget.spent_total == 1


async def test_a_held_coins_leverage_comes_with_the_positions_read(
    hl_venue: HyperliquidVenue,
    hl_sandbox: RunningSandbox,
    evidence: Any,
    new_order: Callable[..., VenueOrder],
) -> None:
    clock = manual_reads(hl_venue)
    filled = await hl_venue.submit(new_order(quantity=Decimal("0.001")), evidence)
    assert filled.order.status == "filled"
    clock.now += SLOW_S  # every shared read is stale
    before = spent(hl_sandbox)
    observation = await hl_venue.observe(ACCOUNT, ["BTC-PERP"])
    # clearinghouseState (2) carries the BTC position's leverage: no activeAssetData (20)
    assert spent(hl_sandbox) - before == ONE_OBSERVATION - 20
    assert observation.leverage == {"BTC-PERP": Decimal(20)}
    assert observation.complete
