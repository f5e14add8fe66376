"""Exposure reservations against an account's budget: what an operation would add
(`Exposure`, `store/claims/exposure.py`), holding it (`hold`: `Reserved` or `ReservationRefused`), settling it once the
venue answered (`settle`: converted or released), and what is held now.

Serialized per account by a compare-and-set on `accounts.version` (FOR UPDATE would be
dropped on SQLite); a lost race raises `Raced` and the whole write is tried again
(`ExecutionLedger.reserve_and_mark`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import Connection, insert, select, update

from kernel.timeutil import Clock
from store.authority.store import Store
from store.backend.once import insert_once
from store.claims.exposure import Exposure
from store.execution.sql import settle_statement
from store.groupcommit import Intent, run_on_connection
from store.schema.tables import AccountRow, ReservationRow
from store.vocabulary import ReservationState


@dataclass(frozen=True)
class Reserved:
    account: str
    amount: Decimal
    held_after: Decimal  # all active reservations of the account, this one included


@dataclass(frozen=True)
class ReservationRefused:
    account: str
    amount: Decimal
    budget: Decimal
    observed: Decimal
    held: Decimal

    @property
    def reason(self) -> str:
        return (
            f"exposure budget of {self.account} is {self.budget}: positions and open orders "
            f"{self.observed} + reserved {self.held} + this order {self.amount} exceed it"
        )


class Raced(Exception):
    """The account's version moved under us: read again."""


def hold(
    conn: Connection, clock: Clock, operation_id: str, exposure: Exposure
) -> Reserved | ReservationRefused:
    """Inside `reserve_and_mark`'s write: hold `exposure.amount` if it fits the budget."""
    account, amount = exposure.account, exposure.amount
    # the account row exists from here on (a concurrent first reserver's insert is
    # skipped, not an error); FOR UPDATE then queues concurrent reservers on PostgreSQL
    # (SQLite has one writer anyway and SQLAlchemy leaves the clause out there); the
    # conditional version update below is what guarantees the budget either way
    conn.execute(insert_once(conn.dialect.name, AccountRow).values(account=account, version=0))
    version = conn.execute(
        select(AccountRow.version).where(AccountRow.account == account).with_for_update()
    ).scalar_one()
    columns = (ReservationRow.operation_id, ReservationRow.amount, ReservationRow.state)
    mine = ReservationRow.account == account
    # two seeks on ix_reservations_account_state_released_at, never the account's history
    rows = list(
        conn.execute(
            select(*columns).where(mine, ReservationRow.state == ReservationState.ACTIVE.value)
        ).all()
    )
    if exposure.observed_at is not None:
        rows += conn.execute(
            select(*columns).where(
                mine,
                ReservationRow.state == ReservationState.CONVERTED.value,
                ReservationRow.released_at >= exposure.observed_at,
            )
        ).all()
    held = sum((Decimal(row.amount) for row in rows), Decimal(0))
    if any(
        row.operation_id == operation_id and row.state == ReservationState.ACTIVE.value
        for row in rows
    ):
        return Reserved(account, amount, held)  # taken before a restart (older releases)
    if exposure.observed + held + amount > exposure.budget:
        return ReservationRefused(account, amount, exposure.budget, exposure.observed, held)
    moved = conn.execute(
        update(AccountRow)
        .where(AccountRow.account == account, AccountRow.version == version)
        .values(version=version + 1)
    )
    if moved.rowcount != 1:
        raise Raced
    conn.execute(
        insert(ReservationRow).values(
            operation_id=operation_id,
            account=account,
            amount=format(amount, "f"),
            state=ReservationState.ACTIVE.value,
            created_at=clock(),
        )
    )
    return Reserved(account, amount, held + amount)


def settled(converted: bool) -> ReservationState:
    return ReservationState.CONVERTED if converted else ReservationState.RELEASED


def settle(
    conn: Connection, clock: Clock, sqlite: bool, operation_id: str, settles: ReservationState
) -> bool:
    """The operation's active reservation becomes `settles`; whether there was one."""
    statement = settle_statement(operation_id, settles, clock(), sqlite)
    (rows,) = run_on_connection(conn, Intent((statement,)))
    return bool(rows)


async def reservation_state(store: Store, operation_id: str) -> str | None:
    async with store.read() as conn:
        state: str | None = (
            await conn.execute(
                select(ReservationRow.state).where(ReservationRow.operation_id == operation_id)
            )
        ).scalar_one_or_none()
    return state


async def held(store: Store, account: str) -> Decimal:
    """All active reservations of `account`."""
    async with store.read() as conn:
        amounts = (
            await conn.execute(
                select(ReservationRow.amount).where(
                    ReservationRow.account == account,
                    ReservationRow.state == ReservationState.ACTIVE.value,
                )
            )
        ).scalars()
        return sum((Decimal(amount) for amount in amounts), Decimal(0))
