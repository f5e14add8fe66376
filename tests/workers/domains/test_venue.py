"""The simulated venue: matching, faults, idempotency and durability on a real SQLite file."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from store import World
from tests.support.factories import ORDER_PAYLOAD
from tests.support.processes import ROOT
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.sim.errors import (
    FaultsError,
    UnknownAccount,
    UnknownInstrument,
    VenueClosed,
    VenueResponseLost,
    VenueTimeout,
)
from workers.domains.finance.sim.faults import FAULTS_ENV, Faults
from workers.domains.finance.sim.listing import render_orders, venue_orders_text
from workers.domains.finance.sim.profile import DEFAULT_INSTRUMENTS
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import Instrument, ProtectiveSpec, VenueOrder

ACCOUNT = "sim-main"
BTC = "BTC-PERP"
ETH = "ETH-PERP"
D = Decimal


def order(
    client_id: str = "c1",
    *,
    side: str = "buy",
    qty: str = "0.001",
    price: str | None = "60000",
    tif: str = "GTC",
    instrument: str = BTC,
    order_type: str = "limit",
    slippage: str | None = None,
    reduce_only: bool = False,
    stop_loss: str | None = None,
    take_profit: str | None = None,
    leverage: str = "5",
    account: str = ACCOUNT,
) -> VenueOrder:
    protective = None
    if stop_loss is not None or take_profit is not None:
        protective = ProtectiveSpec(
            stop_loss=None if stop_loss is None else D(stop_loss),
            take_profit=None if take_profit is None else D(take_profit),
        )
    return VenueOrder(
        client_id=client_id,
        account=account,
        instrument=instrument,
        side=side,  # type: ignore[arg-type]
        quantity=D(qty),
        order_type=order_type,  # type: ignore[arg-type]
        time_in_force=tif,  # type: ignore[arg-type]
        leverage=D(leverage),
        limit_price=None if price is None else D(price),
        max_slippage_bps=None if slippage is None else D(slippage),
        reduce_only=reduce_only,
        protective=protective,
    )


def market(client_id: str, *, side: str = "buy", qty: str, slippage: str, **kw: Any) -> VenueOrder:
    return order(
        client_id, side=side, qty=qty, price=None, order_type="market", slippage=slippage, **kw
    )


ETH_THIN = Instrument(ETH, D("0.05"), D("0.01"), D("0.01"), D("3000"), liquidity=D("0.05"))


@pytest.fixture
async def thin(tmp_path: Path) -> AsyncIterator[SimVenue]:
    """ETH-PERP with only 0.05 fillable at the mark at once."""
    v = await SimVenue.open(tmp_path / "thin.db", instruments=[DEFAULT_INSTRUMENTS[0], ETH_THIN])
    yield v
    await v.close()


async def position(venue: SimVenue, instrument: str) -> tuple[Decimal, Decimal] | None:
    pos = (await venue.observe(ACCOUNT)).positions.get(instrument)
    return None if pos is None else (pos.qty, pos.avg_price)


# -- limit orders against the mark -------------------------------------------------------------
async def test_limit_buy_at_the_mark_fills_at_once_as_taker(venue: SimVenue) -> None:
    sub = await venue.submit(order("c1", qty="0.002", price="60000"))
    o = sub.order
    assert sub.created and o.status == "filled" and o.world is World.SIMULATED
    assert (o.filled_qty, o.remaining_qty, o.avg_price) == (D("0.002"), D(0), D("60000"))
    [fill] = o.fills
    assert (fill.quantity, fill.price, fill.liquidity) == (D("0.002"), D("60000"), "taker")
    assert fill.fee == D("0.06") == o.fees  # 0.002 * 60000 * 0.0005
    assert fill.fee_currency == o.fee_currency == "USDC"
    assert await position(venue, BTC) == (D("0.002"), D("60000"))


async def test_limit_buy_above_the_mark_fills_at_the_mark_not_at_its_limit(
    venue: SimVenue,
) -> None:
    o = (await venue.submit(order("c1", price="60500"))).order
    assert o.status == "filled" and o.avg_price == D("60000")
    assert o.fills[0].price == D("60000")


async def test_limit_buy_below_the_mark_rests_as_an_open_order(venue: SimVenue) -> None:
    o = (await venue.submit(order("c1", qty="0.003", price="59000"))).order
    assert o.status == "resting" and o.filled_qty == 0 and o.fills == ()
    assert o.remaining_qty == D("0.003") and o.avg_price is None
    seen = await venue.observe(ACCOUNT)
    assert seen.positions == {}
    [open_order] = seen.open_orders
    assert (open_order.client_id, open_order.side, open_order.remaining_qty, open_order.price) == (
        "c1",
        "buy",
        D("0.003"),
        D("59000"),
    )
    assert await venue.tick() == []  # the mark has not reached it
    assert (await venue.lookup("c1")).status == "resting"  # type: ignore[union-attr]


async def test_limit_sells_are_symmetric(venue: SimVenue) -> None:
    above = (await venue.submit(order("s1", side="sell", price="60500"))).order
    below = (await venue.submit(order("s2", side="sell", price="59500"))).order
    assert above.status == "resting"
    assert below.status == "filled" and below.avg_price == D("60000")
    assert await position(venue, BTC) == (D("-0.001"), D("60000"))


async def test_resting_order_fills_over_time_partially_then_fully_as_maker(
    tmp_path: Path,
) -> None:
    fixed = datetime(2030, 1, 1, tzinfo=UTC)
    async with await SimVenue.open(
        tmp_path / "v.db", faults=Faults.parse("partial_fill=0.5"), clock=lambda: fixed
    ) as venue:
        await venue.submit(order("r1", qty="0.002", price="59000"))
        assert await venue.advance(1) == []  # mark 60000 has not crossed 59000
        await venue.set_mark(BTC, D("58900"))

        [first] = await venue.advance(1)
        assert first.client_id == "r1" and first.status == "partially_filled"
        assert (first.filled_qty, first.remaining_qty) == (D("0.001"), D("0.001"))
        [open_order] = (await venue.observe(ACCOUNT)).open_orders
        assert open_order.remaining_qty == D("0.001") and open_order.status == "partially_filled"

        [second] = await venue.advance(1)
        assert second.status == "filled" and second.remaining_qty == 0
        # Resting orders fill at their own limit, as maker: 0.001 * 59000 * 0.0002 each.
        assert [(f.quantity, f.price, f.liquidity, f.fee) for f in second.fills] == [
            (D("0.001"), D("59000"), "maker", D("0.0118")),
            (D("0.001"), D("59000"), "maker", D("0.0118")),
        ]
        assert second.fees == D("0.0236") and second.avg_price == D("59000")
        assert second.fills[1].at - second.fills[0].at == timedelta(seconds=1)
        assert (await venue.observe(ACCOUNT)).open_orders == ()
        assert await position(venue, BTC) == (D("0.002"), D("59000"))


async def test_without_partial_fill_a_crossed_resting_order_fills_whole_on_one_tick(
    venue: SimVenue,
) -> None:
    await venue.submit(order("r1", qty="0.003", price="59000"))
    await venue.set_mark(BTC, D("59000"))
    [state] = await venue.tick()
    assert state.status == "filled" and len(state.fills) == 1
    assert state.fills[0].quantity == D("0.003")


async def test_average_entry_price_over_fills_at_different_prices(venue: SimVenue) -> None:
    await venue.submit(order("a", qty="0.002", price="60000"))
    await venue.set_mark(BTC, D("60003"))
    await venue.submit(order("b", qty="0.001", price="60003"))
    assert await position(venue, BTC) == (D("0.003"), D("60001"))  # (120 + 60.003) / 0.003
    await venue.submit(order("c", side="sell", qty="0.001", price="60003"))
    assert await position(venue, BTC) == (D("0.002"), D("60001"))  # reducing keeps the entry
    await venue.submit(order("d", side="sell", qty="0.005", price="60003"))
    assert await position(venue, BTC) == (D("-0.003"), D("60003"))  # flipped at the fill


# -- time in force, post-only, reduce-only, market ---------------------------------------------
async def test_ioc_that_cannot_fill_is_cancelled_with_nothing_filled(thin: SimVenue) -> None:
    o = (await thin.submit(order("i1", instrument=ETH, qty="0.01", price="2990", tif="IOC"))).order
    assert o.status == "cancelled" and o.filled_qty == 0 and o.fills == ()
    assert "IOC" in (o.reason or "")
    assert (await thin.observe(ACCOUNT)).open_orders == ()


async def test_ioc_fills_what_it_can_now_and_cancels_the_rest(thin: SimVenue) -> None:
    o = (await thin.submit(order("i2", instrument=ETH, qty="0.10", price="3001", tif="IOC"))).order
    assert o.status == "cancelled"
    assert (o.filled_qty, o.remaining_qty, o.avg_price) == (D("0.05"), D(0), D("3000"))
    assert "remaining 0.05 cancelled" in (o.reason or "")
    seen = await thin.observe(ACCOUNT)
    assert seen.open_orders == () and seen.positions[ETH].qty == D("0.05")


async def test_fok_fills_everything_now_or_nothing(thin: SimVenue) -> None:
    too_big = await thin.submit(order("f1", instrument=ETH, qty="0.10", price="3001", tif="FOK"))
    assert too_big.order.status == "cancelled" and too_big.order.fills == ()
    assert "FOK" in (too_big.order.reason or "")
    assert await position(thin, ETH) is None
    fits = await thin.submit(order("f2", instrument=ETH, qty="0.05", price="3001", tif="FOK"))
    assert fits.order.status == "filled" and fits.order.filled_qty == D("0.05")
    below = await thin.submit(order("f3", instrument=ETH, qty="0.01", price="2999", tif="FOK"))
    assert below.order.status == "cancelled" and below.order.fills == ()


async def test_gtc_takes_what_is_there_and_rests_the_rest(thin: SimVenue) -> None:
    o = (await thin.submit(order("g1", instrument=ETH, qty="0.10", price="3001"))).order
    assert o.status == "partially_filled" and o.filled_qty == D("0.05")
    [open_order] = (await thin.observe(ACCOUNT)).open_orders
    assert (open_order.remaining_qty, open_order.price) == (D("0.05"), D("3001"))


async def test_post_only_is_rejected_if_it_would_take_and_rests_otherwise(
    venue: SimVenue,
) -> None:
    taking = (await venue.submit(order("p1", price="60000", tif="POST_ONLY"))).order
    assert taking.status == "rejected" and taking.fills == ()
    assert "would take liquidity" in (taking.reason or "")
    making = (await venue.submit(order("p2", price="59999.5", tif="POST_ONLY"))).order
    assert making.status == "resting"
    await venue.set_mark(BTC, D("59999.5"))
    [filled] = await venue.tick()
    assert filled.status == "filled" and filled.fills[0].liquidity == "maker"
    assert filled.fees == D("0.0119999")  # 0.001 * 59999.5 * 0.0002
    assert await position(venue, BTC) == (D("0.001"), D("59999.5"))


async def test_reduce_only_never_opens_increases_or_flips(venue: SimVenue) -> None:
    opening = (await venue.submit(order("r0", reduce_only=True))).order
    assert opening.status == "rejected" and "open or increase" in (opening.reason or "")
    await venue.submit(order("long", qty="0.003"))
    more = (await venue.submit(order("r1", reduce_only=True))).order
    assert more.status == "rejected" and "open or increase" in (more.reason or "")
    flip = (await venue.submit(order("r2", side="sell", qty="0.004", reduce_only=True))).order
    assert flip.status == "rejected" and "flip" in (flip.reason or "")
    assert "at most 0.003" in (flip.reason or "")
    ok = (await venue.submit(order("r3", side="sell", qty="0.002", reduce_only=True))).order
    assert ok.status == "filled"
    assert await position(venue, BTC) == (D("0.001"), D("60000"))


async def test_resting_reduce_only_fills_at_most_what_is_left_to_reduce(venue: SimVenue) -> None:
    await venue.submit(order("long", qty="0.003"))
    await venue.submit(order("tp", side="sell", qty="0.003", price="60500", reduce_only=True))
    await venue.submit(order("out", side="sell", qty="0.002", price="60000"))  # elsewhere
    await venue.set_mark(BTC, D("60500"))
    [state] = await venue.tick()
    assert state.status == "cancelled" and state.filled_qty == D("0.001")
    assert "reduce-only" in (state.reason or "")
    assert await position(venue, BTC) is None  # flat, never flipped short


async def test_market_order_fills_at_the_mark_and_never_rests(thin: SimVenue) -> None:
    o = (await thin.submit(market("m1", instrument=ETH, qty="0.03", slippage="10"))).order
    assert o.status == "filled" and o.avg_price == D("3000")
    assert o.fills[0].liquidity == "taker" and o.fees == D("0.045")  # 0.03 * 3000 * 0.0005
    big = (await thin.submit(market("m2", instrument=ETH, qty="0.08", slippage="10"))).order
    assert big.status == "cancelled" and big.filled_qty == D("0.05")
    assert (await thin.observe(ACCOUNT)).open_orders == ()


async def test_market_order_beyond_its_slippage_bound_is_rejected(tmp_path: Path) -> None:
    async with await SimVenue.open(tmp_path / "v.db", faults=Faults(slippage_bps=D("7"))) as venue:
        await venue.set_mark(ETH, D("3000.05"))
        tight = await venue.submit(
            market("m1", side="sell", instrument=ETH, qty="0.01", slippage="5")
        )
        assert tight.order.status == "rejected" and tight.order.fills == ()
        assert "beyond max_slippage_bps 5" in (tight.order.reason or "")
        ok = await venue.submit(market("m2", side="sell", instrument=ETH, qty="0.01", slippage="8"))
        # 3000.05 * (1 - 0.0007) = 2997.949965, put on the 0.05 tick against the seller
        assert ok.order.status == "filled" and ok.order.avg_price == D("2997.90")
        # 3000.05 * 1.0007 = 3002.150035 -> 3002.20 for the buyer: the tick counts too,
        # so a bound of exactly 7 bps refuses it and 8 bps admits it.
        edge = await venue.submit(market("m3", instrument=ETH, qty="0.01", slippage="7"))
        assert edge.order.status == "rejected" and "3002.20" in (edge.order.reason or "")
        buy = await venue.submit(market("m4", instrument=ETH, qty="0.01", slippage="8"))
        assert buy.order.status == "filled" and buy.order.avg_price == D("3002.2")


# -- idempotency and faults -------------------------------------------------------------------
async def test_second_submit_with_the_same_client_id_returns_the_same_order(
    venue: SimVenue,
) -> None:
    first = await venue.submit(order("dup"))
    second = await venue.submit(order("dup"))
    assert first.created and not second.created and second.matches
    assert second.order.submit_count == 2 and len(second.order.fills) == 1
    assert second.order.fills == first.order.fills
    assert [(o.client_id, o.submit_count) for o in await venue.orders()] == [("dup", 2)]
    assert await position(venue, BTC) == (D("0.001"), D("60000"))  # not 0.002
    changed = await venue.submit(order("dup", qty="0.005"))
    assert not changed.created and not changed.matches  # an executor bug made visible
    assert changed.order.quantity == D("0.001") and changed.order.submit_count == 3


async def test_concurrent_submits_of_one_client_id_place_one_order(venue: SimVenue) -> None:
    results = await asyncio.gather(*[venue.submit(order("race")) for _ in range(20)])
    assert sum(r.created for r in results) == 1
    state = await venue.lookup("race")
    assert state is not None and state.submit_count == 20 and len(state.fills) == 1
    assert len(await venue.orders()) == 1
    assert await position(venue, BTC) == (D("0.001"), D("60000"))


async def test_two_venue_handles_on_one_file_still_place_one_order(tmp_path: Path) -> None:
    """Two replicas (two connections) racing on one client id: BEGIN IMMEDIATE decides."""
    path = tmp_path / "shared.db"
    async with await SimVenue.open(path) as one, await SimVenue.open(path) as two:
        results = await asyncio.gather(
            *[handle.submit(order("shared")) for _ in range(10) for handle in (one, two)]
        )
        assert sum(r.created for r in results) == 1
        state = await two.lookup("shared")
        assert state is not None and state.submit_count == 20 and len(state.fills) == 1
        assert await position(one, BTC) == (D("0.001"), D("60000"))


async def test_lose_response_stores_the_order_and_lookup_finds_it(venue: SimVenue) -> None:
    venue.faults = Faults(lose_response=True)
    with pytest.raises(VenueResponseLost) as lost:
        await venue.submit(order("amb", qty="0.002"))
    assert lost.value.client_id == "amb"
    venue.faults = Faults()
    state = await venue.lookup("amb")
    assert state is not None and state.status == "filled" and state.filled_qty == D("0.002")
    assert state.submit_count == 1
    assert await position(venue, BTC) == (D("0.002"), D("60000"))


async def test_timeout_stores_nothing(venue: SimVenue) -> None:
    venue.faults = Faults(timeout=True, lose_response=True, reject=True)  # timeout wins
    with pytest.raises(VenueTimeout):
        await venue.submit(order("t1"))
    venue.faults = Faults()
    assert await venue.lookup("t1") is None
    assert await venue.orders() == []
    assert await position(venue, BTC) is None
    again = await venue.submit(order("t1"))
    assert again.created and again.order.submit_count == 1


async def test_reject_fault_rejects_with_a_reason_and_stays_rejected(venue: SimVenue) -> None:
    venue.faults = Faults.parse("reject")
    o = (await venue.submit(order("rj"))).order
    assert o.status == "rejected" and o.reason == "simulated fault: reject"
    assert o.fills == () and o.filled_qty == 0
    venue.faults = Faults()
    again = await venue.submit(order("rj"))
    assert not again.created and again.order.status == "rejected"
    assert await position(venue, BTC) is None


async def test_latency_delays_every_answer_and_a_caller_timeout_leaves_it_ambiguous(
    venue: SimVenue,
) -> None:
    venue.faults = Faults(latency_ms=200)
    started = time.perf_counter()
    await venue.submit(order("slow"))
    assert time.perf_counter() - started >= 0.2
    started = time.perf_counter()
    await venue.lookup("slow")
    assert time.perf_counter() - started >= 0.2
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(venue.submit(order("late")), timeout=0.05)
    venue.faults = Faults()
    late = await venue.lookup("late")  # the venue did it; only the answer was late
    assert late is not None and late.status == "filled"


async def test_fees_unknown_are_none_never_zero(venue: SimVenue) -> None:
    venue.faults = Faults(fees_unknown=True)
    o = (await venue.submit(order("nf"))).order
    assert o.status == "filled" and o.fills[0].fee is None and o.fees is None
    assert o.to_json()["fees"] is None


# -- protective children ----------------------------------------------------------------------
async def test_protective_children_are_placed_after_a_fill_with_their_own_results(
    tmp_path: Path,
) -> None:
    async with await SimVenue.open(tmp_path / "v.db", faults=Faults(partial_fill=D("0.5"))) as v:
        parent = await v.submit(
            order("p", qty="0.002", price="59000", stop_loss="58000", take_profit="61000")
        )
        assert parent.order.status == "resting" and parent.order.children == ()
        assert await v.lookup("p:sl") is None and await v.lookup("p:tp") is None

        await v.set_mark(BTC, D("59000"))
        await v.advance(1)
        p = await v.lookup("p")
        assert p is not None and p.status == "partially_filled"
        sl, tp = p.child("stop_loss"), p.child("take_profit")
        assert sl is not None and tp is not None
        assert (sl.client_id, tp.client_id) == ("p:sl", "p:tp")
        for child, trigger in ((sl, D("58000")), (tp, D("61000"))):
            assert child.status == "accepted" and child.parent_client_id == "p"
            assert child.side == "sell" and child.reduce_only and child.quantity == D("0.001")
            assert child.trigger_price == trigger and child.submit_count == 1

        await v.advance(1)
        tp_state = await v.lookup("p:tp")
        assert tp_state is not None and tp_state.quantity == D("0.002")  # grew with the parent

        await v.set_mark(BTC, D("61000"))
        changed = {s.client_id: s for s in await v.tick()}
        tp_done, sl_done = changed["p:tp"], changed["p:sl"]
        assert tp_done.status == "filled" and tp_done.filled_qty == D("0.002")
        assert tp_done.fills[0].price == D("61000") and tp_done.fees == D("0.061")
        assert sl_done.status == "cancelled" and sl_done.fills == ()
        assert "one-cancels-other" in (sl_done.reason or "")
        assert await position(v, BTC) is None
        final = await v.lookup("p")
        assert final is not None and final.status == "filled"
        assert [(c.client_id, c.status) for c in final.children] == [
            ("p:sl", "cancelled"),
            ("p:tp", "filled"),
        ]


async def test_a_child_that_would_trigger_at_once_is_rejected_alone(venue: SimVenue) -> None:
    sub = await venue.submit(order("p", stop_loss="60500", take_profit="62000"))
    assert sub.order.status == "filled"
    sl, tp = sub.order.child("stop_loss"), sub.order.child("take_profit")
    assert sl is not None and sl.status == "rejected"
    assert "would trigger at once" in (sl.reason or "")
    assert tp is not None and tp.status == "accepted"


async def test_short_position_stop_loss_buys_back_when_the_mark_rises(venue: SimVenue) -> None:
    await venue.submit(
        order(
            "s",
            side="sell",
            instrument=ETH,
            qty="0.02",
            price="3000",
            stop_loss="3100",
            take_profit="2900",
        )
    )
    await venue.set_mark(ETH, D("3100.05"))
    changed = {s.client_id: s for s in await venue.tick()}
    assert changed["s:sl"].status == "filled" and changed["s:sl"].side == "buy"
    assert changed["s:sl"].avg_price == D("3100.05")
    assert changed["s:tp"].status == "cancelled"
    assert await position(venue, ETH) is None


async def test_off_tick_protective_price_rejects_the_parent_before_anything_fills(
    venue: SimVenue,
) -> None:
    o = (await venue.submit(order("p", stop_loss="58000.3"))).order
    assert o.status == "rejected" and "protective.stop_loss 58000.3" in (o.reason or "")
    assert o.fills == () and o.children == ()


# -- preflight data: tick, lot, minimum, never rounded -----------------------------------------
MIN_PERP = Instrument("MIN-PERP", D("0.1"), D("0.001"), D("0.005"), D("100"))

TICK_LOT_CASES = [
    # instrument, quantity, limit price, expected refusal (None: accepted)
    (BTC, "0.001", "60000", None),
    (BTC, "0.010", "59999.5", None),
    (BTC, "0.0015", "60000", "quantity 0.0015 is not a multiple of the lot 0.001"),
    (BTC, "0.0001", "59000", "quantity 0.0001 is not a multiple of the lot 0.001"),
    (BTC, "0.001", "60000.25", "limit_price 60000.25 is not a multiple of the tick 0.5"),
    (BTC, "0.001", "59999.9", "limit_price 59999.9 is not a multiple of the tick 0.5"),
    (ETH, "0.01", "3000.05", None),
    (ETH, "0.25", "2999.95", None),
    (ETH, "0.015", "3000", "quantity 0.015 is not a multiple of the lot 0.01"),
    (ETH, "0.001", "3000", "quantity 0.001 is not a multiple of the lot 0.01"),
    (ETH, "0.01", "3000.03", "limit_price 3000.03 is not a multiple of the tick 0.05"),
    ("MIN-PERP", "0.004", "99.9", "quantity 0.004 is below the minimum 0.005"),
    ("MIN-PERP", "0.005", "99.9", None),
    ("MIN-PERP", "0.005", "99.95", "limit_price 99.95 is not a multiple of the tick 0.1"),
    ("NOPE-PERP", "1", "1", "unknown instrument 'NOPE-PERP'"),
]


@pytest.mark.parametrize(("instrument", "qty", "price", "refusal"), TICK_LOT_CASES)
async def test_tick_lot_and_minimum_are_checked_never_rounded(
    tmp_path: Path, instrument: str, qty: str, price: str, refusal: str | None
) -> None:
    async with await SimVenue.open(
        tmp_path / "v.db", instruments=[*DEFAULT_INSTRUMENTS, MIN_PERP]
    ) as venue:
        o = (await venue.submit(order("x", instrument=instrument, qty=qty, price=price))).order
        # Whatever the answer, the order is stored exactly as submitted.
        assert str(o.quantity) == qty and str(o.limit_price) == price
        if refusal is None:
            assert o.status != "rejected", o.reason
        else:
            assert o.status == "rejected" and refusal in (o.reason or "")
            assert o.fills == () and o.filled_qty == 0
            assert (await venue.observe(ACCOUNT)).positions == {}


async def test_observe_exposes_what_preflight_needs(tmp_path: Path) -> None:
    fixed = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    async with await SimVenue.open(tmp_path / "v.db", clock=lambda: fixed) as venue:
        seen = await venue.observe(ACCOUNT)
        assert seen.complete and seen.world is World.SIMULATED and seen.account_mode == "one_way"
        assert seen.observed_at == fixed and seen.venue == "sim"
        got = {
            name: (str(i.tick), str(i.lot), str(i.min_qty), str(i.mark))
            for name, i in seen.instruments.items()
        }
        assert got == {
            BTC: ("0.5", "0.001", "0.001", "60000"),
            ETH: ("0.05", "0.01", "0.01", "3000"),
        }
        await venue.advance(5)
        assert (await venue.observe(ACCOUNT)).observed_at == fixed + timedelta(seconds=5)
        with pytest.raises(UnknownAccount, match="'elsewhere'"):
            await venue.observe("elsewhere")
        nobody = (await venue.submit(order("x", account="elsewhere"))).order
        assert nobody.status == "rejected" and "unknown account" in (nobody.reason or "")
        caps = await venue.capabilities()
        assert (
            caps.world is World.SIMULATED
            and caps.accounts == {ACCOUNT}
            and caps.instruments == {BTC, ETH}
        )
        assert caps.order_types == {"limit", "market"} and caps.account_modes == {"one_way"}
        assert caps.time_in_force == {"GTC", "IOC", "FOK", "POST_ONLY"}


async def test_incomplete_observation_says_so(venue: SimVenue) -> None:
    await venue.submit(order("rest", price="59000"))
    assert len((await venue.observe(ACCOUNT)).open_orders) == 1
    venue.faults = Faults.parse("incomplete")
    seen = await venue.observe(ACCOUNT)
    assert not seen.complete and seen.open_orders == ()


# -- exact decimals ---------------------------------------------------------------------------
def _walk(value: object) -> list[object]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [x for f in dataclasses.fields(value) for x in _walk(getattr(value, f.name))]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _walk(v)]
    if isinstance(value, tuple | list):
        return [x for v in value for x in _walk(v)]
    return [value]


async def test_prices_quantities_and_fees_are_exact_decimals(
    venue: SimVenue, tmp_path: Path
) -> None:
    await venue.set_mark(BTC, D("60000.5"))
    o = (await venue.submit(order("x", qty="0.001", price="60000.5"))).order
    assert o.fees == D("0.03000025") and str(o.fees) == "0.03000025"
    assert 0.001 * 60000.5 * 0.0005 != 0.03000025  # what a float would have made of it
    await venue.submit(order("e", instrument=ETH, qty="0.07", price="3000.05"))
    await venue.set_mark(ETH, D("3000.05"))
    await venue.submit(order("e2", instrument=ETH, qty="0.07", price="3000.05"))
    eth = await venue.lookup("e2")
    assert eth is not None and eth.fees == D("0.10500175")  # 0.07 * 3000.05 * 0.0005

    values = _walk(o) + _walk(await venue.observe(ACCOUNT)) + _walk(await venue.orders())
    assert not [v for v in values if isinstance(v, float)]
    assert any(isinstance(v, Decimal) for v in values)
    with sqlite3.connect(tmp_path / "venue.db") as raw:
        fees = raw.execute("SELECT fee, typeof(fee) FROM fills ORDER BY id").fetchall()
        pos = raw.execute("SELECT qty, avg_price FROM positions ORDER BY instrument").fetchall()
    assert fees[0] == ("0.03000025", "text")
    assert pos == [("0.001", "60000.5"), ("0.14", "3000.025")]  # (210 + 210.0035) / 0.14


def test_floats_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(TypeError, match=r"quantity must be a decimal\.Decimal, not float"):
        VenueOrder("c", ACCOUNT, BTC, "buy", 0.001, "limit", "GTC", D("1"), D("60000"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="limit_price"):
        VenueOrder("c", ACCOUNT, BTC, "buy", D("1"), "limit", "GTC", D("1"), 60000.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reserved for protective"):
        order("c:sl")
    with pytest.raises(ValueError, match="client_id"):
        order("")


async def test_set_mark_refuses_floats_and_unknown_instruments(venue: SimVenue) -> None:
    with pytest.raises(TypeError):
        await venue.set_mark(BTC, 61000.0)  # type: ignore[arg-type]
    with pytest.raises(UnknownInstrument):
        await venue.set_mark("NOPE", D("1"))


def test_from_payload_keeps_the_confirmed_decimal_strings_exactly() -> None:
    payload = FinanceOrderV1.model_validate(ORDER_PAYLOAD)
    o = VenueOrder.from_payload("op-1:a1", payload)
    assert (str(o.quantity), str(o.limit_price), str(o.leverage)) == ("0.010", "60000", "2")
    assert o.protective == ProtectiveSpec(D("57000"), D("65000"))
    assert (o.side, o.order_type, o.time_in_force, o.reduce_only) == ("buy", "limit", "GTC", False)


# -- cancel ------------------------------------------------------------------------------------
async def test_cancel_working_orders_only(venue: SimVenue) -> None:
    await venue.submit(order("rest", price="59000"))
    await venue.submit(order("done"))
    cancelled = await venue.cancel("rest")
    assert cancelled is not None and cancelled.status == "cancelled"
    assert cancelled.reason == "cancelled on request" and cancelled.remaining_qty == 0
    done = await venue.cancel("done")
    assert done is not None and done.status == "filled"
    assert await venue.cancel("never") is None
    await venue.set_mark(BTC, D("58000"))
    assert await venue.tick() == []  # a cancelled order never fills
    assert (await venue.observe(ACCOUNT)).open_orders == ()


# -- durability --------------------------------------------------------------------------------
async def test_close_and_reopen_keeps_orders_positions_marks_and_counts(tmp_path: Path) -> None:
    path = tmp_path / "durable.db"
    venue = await SimVenue.open(path)
    await venue.submit(order("f", qty="0.002", stop_loss="59000", take_profit="61000"))
    await venue.submit(order("f"))
    await venue.submit(order("r", price="58000"))
    await venue.submit(order("bad", qty="0.0015"))
    await venue.set_mark(BTC, D("60500"))
    await venue.advance(3)
    before = [o.to_json() for o in await venue.orders()]
    seen = await venue.observe(ACCOUNT)
    await venue.close()
    with pytest.raises(VenueClosed):
        await venue.lookup("f")

    again = await SimVenue.open(path, instruments=list(DEFAULT_INSTRUMENTS))
    try:
        assert [o.to_json() for o in await again.orders()] == before
        reseen = await again.observe(ACCOUNT)
        assert reseen.positions == seen.positions == {BTC: reseen.positions[BTC]}
        assert reseen.positions[BTC].qty == D("0.002")
        assert reseen.open_orders == seen.open_orders and len(reseen.open_orders) == 3
        assert reseen.instruments[BTC].mark == D("60500")  # the stored mark wins
        assert reseen.observed_at >= seen.observed_at  # venue time kept its advance
        repeat = await again.submit(order("f"))
        assert not repeat.created and repeat.order.submit_count == 3
        assert {o.client_id: o.submit_count for o in await again.orders()} == {
            "f": 3,
            "f:sl": 1,
            "f:tp": 1,
            "r": 1,
            "bad": 1,
        }
    finally:
        await again.close()


KILL_SCRIPT = """
import asyncio, os, signal, sys
from decimal import Decimal
from pathlib import Path
from workers.domains.finance.venues.model import VenueOrder
from workers.domains.finance.sim.venue import SimVenue

async def main() -> None:
    venue = await SimVenue.open(Path(sys.argv[1]))
    await venue.submit(VenueOrder("killed", "sim-main", "BTC-PERP", "buy", Decimal("0.004"),
                                  "limit", "GTC", Decimal("3"), Decimal("60000")))
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


async def test_an_answered_submit_survives_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", KILL_SCRIPT, str(path), cwd=ROOT, stderr=subprocess.PIPE
    )
    _, err = await proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err.decode()
    async with await SimVenue.open(path) as venue:
        state = await venue.lookup("killed")
        assert state is not None and state.status == "filled" and state.submit_count == 1
        assert await position(venue, BTC) == (D("0.004"), D("60000"))


# -- faults parsing ----------------------------------------------------------------------------
GOOD_FAULTS: list[tuple[str, Faults]] = [
    ("", Faults()),
    ("   ", Faults()),
    ("reject", Faults(reject=True)),
    (
        "reject,timeout,lose_response,latency_ms=200",
        Faults(reject=True, timeout=True, lose_response=True, latency_ms=200),
    ),
    (" lose_response , latency_ms = 5 ", Faults(lose_response=True, latency_ms=5)),
    (
        "partial_fill=0.25,slippage_bps=12.5,incomplete,fees_unknown",
        Faults(partial_fill=D("0.25"), slippage_bps=D("12.5"), incomplete=True, fees_unknown=True),
    ),
]


@pytest.mark.parametrize(("spec", "expected"), GOOD_FAULTS)
def test_faults_parse(spec: str, expected: Faults) -> None:
    parsed = Faults.parse(spec)
    assert parsed == expected
    assert Faults.parse(str(parsed)) == parsed


BAD_FAULTS = [
    ("rejct", "'rejct' is unknown"),
    ("reject,lose_respons", "'lose_respons' is unknown"),
    ("reject,,timeout", "item 2 is empty"),
    ("reject,", "item 2 is empty"),
    ("latency_ms", "'latency_ms' needs a value"),
    ("latency_ms=", "'latency_ms' needs a value"),
    ("latency_ms=abc", "'latency_ms=abc'"),
    ("latency_ms=-5", "'latency_ms=-5'"),
    ("latency_ms=1.5", "'latency_ms=1.5'"),
    ("latency_ms=900000", "latency_ms=900000"),
    ("reject=1", "'reject=1': 'reject' takes no value"),
    ("timeout,timeout", "repeats 'timeout'"),
    ("partial_fill=0", "partial_fill=0"),
    ("partial_fill=1.5", "partial_fill=1.5"),
    ("slippage_bps=1e3", "'slippage_bps=1e3'"),
    ("slippage_bps=-1", "'slippage_bps=-1'"),
]


@pytest.mark.parametrize(("spec", "fragment"), BAD_FAULTS)
def test_faults_parse_errors_name_the_bad_item(spec: str, fragment: str) -> None:
    with pytest.raises(FaultsError) as error:
        Faults.parse(spec)
    assert fragment in str(error.value)
    assert isinstance(error.value, ValueError)


def test_faults_from_env_prefers_the_variable_over_config() -> None:
    assert Faults.from_env({FAULTS_ENV: "timeout"}, default="reject") == Faults(timeout=True)
    assert Faults.from_env({}, default="reject") == Faults(reject=True)
    assert Faults.from_env({FAULTS_ENV: ""}, default="reject") == Faults()
    assert not Faults().active and Faults(latency_ms=1).active


# -- listing for `countersign venue orders` -----------------------------------------------------
async def test_render_orders_as_text_and_json(venue: SimVenue, tmp_path: Path) -> None:
    await venue.submit(order("a1", stop_loss="59000"))
    await venue.submit(order("a1"))
    await venue.submit(order("b2", price="59000.25"))
    orders = await venue.orders()

    listing = render_orders(orders)
    lines = listing.splitlines()
    assert lines[0] == "SIMULATED venue 'sim': 3 order(s)"
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert set(rows) == {"a1", "a1:sl", "b2"}
    assert rows["a1"][rows["a1"].index("filled") + 1] == "2"  # submitted twice
    assert rows["a1:sl"][1] == "sl" and "accepted" in rows["a1:sl"]
    assert "rejected" in rows["b2"] and "tick" in listing

    document = json.loads(render_orders(orders, as_json=True))
    assert document["simulated"] is True and document["venue"] == "sim"
    assert document["world"] == "simulated"
    by_id = {o["client_id"]: o for o in document["orders"]}
    assert by_id["a1"]["submit_count"] == 2 and by_id["a1"]["fees"] == "0.03"
    assert by_id["a1"]["fills"][0]["price"] == "60000"
    assert by_id["a1:sl"]["parent_client_id"] == "a1" and by_id["a1:sl"]["role"] == "stop_loss"
    assert by_id["b2"]["status"] == "rejected" and by_id["b2"]["limit_price"] == "59000.25"
    assert "children" not in by_id["a1"]  # children are rows of their own

    assert render_orders([]) == "SIMULATED venue 'sim': 0 order(s)\n"
    text = await venue_orders_text(venue.path)
    assert "a1:sl" in text
    missing = tmp_path / "missing.db"
    with pytest.raises(FileNotFoundError):
        await venue_orders_text(missing)
    assert not missing.exists()
