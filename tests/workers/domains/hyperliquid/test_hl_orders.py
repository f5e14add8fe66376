"""Orders through the Hyperliquid adapter against the running hlsandbox: the SDK's wire,
signing and request code end to end, with the evidence recorded before each POST."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

from hlsandbox.app import WEIGHTS_KEY
from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import throwaway_key
from tests.support.waiting import eventually
from workers.domains.finance.hyperliquid.venue import HyperliquidVenue
from workers.domains.finance.hyperliquid.wire import cloid_of
from workers.domains.finance.venues.model import VenueOrder

NewOrder = Callable[..., VenueOrder]


async def test_a_crossing_limit_fills_with_its_fee_and_fee_token(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(limit_price=Decimal("60100"), quantity=Decimal("0.002"))
    submission = await hl_venue.submit(order, evidence)
    state = submission.order
    assert submission.created
    assert state.status == "filled" and state.filled_qty == Decimal("0.002")
    assert [f.price for f in state.fills] == [Decimal("60000")]  # taker at the mark
    assert state.fills[0].liquidity == "taker"
    assert state.fees == Decimal("0.054")  # 0.002 x 60000 x 0.00045
    assert state.fee_currency == "USDC"
    assert str(state.world) == "emulator"
    # the evidence was written before the sandbox saw any request with this cloid
    assert evidence.seen_at_record == {order.client_id: 0}
    recorded = evidence.evidence[order.client_id]
    assert set(recorded) >= {"nonce", "expires_after", "action", "signature", "cloids", "signer"}
    assert recorded["cloids"] == {order.client_id: cloid_of(order.client_id)}
    assert recorded["signer"] == hl_venue._accounts["hl-main"].key.address
    assert await hl_sandbox.requests_seen(cloid_of(order.client_id)) == 1
    # a lookup reads the same state; a second submit of the client id places nothing
    assert await hl_venue.lookup(order.client_id, recorded) == state
    again = await hl_venue.submit(order, evidence)
    assert not again.created and again.order.status == "filled"
    assert await hl_sandbox.requests_seen(cloid_of(order.client_id)) == 1


async def test_a_resting_order_fills_when_the_mark_moves_and_watch_names_it(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(limit_price=Decimal("59000"))
    state = (await hl_venue.submit(order, evidence)).order
    assert state.status == "resting" and state.remaining_qty == Decimal("0.001")
    assert state.fees == Decimal(0) and state.fills == ()
    assert not await hl_venue.watch()  # nothing changed yet
    assert await hl_sandbox.set_mark("BTC", "58900") == 1
    changed: list[str] = []

    async def names_it() -> bool:
        changed.extend(await hl_venue.watch())
        return order.client_id in changed

    await eventually(names_it, what="watch() names the order that filled")
    filled = await hl_venue.lookup(order.client_id, evidence.evidence[order.client_id])
    assert filled is not None and filled.status == "filled"
    assert filled.fills[0].price == Decimal("59000") and filled.fills[0].liquidity == "maker"
    assert filled.fees == Decimal("0.00885")  # 0.001 x 59000 x 0.00015
    assert hl_venue._memory.following == {}  # settled: no longer followed


async def test_protective_children_wait_then_trigger(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(limit_price=Decimal("60000"), protective=(Decimal("58000"), Decimal("62000")))
    state = (await hl_venue.submit(order, evidence)).order
    assert state.status == "filled"
    stop, take = state.child("stop_loss"), state.child("take_profit")
    assert stop is not None and take is not None
    assert (stop.status, stop.side, stop.reduce_only, stop.trigger_price) == (
        "accepted",
        "sell",
        True,
        Decimal("58000"),
    )
    assert take.status == "accepted" and take.client_id == order.client_id + ":tp"
    await hl_sandbox.set_mark("BTC", "62500")
    after = await hl_venue.lookup(order.client_id, evidence.evidence[order.client_id])
    assert after is not None
    take_after, stop_after = after.child("take_profit"), after.child("stop_loss")
    assert take_after is not None and take_after.status == "filled"
    assert take_after.fills and take_after.fills[0].fee is not None
    assert stop_after is not None and stop_after.status == "cancelled"
    assert "siblingFilledCanceled" in str(stop_after.reason)
    assert await hl_venue.fills(order.client_id + ":tp") == take_after.fills


async def test_a_fill_without_fee_evidence_has_an_unknown_fee(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    await hl_sandbox.fault("drop_fee")
    state = (await hl_venue.submit(new_order(limit_price=Decimal("60100")), evidence)).order
    assert state.status == "filled" and len(state.fills) == 1
    assert state.fills[0].fee is None
    assert state.fees is None  # unknown, never zero


async def test_a_venue_rejection_is_a_state_with_the_venues_text(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    tiny = new_order(quantity=Decimal("0.0001"), limit_price=Decimal("59000"))  # $5.9
    state = (await hl_venue.submit(tiny, evidence)).order
    assert state.status == "rejected"
    assert "Order must have minimum value of $10." in str(state.reason)
    ioc = new_order(time_in_force="IOC", limit_price=Decimal("59000"))
    state = (await hl_venue.submit(ioc, evidence)).order
    assert state.status == "rejected"


async def test_precision_refusals_send_nothing(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    for order in (
        new_order(limit_price=Decimal("60000.5")),  # 6 significant figures
        new_order(quantity=Decimal("0.000001")),  # more decimals than szDecimals 5
        new_order(time_in_force="FOK"),
        new_order(instrument="DOGE-PERP"),  # not listed
    ):
        state = (await hl_venue.submit(order, evidence)).order
        assert state.status == "rejected", order
        assert str(state.reason).startswith(("refused before sending", "instrument")), state
        assert await hl_sandbox.requests_seen(cloid_of(order.client_id)) == 0
    assert evidence.evidence == {}  # nothing was ever about to leave


async def test_a_market_order_goes_out_as_ioc_inside_its_bound(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(
        order_type="market",
        limit_price=None,
        time_in_force="IOC",
        max_slippage_bps=Decimal("50"),
        side="sell",
    )
    state = (await hl_venue.submit(order, evidence)).order
    assert state.status == "filled" and state.fills[0].price == Decimal("60000")
    wire = evidence.evidence[order.client_id]["action"]["orders"][0]
    assert wire["t"] == {"limit": {"tif": "Ioc"}}
    assert Decimal(wire["p"]) >= Decimal("60000") * (1 - Decimal("0.005"))
    assert wire["p"] == "59700"


async def test_a_key_not_approved_for_the_account_sends_nothing(
    open_hl: Callable[..., Awaitable[HyperliquidVenue]],
    hl_sandbox: RunningSandbox,
    evidence: Any,
    new_order: NewOrder,
) -> None:
    stranger = throwaway_key("not approved anywhere")
    venue = await open_hl(stranger.key.hex())
    order = new_order()
    state = (await venue.submit(order, evidence)).order
    assert state.status == "rejected"
    assert str(state.reason).startswith("identity mismatch, not an order rejection")
    assert stranger.address in str(state.reason) and "not approved" in str(state.reason)
    assert stranger.key.hex()[2:] not in str(state.reason)
    assert await hl_sandbox.requests_seen(cloid_of(order.client_id)) == 0


async def test_an_agent_of_another_account_sends_nothing(
    open_hl: Callable[..., Awaitable[HyperliquidVenue]],
    hl_sandbox: RunningSandbox,
    evidence: Any,
    new_order: NewOrder,
) -> None:
    # the agent is approved for the fixture's account; the config names another (say a
    # subaccount): its orders would land on one account while reads checked the other
    other = throwaway_key("another funded account")
    await hl_sandbox.add_account(other.address, "100000")
    venue = await open_hl(address=other.address)
    order = new_order()
    state = (await venue.submit(order, evidence)).order
    assert state.status == "rejected"
    assert f"not for the configured address {other.address}" in str(state.reason)
    assert await hl_sandbox.requests_seen(cloid_of(order.client_id)) == 0


async def test_the_venues_signer_refusal_reads_as_an_identity_mismatch(
    hl_venue: HyperliquidVenue,
    hl_sandbox: RunningSandbox,
    hl_wallets: Any,
    evidence: Any,
    new_order: NewOrder,
) -> None:
    await hl_venue.submit(new_order(limit_price=Decimal("59000")), evidence)  # agent checked
    await hl_sandbox.remove_agent(hl_wallets.agent.address)  # then revoked
    state = (await hl_venue.submit(new_order(), evidence)).order
    assert state.status == "rejected"
    reason = str(state.reason)
    assert reason.startswith("identity mismatch, not an order rejection")
    assert "User or API Wallet" in reason and "does not exist" in reason  # the venue's text


async def test_cancel_by_client_id(
    hl_venue: HyperliquidVenue, evidence: Any, new_order: NewOrder
) -> None:
    order = new_order(limit_price=Decimal("50000"))
    await hl_venue.submit(order, evidence)
    cancelled = await hl_venue.cancel(order.client_id)
    assert cancelled is not None and cancelled.status == "cancelled"
    assert await hl_venue.cancel("cs-never-placed") is None


async def test_reads_observe_capabilities_and_account_state(
    hl_venue: HyperliquidVenue, evidence: Any, new_order: NewOrder
) -> None:
    await hl_venue.submit(new_order(limit_price=Decimal("60100")), evidence)
    resting = new_order(limit_price=Decimal("50000"))
    await hl_venue.submit(resting, evidence)
    capabilities = await hl_venue.capabilities()
    assert capabilities.instruments == {"BTC-PERP", "ETH-PERP", "SOL-PERP"}
    assert capabilities.accounts == {"hl-main"} and capabilities.marks["BTC-PERP"] == 60000
    seen = await hl_venue.observe("hl-main", ["BTC-PERP"])
    btc = seen.instruments["BTC-PERP"]
    assert (btc.tick, btc.lot, btc.min_qty, btc.sig_figs, btc.min_notional) == (
        Decimal("0.1"),
        Decimal("0.00001"),
        Decimal("0.00001"),
        5,
        Decimal(10),
    )
    assert (btc.maker_fee_rate, btc.taker_fee_rate, btc.max_leverage) == (
        Decimal("0.00015"),
        Decimal("0.00045"),
        Decimal(40),
    )
    assert seen.positions["BTC-PERP"].qty == Decimal("0.001")
    assert [o.client_id for o in seen.open_orders] == [resting.client_id]
    assert seen.leverage == {"BTC-PERP": Decimal(20)} and seen.complete
    assert seen.account_mode == "one_way"
    state = await hl_venue.account_state("hl-main")
    assert state.margin_mode == "cross" and state.open_orders == 1
    assert state.balances[0].currency == "USDC"
    facts = {name: (value, ok) for name, value, ok in state.facts}
    assert facts["rate-limit budget"][1]
    agent = hl_venue._accounts["hl-main"].key.address
    assert facts["agent wallet"] == (f"{agent} is approved for {state_address(hl_venue)}", True)


async def test_concurrent_submits_take_distinct_nonces_and_each_lands_once(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    batch = [new_order(limit_price=Decimal("59000")) for _ in range(8)]
    submissions = await asyncio.gather(*(hl_venue.submit(o, evidence) for o in batch))
    assert [s.order.status for s in submissions] == ["resting"] * 8
    nonces = [evidence.evidence[o.client_id]["nonce"] for o in batch]
    assert len(set(nonces)) == 8
    for order in batch:
        assert await hl_sandbox.committed(cloid_of(order.client_id)) == 1
        json.dumps(evidence.evidence[order.client_id])  # evidence is plain JSON


async def test_one_client_id_for_other_terms_is_flagged_and_not_placed(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    first = new_order(limit_price=Decimal("59000"))
    await hl_venue.submit(first, evidence)
    other = new_order(client_id=first.client_id, limit_price=Decimal("58000"))
    again = await hl_venue.submit(other, evidence)
    assert not again.created and not again.matches
    assert await hl_sandbox.requests_seen(cloid_of(first.client_id)) == 1


def state_address(venue: HyperliquidVenue) -> str:
    return venue._accounts["hl-main"].address


async def test_a_quiet_poll_reads_only_order_status(
    open_hl: Callable[..., Awaitable[HyperliquidVenue]],
    hl_sandbox: RunningSandbox,
    evidence: Any,
    new_order: NewOrder,
) -> None:
    venue = await open_hl(poll_s=1e-6)  # every watch() polls
    order = new_order(limit_price=Decimal("59000"))
    await venue.submit(order, evidence)
    assert not await venue.watch()  # the first poll reads the fills once
    spent = hl_sandbox.app[WEIGHTS_KEY].spent["127.0.0.1"] if hl_sandbox.app else None
    assert spent is not None
    before = sum(w for _t, w in spent)
    assert not await venue.watch()
    assert sum(w for _t, w in spent) - before == 2  # one orderStatus, no fills read
    await hl_sandbox.set_mark("BTC", "58000")
    assert await venue.watch() == [order.client_id]


async def test_partial_fills_rest_for_gtc_and_cancel_the_rest_for_ioc(
    hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, evidence: Any, new_order: NewOrder
) -> None:
    await hl_sandbox.set_liquidity("BTC", "0.001")
    gtc = new_order(quantity=Decimal("0.003"), limit_price=Decimal("60100"))
    state = (await hl_venue.submit(gtc, evidence)).order
    assert (state.status, state.filled_qty, state.remaining_qty) == (
        "partially_filled",
        Decimal("0.001"),
        Decimal("0.002"),
    )
    assert len(state.fills) == 1 and state.fees == Decimal("0.027")
    await hl_sandbox.tick()
    later = await hl_venue.lookup(gtc.client_id, evidence.evidence[gtc.client_id])
    assert later is not None and later.filled_qty == Decimal("0.002")
    assert later.status == "partially_filled" and len(later.fills) == 2
    ioc = new_order(quantity=Decimal("0.003"), limit_price=Decimal("60100"), time_in_force="IOC")
    state = (await hl_venue.submit(ioc, evidence)).order
    assert state.status == "cancelled" and state.filled_qty == Decimal("0.001")
    assert state.remaining_qty == 0 and len(state.fills) == 1
    assert state.reason == "the rest did not match at once (IOC) and was cancelled"
