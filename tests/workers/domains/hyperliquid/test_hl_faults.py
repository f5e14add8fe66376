"""Each fault of the hlsandbox settled by lookup and the noop fence, never a second order.

For every case the sandbox's own count says how many requests carried the cloid and how
many landed: exactly one request each time (the adapter never posts an order twice).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hyperliquid.utils.types import Cloid  # type: ignore[import-untyped]

from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import HlWallets, exchange_for, sdk
from tests.support.waiting import eventually
from workers.domains.finance.hyperliquid.fence import FENCED
from workers.domains.finance.hyperliquid.venue import HyperliquidVenue
from workers.domains.finance.hyperliquid.wire import cloid_of
from workers.domains.finance.venues.contract import NeverLanded, VenueAmbiguous
from workers.domains.finance.venues.model import VenueOrder

NewOrder = Callable[..., VenueOrder]


@pytest.mark.parametrize("close", [False, True])
async def test_a_dropped_answer_is_ambiguous_and_lookup_finds_the_one_order(
    hl_venue: HyperliquidVenue,
    hl_sandbox: RunningSandbox,
    evidence: Any,
    new_order: NewOrder,
    close: bool,
) -> None:
    order = new_order(limit_price=Decimal("60100"))
    await hl_sandbox.fault("drop_answer", close=close)
    with pytest.raises(VenueAmbiguous):
        await hl_venue.submit(order, evidence)
    found = await hl_venue.lookup(order.client_id, evidence.evidence[order.client_id])
    assert found is not None and found.status == "filled" and found.fees is not None
    cloid = cloid_of(order.client_id)
    assert (await hl_sandbox.requests_seen(cloid), await hl_sandbox.committed(cloid)) == (1, 1)


async def test_a_delayed_request_is_fenced_by_a_noop_and_can_never_land(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(limit_price=Decimal("60100"))
    await hl_sandbox.fault("delay_commit", delay_ms=None)  # held until release
    with pytest.raises(VenueAmbiguous):
        await hl_venue.submit(order, evidence)  # the client gives up after its timeout
    with pytest.raises(NeverLanded) as fenced:
        await hl_venue.lookup(order.client_id, evidence.evidence[order.client_id])
    assert str(fenced.value) == FENCED
    assert await hl_sandbox.release() == 1  # the late commit now fails: its nonce is used
    cloid = cloid_of(order.client_id)
    assert (await hl_sandbox.requests_seen(cloid), await hl_sandbox.committed(cloid)) == (1, 0)
    requests = await hl_sandbox.requests(cloid)
    assert "duplicate nonce" in str(requests["requests"][0]["answer"])


async def test_a_5xx_after_commit_is_ambiguous_and_lookup_finds_it(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(limit_price=Decimal("59000"))
    await hl_sandbox.fault("error_5xx_after_commit")
    with pytest.raises(VenueAmbiguous, match="HTTP 500"):
        await hl_venue.submit(order, evidence)
    found = await hl_venue.lookup(order.client_id, evidence.evidence[order.client_id])
    assert found is not None and found.status == "resting"
    cloid = cloid_of(order.client_id)
    assert (await hl_sandbox.requests_seen(cloid), await hl_sandbox.committed(cloid)) == (1, 1)


async def test_a_request_delivered_twice_lands_once(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(limit_price=Decimal("59000"))
    await hl_sandbox.fault("deliver_twice")
    # the answer is the second delivery's "duplicate nonce": not decisive, never "rejected"
    with pytest.raises(VenueAmbiguous, match="duplicate nonce"):
        await hl_venue.submit(order, evidence)
    found = await hl_venue.lookup(order.client_id, evidence.evidence[order.client_id])
    assert found is not None and found.status == "resting"
    cloid = cloid_of(order.client_id)
    assert await hl_sandbox.committed(cloid) == 1


async def test_a_429_is_ambiguous_then_fenced(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(limit_price=Decimal("60100"))
    await hl_sandbox.fault("rate_limited")
    with pytest.raises(VenueAmbiguous, match="HTTP 429"):
        await hl_venue.submit(order, evidence)
    with pytest.raises(NeverLanded, match="fenced"):
        await hl_venue.lookup(order.client_id, evidence.evidence[order.client_id])
    assert await hl_sandbox.committed(cloid_of(order.client_id)) == 0


async def test_without_evidence_the_request_never_left(hl_venue: HyperliquidVenue) -> None:
    with pytest.raises(NeverLanded, match="no evidence was recorded"):
        await hl_venue.lookup("cs-crashed-before-record", None)


async def test_a_used_nonce_without_an_order_settles_at_expiry(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    # an order whose request's nonce the venue used but which placed nothing (a
    # whole-payload refusal): the noop answers "duplicate nonce", the cloid stays unknown
    placed = new_order(limit_price=Decimal("59000"))
    await hl_venue.submit(placed, evidence)
    used = dict(evidence.evidence[placed.client_id])
    ghost = new_order(limit_price=Decimal("59000"))
    used["order"] = dict(used["order"], client_id=ghost.client_id)
    used["cloids"] = {ghost.client_id: cloid_of(ghost.client_id)}
    # it may still be landing: never None (the executor could call that "not received"
    # after its own not-found delay, before expiresAfter): ambiguous, ask again
    with pytest.raises(VenueAmbiguous, match="may still be landing"):
        await hl_venue.lookup(ghost.client_id, used)
    await hl_sandbox.advance(35_000 + 30_000)  # past expiresAfter and its margin
    with pytest.raises(NeverLanded, match="expiresAfter has passed"):
        await hl_venue.lookup(ghost.client_id, used)
    assert await hl_sandbox.requests_seen(cloid_of(ghost.client_id)) == 0


async def test_watch_stops_following_a_request_that_can_no_longer_land(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(limit_price=Decimal("60100"))
    await hl_sandbox.fault("rate_limited")
    with pytest.raises(VenueAmbiguous):
        await hl_venue.submit(order, evidence)
    assert not await hl_venue.watch()  # not found yet: still followed
    assert order.client_id in hl_venue._memory.following
    await hl_sandbox.advance(35_000 + 30_000)  # past expiresAfter and its margin
    await eventually(
        lambda: _unfollowed(hl_venue, order.client_id), what="the request is no longer followed"
    )
    assert await hl_sandbox.committed(cloid_of(order.client_id)) == 0


async def _unfollowed(venue: HyperliquidVenue, client_id: str) -> bool:
    await venue.watch()
    return client_id not in venue._memory.following


async def test_a_request_signed_by_another_key_stays_unknown_until_it_expires(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    # the evidence names a signer this process does not hold (another replica's key, a key
    # rotated since): its nonce cannot be fenced, so only expiry settles it
    ghost = new_order(limit_price=Decimal("59000"))
    await hl_sandbox.fault("delay_commit", delay_ms=None)
    with pytest.raises(VenueAmbiguous):
        await hl_venue.submit(ghost, evidence)
    recorded = dict(evidence.evidence[ghost.client_id], signer="0x" + "ab" * 20)
    with pytest.raises(VenueAmbiguous, match="cannot be fenced"):
        await hl_venue.lookup(ghost.client_id, recorded)
    await hl_sandbox.advance(35_000 + 30_000)  # past expiresAfter and its margin
    await hl_sandbox.release()  # the held request arrives late: refused, it expired
    with pytest.raises(NeverLanded, match="expiresAfter has passed"):
        await hl_venue.lookup(ghost.client_id, recorded)
    assert await hl_sandbox.committed(cloid_of(ghost.client_id)) == 0


async def test_an_order_at_the_venue_without_evidence_is_adopted(
    hl_venue: HyperliquidVenue,
    hl_sandbox: RunningSandbox,
    hl_wallets: HlWallets,
    new_order: NewOrder,
) -> None:
    # placed under our cloid, but no evidence was recorded (which the adapter never does):
    # the venue's record is the truth, never "unknown" for ever
    order = new_order(limit_price=Decimal("60100"))
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    placed = await sdk(
        exchange.order,
        "BTC",
        True,
        0.001,
        60100.0,
        {"limit": {"tif": "Gtc"}},
        cloid=Cloid.from_str(cloid_of(order.client_id)),
    )
    assert placed["status"] == "ok"
    found = await hl_venue.lookup(order.client_id, None)
    assert found is not None and found.status == "filled"
    assert found.client_id == order.client_id and found.filled_qty == Decimal("0.001")
