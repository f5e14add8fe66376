"""Reads and writes of the simulated venue's tables inside one transaction (`Txn`).

Each method is one statement against the venue's SQLite file, decoding rows into `rows`
and `model.Instrument` and encoding decimals as plain TEXT (`decimals.text`), so no float
ever touches a price, a quantity or a fee. A `Txn` exists only inside `VenueStore.run`,
which opened the transaction and set the exact decimal context.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from decimal import Decimal

from workers.domains.finance.sim.decimals import dec, opt_dec, opt_text, text
from workers.domains.finance.sim.rows import FillRow, OrderRow, PositionRow
from workers.domains.finance.venues.model import Instrument

_ORDER_COLUMNS = (
    "client_id, parent_client_id, role, account, instrument, side, quantity, order_type, "
    "limit_price, max_slippage_bps, time_in_force, reduce_only, leverage, trigger_price, "
    "stop_loss, take_profit, status, filled_qty, reason, submit_count, created_at, updated_at, seq"
)


def _order(row: sqlite3.Row) -> OrderRow:
    return OrderRow(
        client_id=row["client_id"],
        parent_client_id=row["parent_client_id"],
        role=row["role"],
        account=row["account"],
        instrument=row["instrument"],
        side=row["side"],
        quantity=dec(row["quantity"]),
        order_type=row["order_type"],
        limit_price=opt_dec(row["limit_price"]),
        max_slippage_bps=opt_dec(row["max_slippage_bps"]),
        time_in_force=row["time_in_force"],
        reduce_only=bool(row["reduce_only"]),
        leverage=dec(row["leverage"]),
        trigger_price=opt_dec(row["trigger_price"]),
        stop_loss=opt_dec(row["stop_loss"]),
        take_profit=opt_dec(row["take_profit"]),
        status=row["status"],
        filled_qty=dec(row["filled_qty"]),
        reason=row["reason"],
        submit_count=int(row["submit_count"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        seq=int(row["seq"]),
    )


def _instrument(row: sqlite3.Row) -> Instrument:
    return Instrument(
        name=row["name"],
        tick=dec(row["tick"]),
        lot=dec(row["lot"]),
        min_qty=dec(row["min_qty"]),
        mark=dec(row["mark"]),
        maker_fee_rate=dec(row["maker_fee_rate"]),
        taker_fee_rate=dec(row["taker_fee_rate"]),
        max_leverage=dec(row["max_leverage"]),
        fee_currency=row["fee_currency"],
        liquidity=opt_dec(row["liquidity"]),
        sig_figs=row["sig_figs"],
        min_notional=opt_dec(row["min_notional"]),
    )


class Txn:
    """Reads and writes inside one transaction (see `VenueStore.run`)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str) -> None:
        self._conn.execute(sql)

    # -- meta, accounts, instruments ------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def accounts(self) -> list[str]:
        return [r["name"] for r in self._conn.execute("SELECT name FROM accounts ORDER BY name")]

    def account_mode(self, name: str) -> str | None:
        row = self._conn.execute("SELECT mode FROM accounts WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row["mode"])

    def add_account(self, name: str, mode: str) -> None:
        self._conn.execute(
            "INSERT INTO accounts (name, mode) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
            (name, mode),
        )

    def instruments(self) -> dict[str, Instrument]:
        rows = self._conn.execute("SELECT * FROM instruments ORDER BY name")
        return {r["name"]: _instrument(r) for r in rows}

    def instrument(self, name: str) -> Instrument | None:
        row = self._conn.execute("SELECT * FROM instruments WHERE name = ?", (name,)).fetchone()
        return None if row is None else _instrument(row)

    def upsert_instrument(self, inst: Instrument) -> None:
        """Insert, or update the spec of a stored instrument keeping its stored mark."""
        self._conn.execute(
            "INSERT INTO instruments (name, tick, lot, min_qty, mark, maker_fee_rate, "
            "taker_fee_rate, max_leverage, fee_currency, liquidity, sig_figs, min_notional) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET tick = excluded.tick, lot = excluded.lot, "
            "min_qty = excluded.min_qty, maker_fee_rate = excluded.maker_fee_rate, "
            "taker_fee_rate = excluded.taker_fee_rate, max_leverage = excluded.max_leverage, "
            "fee_currency = excluded.fee_currency, liquidity = excluded.liquidity, "
            "sig_figs = excluded.sig_figs, min_notional = excluded.min_notional",
            (
                inst.name,
                text(inst.tick),
                text(inst.lot),
                text(inst.min_qty),
                text(inst.mark),
                text(inst.maker_fee_rate),
                text(inst.taker_fee_rate),
                text(inst.max_leverage),
                inst.fee_currency,
                opt_text(inst.liquidity),
                inst.sig_figs,
                opt_text(inst.min_notional),
            ),
        )

    def set_mark(self, name: str, mark: Decimal) -> bool:
        cur = self._conn.execute(
            "UPDATE instruments SET mark = ? WHERE name = ?", (text(mark), name)
        )
        return cur.rowcount == 1

    # -- orders ---------------------------------------------------------------------------
    def order(self, client_id: str) -> OrderRow | None:
        row = self._conn.execute(
            f"SELECT {_ORDER_COLUMNS} FROM orders WHERE client_id = ?", (client_id,)
        ).fetchone()
        return None if row is None else _order(row)

    def orders(
        self,
        *,
        account: str | None = None,
        statuses: Sequence[str] | None = None,
        roles: Sequence[str] | None = None,
    ) -> list[OrderRow]:
        """Orders in submission order, optionally filtered."""
        where: list[str] = []
        args: list[str] = []
        if account is not None:
            where.append("account = ?")
            args.append(account)
        for column, values in (("status", statuses), ("role", roles)):
            if values is not None:
                where.append(f"{column} IN ({', '.join('?' for _ in values)})")
                args.extend(values)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._conn.execute(f"SELECT {_ORDER_COLUMNS} FROM orders{clause} ORDER BY seq", args)
        return [_order(r) for r in rows]

    def children(self, client_id: str) -> list[OrderRow]:
        rows = self._conn.execute(
            f"SELECT {_ORDER_COLUMNS} FROM orders WHERE parent_client_id = ? ORDER BY seq",
            (client_id,),
        )
        return [_order(r) for r in rows]

    def insert_order(self, o: OrderRow) -> int:
        """Insert a new order; returns its `seq` (submission order)."""
        cur = self._conn.execute(
            "INSERT INTO orders (client_id, parent_client_id, role, account, instrument, side, "
            "quantity, order_type, limit_price, max_slippage_bps, time_in_force, reduce_only, "
            "leverage, trigger_price, stop_loss, take_profit, status, filled_qty, reason, "
            "submit_count, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                o.client_id,
                o.parent_client_id,
                o.role,
                o.account,
                o.instrument,
                o.side,
                text(o.quantity),
                o.order_type,
                opt_text(o.limit_price),
                opt_text(o.max_slippage_bps),
                o.time_in_force,
                int(o.reduce_only),
                text(o.leverage),
                opt_text(o.trigger_price),
                opt_text(o.stop_loss),
                opt_text(o.take_profit),
                o.status,
                text(o.filled_qty),
                o.reason,
                o.submit_count,
                o.created_at,
                o.updated_at,
            ),
        )
        return int(cur.lastrowid or 0)

    def save_order(self, o: OrderRow) -> None:
        """Store the fields that change after placement."""
        self._conn.execute(
            "UPDATE orders SET quantity = ?, status = ?, filled_qty = ?, reason = ?, "
            "submit_count = ?, updated_at = ? WHERE client_id = ?",
            (
                text(o.quantity),
                o.status,
                text(o.filled_qty),
                o.reason,
                o.submit_count,
                o.updated_at,
                o.client_id,
            ),
        )

    # -- fills and positions --------------------------------------------------------------
    def add_fill(
        self,
        client_id: str,
        qty: Decimal,
        price: Decimal,
        fee: Decimal | None,
        fee_currency: str,
        liquidity: str,
        at: str,
    ) -> FillRow:
        cur = self._conn.execute(
            "INSERT INTO fills (client_id, qty, price, fee, fee_currency, liquidity, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (client_id, text(qty), text(price), opt_text(fee), fee_currency, liquidity, at),
        )
        return FillRow(
            int(cur.lastrowid or 0), client_id, qty, price, fee, fee_currency, liquidity, at
        )

    def fills(self, client_ids: Iterable[str]) -> dict[str, list[FillRow]]:
        ids = list(client_ids)
        found: dict[str, list[FillRow]] = {cid: [] for cid in ids}
        if not ids:
            return found
        rows = self._conn.execute(
            f"SELECT * FROM fills WHERE client_id IN ({', '.join('?' for _ in ids)}) ORDER BY id",
            ids,
        )
        for r in rows:
            found[r["client_id"]].append(
                FillRow(
                    id=int(r["id"]),
                    client_id=r["client_id"],
                    qty=dec(r["qty"]),
                    price=dec(r["price"]),
                    fee=opt_dec(r["fee"]),
                    fee_currency=r["fee_currency"],
                    liquidity=r["liquidity"],
                    at=r["at"],
                )
            )
        return found

    def position(self, account: str, instrument: str) -> PositionRow:
        row = self._conn.execute(
            "SELECT qty, avg_price FROM positions WHERE account = ? AND instrument = ?",
            (account, instrument),
        ).fetchone()
        if row is None:
            return PositionRow(account, instrument, Decimal(0), None)
        return PositionRow(account, instrument, dec(row["qty"]), opt_dec(row["avg_price"]))

    def positions(self, account: str) -> list[PositionRow]:
        rows = self._conn.execute(
            "SELECT instrument, qty, avg_price FROM positions WHERE account = ? ORDER BY instrument",
            (account,),
        )
        return [
            PositionRow(account, r["instrument"], dec(r["qty"]), opt_dec(r["avg_price"]))
            for r in rows
        ]

    def save_position(self, p: PositionRow) -> None:
        self._conn.execute(
            "INSERT INTO positions (account, instrument, qty, avg_price) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (account, instrument) DO UPDATE SET qty = excluded.qty, "
            "avg_price = excluded.avg_price",
            (p.account, p.instrument, text(p.qty), opt_text(p.avg_price)),
        )
