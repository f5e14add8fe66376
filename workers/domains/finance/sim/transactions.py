"""What each venue call does inside one store transaction: load, match, write, answer.

`SimVenue` hands each of these functions to `VenueStore.run` (in a worker thread, under the
exact decimal context). A write loads the `Book` its call needs from the tables,
runs the pure matching function, writes the returned events in order, and answers from
what is now stored; a read turns stored rows into the model's answers (`VenueOrderState`,
`Observation`, `Capabilities`). The answer is built inside the transaction, so every
answer the venue gives has been committed before it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal

from workers.domains.finance.sim import matching
from workers.domains.finance.sim.book import Book, Event, FillMade, OrderChanged, OrderPlaced
from workers.domains.finance.sim.decimals import AVERAGE, plain
from workers.domains.finance.sim.errors import UnknownAccount, UnknownInstrument
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.profile import (
    ACCOUNT_MODE,
    DEFAULT_ACCOUNTS,
    DEFAULT_INSTRUMENTS,
    VENUE_NAME,
    WORLD,
)
from workers.domains.finance.sim.rows import FillRow, OrderRow, PositionRow
from workers.domains.finance.sim.rules import same_terms
from workers.domains.finance.sim.tables import Txn
from workers.domains.finance.venues.model import (
    CHILD_SUFFIX,
    ORDER_TYPES,
    ROLES,
    SIDES,
    TERMINAL,
    TIME_IN_FORCE,
    WORKING,
    Capabilities,
    Fill,
    Instrument,
    Observation,
    OpenOrder,
    OrderStatus,
    Position,
    Role,
    Side,
    Submission,
    TimeInForce,
    VenueOrder,
    VenueOrderState,
)


# -- set-up and reads ------------------------------------------------------------------------
def seed(
    tx: Txn, instruments: Sequence[Instrument] | None, accounts: Sequence[str] | None
) -> timedelta:
    """Seed a new file (or update a stored one, see `SimVenue.open`); the stored clock offset."""
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


def capabilities(tx: Txn) -> Capabilities:
    return Capabilities(
        venue=VENUE_NAME,
        world=WORLD,
        accounts=frozenset(tx.accounts()),
        account_modes=frozenset({ACCOUNT_MODE}),
        modes_by_account={name: tx.account_mode(name) or "" for name in tx.accounts()},
        instruments=frozenset(tx.instruments()),
        order_types=frozenset(ORDER_TYPES),
        time_in_force=frozenset(TIME_IN_FORCE),
        marks={name: instrument.mark for name, instrument in tx.instruments().items()},
    )


def observation(tx: Txn, account: str, faults: Faults, now: datetime) -> Observation:
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
        world=WORLD,
    )


def lookup(tx: Txn, client_id: str) -> VenueOrderState | None:
    row = tx.order(client_id)
    return None if row is None else state(tx, row)


def orders(tx: Txn, account: str | None) -> list[VenueOrderState]:
    return [state(tx, row) for row in tx.orders(account=account)]


# -- writes ----------------------------------------------------------------------------------
def submit(tx: Txn, order: VenueOrder, faults: Faults, now: datetime) -> Submission:
    existing = tx.order(order.client_id)
    if existing is not None:
        row = matching.resubmit(existing, now)
        tx.save_order(row)
        return Submission(state(tx, row), created=False, matches=same_terms(existing, order))
    children: dict[str, OrderRow] = {}
    if order.protective is not None:  # a fill places them, unless they exist
        for suffix in CHILD_SUFFIX.values():
            if (child := tx.order(order.client_id + suffix)) is not None:
                children[child.client_id] = child
    book = Book(
        instruments=tx.instruments(),
        orders=children,
        positions={(order.account, order.instrument): tx.position(order.account, order.instrument)},
        accounts=tuple(tx.accounts()),
    )
    outcome = matching.submit(book, order, faults, now)
    write(tx, outcome.events)
    return Submission(state(tx, outcome.book.orders[order.client_id]), created=True)


def cancel(tx: Txn, client_id: str, now: datetime) -> VenueOrderState | None:
    row = tx.order(client_id)
    if row is None:
        return None
    cancelled = matching.cancel(row, now)
    if cancelled is not row:
        tx.save_order(cancelled)
    return state(tx, cancelled)


def set_mark(tx: Txn, instrument: str, price: Decimal) -> None:
    if not tx.set_mark(instrument, price):
        raise UnknownInstrument(instrument, list(tx.instruments()))


def tick(tx: Txn, faults: Faults, now: datetime) -> list[VenueOrderState]:
    """One matching round; the orders it filled, triggered or cancelled, with children."""
    children = tx.orders(statuses=("accepted",), roles=("stop_loss", "take_profit"))
    parents = tx.orders(statuses=("resting", "partially_filled"), roles=("order",))
    rows = {row.client_id: row for row in (*children, *parents)}
    for parent in parents:  # a fill places or grows these
        for child in tx.children(parent.client_id):
            rows.setdefault(child.client_id, child)
    positions: dict[tuple[str, str], PositionRow] = {}
    for account in sorted({row.account for row in rows.values()}):
        for pos in tx.positions(account):
            positions[(pos.account, pos.instrument)] = pos
    book = Book(
        instruments=tx.instruments(),
        orders=dict(sorted(rows.items(), key=lambda item: item[1].seq)),
        positions=positions,
    )
    outcome = matching.tick(book, faults, now)
    write(tx, outcome.events)
    return [state(tx, tx.order(cid) or outcome.book.orders[cid]) for cid in outcome.changed]


def step(tx: Txn, *, offset: timedelta, faults: Faults, now: datetime) -> list[VenueOrderState]:
    """One simulated second: the clock offset stored, then a tick."""
    tx.set_meta("clock_offset_s", str(int(offset.total_seconds())))
    return tick(tx, faults, now)


def write(tx: Txn, events: Sequence[Event]) -> None:
    """Store matching's events in the order they happened."""
    for event in events:
        if isinstance(event, OrderPlaced):
            tx.insert_order(event.row)
        elif isinstance(event, OrderChanged):
            tx.save_order(event.row)
        elif isinstance(event, FillMade):
            tx.add_fill(
                event.client_id,
                event.qty,
                event.price,
                event.fee,
                event.fee_currency,
                event.liquidity,
                event.at,
            )
        else:
            tx.save_position(event.position)


# -- answers ---------------------------------------------------------------------------------
def state(tx: Txn, row: OrderRow) -> VenueOrderState:
    """What the venue knows about `row`'s client id, with its fills and children."""
    kids = tx.children(row.client_id) if row.role == "order" else []
    fills_by_order = tx.fills([row.client_id])
    fills = fills_by_order[row.client_id]
    return _state_of(row, fills, tuple(state(tx, k) for k in kids), tx)


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
        world=WORLD,
    )


def _side(value: str) -> Side:
    assert value in SIDES
    return "buy" if value == "buy" else "sell"


def _role(value: str) -> Role:
    assert value in ROLES
    return value  # type: ignore[return-value]


def _status(value: str) -> OrderStatus:
    assert value in (*WORKING, *TERMINAL)
    return value  # type: ignore[return-value]


def _tif(value: str) -> TimeInForce:
    assert value in TIME_IN_FORCE
    return value  # type: ignore[return-value]
