"""The simulated venue's matching as pure functions: a book in, a new book and its writes out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from workers.domains.finance.sim import matching
from workers.domains.finance.sim.book import (
    Book,
    FillMade,
    OrderChanged,
    OrderPlaced,
    PositionChanged,
)
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.rows import PositionRow
from workers.domains.finance.venues.model import Instrument, ProtectiveSpec, VenueOrder

D = Decimal
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
ACCOUNT = "sim-main"
BTC = Instrument("BTC-PERP", D("0.5"), D("0.001"), D("0.001"), D("60000"))
THIN = Instrument("THIN-PERP", D("0.5"), D("0.01"), D("0.01"), D("100"), liquidity=D("0.03"))


def book(*instruments: Instrument, position: Decimal | None = None) -> Book:
    insts = instruments or (BTC,)
    positions = {}
    if position is not None:
        pos = PositionRow(ACCOUNT, insts[0].name, position, D("60000"))
        positions[(ACCOUNT, insts[0].name)] = pos
    return Book(
        instruments={i.name: i for i in insts},
        positions=positions,
        accounts=(ACCOUNT,),
    )


def order(
    client_id: str = "c1",
    *,
    side: str = "buy",
    qty: str = "0.002",
    price: str | None = "60000",
    tif: str = "GTC",
    instrument: str = "BTC-PERP",
    order_type: str = "limit",
    slippage: str | None = None,
    reduce_only: bool = False,
    stop_loss: str | None = None,
    take_profit: str | None = None,
) -> VenueOrder:
    protective = None
    if stop_loss or take_profit:
        protective = ProtectiveSpec(
            stop_loss=D(stop_loss) if stop_loss else None,
            take_profit=D(take_profit) if take_profit else None,
        )
    return VenueOrder(
        client_id=client_id,
        account=ACCOUNT,
        instrument=instrument,
        side=side,  # type: ignore[arg-type]
        quantity=D(qty),
        order_type=order_type,  # type: ignore[arg-type]
        time_in_force=tif,  # type: ignore[arg-type]
        leverage=D("3"),
        limit_price=None if price is None else D(price),
        max_slippage_bps=None if slippage is None else D(slippage),
        reduce_only=reduce_only,
        protective=protective,
    )


def with_mark(b: Book, name: str, mark: str) -> Book:
    return replace(
        b, instruments={**b.instruments, name: replace(b.instruments[name], mark=D(mark))}
    )


def test_a_crossing_limit_fills_at_the_mark_as_taker_and_writes_in_order() -> None:
    start = book()
    out = matching.submit(start, order(price="60100"), Faults(), NOW)
    row = out.book.orders["c1"]
    assert (row.status, row.filled_qty, row.reason) == ("filled", D("0.002"), None)
    assert [type(e) for e in out.events] == [OrderPlaced, FillMade, OrderChanged, PositionChanged]
    fill = out.events[1]
    assert isinstance(fill, FillMade)
    # at the mark, not the limit; taker fee 0.0005 x 0.002 x 60000, exact
    assert (fill.price, fill.liquidity, fill.fee) == (D("60000"), "taker", D("0.06"))
    assert out.book.position(ACCOUNT, "BTC-PERP").qty == D("0.002")
    assert out.changed == ("c1",)
    assert start.orders == {} and start.positions == {}  # the input is untouched


def test_a_limit_short_of_the_mark_rests_without_a_fill() -> None:
    out = matching.submit(book(), order(price="59999.5"), Faults(), NOW)
    assert out.book.orders["c1"].status == "resting"
    assert not any(isinstance(e, FillMade) for e in out.events)
    ioc = matching.submit(book(), order(price="59999.5", tif="IOC"), Faults(), NOW)
    assert ioc.book.orders["c1"].status == "cancelled"
    assert "does not reach the mark" in (ioc.book.orders["c1"].reason or "")


def test_liquidity_caps_a_taker_fill_by_time_in_force() -> None:
    gtc = matching.submit(
        book(THIN), order(instrument="THIN-PERP", qty="0.05", price="100"), Faults(), NOW
    )
    row = gtc.book.orders["c1"]
    assert (row.status, row.filled_qty, row.remaining) == ("partially_filled", D("0.03"), D("0.02"))

    ioc = matching.submit(
        book(THIN), order(instrument="THIN-PERP", qty="0.05", price="100", tif="IOC"), Faults(), NOW
    )
    row = ioc.book.orders["c1"]
    assert (row.status, row.filled_qty) == ("cancelled", D("0.03"))
    assert row.reason == "IOC: remaining 0.02 cancelled (only 0.03 available at the mark)"

    fok = matching.submit(
        book(THIN), order(instrument="THIN-PERP", qty="0.05", price="100", tif="FOK"), Faults(), NOW
    )
    row = fok.book.orders["c1"]
    assert (row.status, row.filled_qty) == ("cancelled", D("0"))
    assert not any(isinstance(e, FillMade) for e in fok.events)


def test_refusals_are_rejected_rows_with_the_reason_and_nothing_else() -> None:
    cases = {
        "off lot": (order(qty="0.0015"), book(), Faults()),
        "post-only taking": (order(price="60000", tif="POST_ONLY"), book(), Faults()),
        "reduce-only opening": (order(reduce_only=True), book(), Faults()),
        "fault": (order(), book(), Faults(reject=True)),
        "slippage": (
            order(order_type="market", price=None, slippage="5"),
            book(),
            Faults(slippage_bps=D("10")),
        ),
    }
    reasons = {}
    for name, (o, b, faults) in cases.items():
        out = matching.submit(b, o, faults, NOW)
        assert [type(e) for e in out.events] == [OrderPlaced], name
        row = out.book.orders["c1"]
        assert row.status == "rejected", name
        reasons[name] = row.reason or ""
    assert "not a multiple of the lot" in reasons["off lot"]
    assert "would take liquidity" in reasons["post-only taking"]
    assert "would open or increase the position" in reasons["reduce-only opening"]
    assert reasons["fault"] == "simulated fault: reject"
    assert "beyond max_slippage_bps 5" in reasons["slippage"]


def test_a_market_order_with_slippage_fills_off_the_mark_on_the_tick() -> None:
    out = matching.submit(
        book(),
        order(order_type="market", price=None, slippage="10"),
        Faults(slippage_bps=D("0.3")),
        NOW,
    )
    fill = next(e for e in out.events if isinstance(e, FillMade))
    assert fill.price == D("60002")  # 60001.8 (0.3 bp worse), up onto the 0.5 tick: against a buy
    assert out.book.orders["c1"].status == "filled"


def test_a_tick_fills_a_crossed_resting_order_at_its_limit_as_maker_in_parts() -> None:
    rested = matching.submit(book(), order(qty="0.010", price="59000"), Faults(), NOW)
    moved = with_mark(rested.book, "BTC-PERP", "58500")
    faults = Faults(partial_fill=D("0.3"))
    first = matching.tick(moved, faults, NOW + timedelta(seconds=1))
    row = first.book.orders["c1"]
    assert (row.status, row.filled_qty) == ("partially_filled", D("0.003"))
    fill = next(e for e in first.events if isinstance(e, FillMade))
    assert (fill.price, fill.liquidity, fill.fee) == (D("59000"), "maker", D("0.0354"))
    assert first.changed == ("c1",)
    rest = matching.tick(first.book, Faults(), NOW + timedelta(seconds=2))
    assert rest.book.orders["c1"].status == "filled"
    assert rest.book.position(ACCOUNT, "BTC-PERP").qty == D("0.010")
    untouched = matching.tick(with_mark(rested.book, "BTC-PERP", "59500"), Faults(), NOW)
    assert untouched.events == () and untouched.changed == ()


def test_protective_children_follow_the_fill_and_cancel_each_other() -> None:
    placed = matching.submit(
        book(), order(price="60000", stop_loss="59000", take_profit="61000"), Faults(), NOW
    )
    sl, tp = placed.book.orders["c1:sl"], placed.book.orders["c1:tp"]
    assert (sl.status, sl.side, sl.quantity, sl.reduce_only) == (
        "accepted",
        "sell",
        D("0.002"),
        True,
    )
    assert (tp.status, tp.trigger_price) == ("accepted", D("61000"))
    assert [type(e) for e in placed.events][-2:] == [OrderPlaced, OrderPlaced]

    fell = matching.tick(with_mark(placed.book, "BTC-PERP", "58800"), Faults(), NOW)
    sl, tp = fell.book.orders["c1:sl"], fell.book.orders["c1:tp"]
    assert (sl.status, sl.filled_qty) == ("filled", D("0.002"))
    fill = next(e for e in fell.events if isinstance(e, FillMade))
    assert (fill.client_id, fill.price, fill.liquidity) == ("c1:sl", D("58800"), "taker")
    assert tp.status == "cancelled"
    assert tp.reason == "one-cancels-other: c1:sl triggered at 58800"
    assert fell.book.position(ACCOUNT, "BTC-PERP").qty == 0
    assert fell.changed == ("c1:sl", "c1:tp")


def test_a_child_that_would_trigger_at_once_is_rejected_and_the_parent_stands() -> None:
    out = matching.submit(book(), order(price="60000", stop_loss="60500"), Faults(), NOW)
    assert out.book.orders["c1"].status == "filled"
    child = out.book.orders["c1:sl"]
    assert child.status == "rejected"
    assert (child.reason or "").startswith("stop_loss 60500 would trigger at once")


def test_fees_unknown_is_none_not_zero() -> None:
    out = matching.submit(book(), order(price="60000"), Faults(fees_unknown=True), NOW)
    fill = next(e for e in out.events if isinstance(e, FillMade))
    assert fill.fee is None


def test_cancel_and_resubmit_answer_with_new_rows() -> None:
    resting = matching.submit(book(), order(price="59000"), Faults(), NOW).book.orders["c1"]
    later = NOW + timedelta(minutes=1)
    cancelled = matching.cancel(resting, later)
    assert (cancelled.status, cancelled.reason) == ("cancelled", "cancelled on request")
    assert cancelled.updated_at == later.isoformat()
    assert resting.status == "resting"  # the given row is unchanged
    assert matching.cancel(cancelled, later) is cancelled  # terminal: nothing to write
    again = matching.resubmit(resting, later)
    assert (again.submit_count, again.status) == (2, "resting")
