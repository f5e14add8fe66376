"""Reading operations and their records: a page of operations (newest first), counts, an
operation's claims, confirmations (every click, accepted or refused) and audit trail.

`Store` keeps these as its public read methods and delegates here; one operation by id
(`Store.get`) stays with it, on the hot read path.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from sqlalchemy import ColumnElement, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from store.authority.records import AuditEntry, Confirmation, Operation
from store.lifecycle import State
from store.reads.paging import MAX_PAGE_SIZE, Page, decode_cursor, encode_cursor
from store.schema.tables import AuditRow, ClaimRow, ConfirmationRow, OperationRow

# The operations one filtered page looks through when its filter has no index (a search
# text, the newest outcome): a rare match then costs a page's window, not a year's history,
# and the page says how far back it looked.
SEARCH_WINDOW = 5_000


class ReadSource(Protocol):
    """What these reads need of the store (`store.authority.store.Store`, which delegates its reads
    here): a connection to read on. Named by its shape, so the arrow runs one way."""

    def read(self) -> AbstractAsyncContextManager[AsyncConnection]: ...


async def list_operations(
    store: ReadSource,
    *,
    state: State | None = None,
    limit: int = MAX_PAGE_SIZE,
    cursor: str | None = None,
    proposer: str | None = None,
    audiences: Collection[str] | None = None,
) -> Page:
    """Newest first, keyed by (created_at, id), so inserts never shift a page in flight.

    `audiences`, when given, keeps only those audiences' operations (none if empty)."""
    limit = max(1, min(limit, MAX_PAGE_SIZE))
    conditions: list[ColumnElement[bool]] = []
    if state is not None:
        conditions.append(OperationRow.state == state.value)
    if proposer is not None:
        conditions.append(OperationRow.source_proposer == proposer)
    if audiences is not None:
        conditions.append(OperationRow.audience_name.in_(sorted(audiences)))
    return await page_of(store, conditions, limit, cursor)


def before_cursor(cursor: str | None) -> list[ColumnElement[bool]]:
    """Older than `cursor`'s (created_at, id), none without one: a row value, so the
    (created_at, id) index seeks to it (an OR of the two would walk the index from the top)."""
    if cursor is None:
        return []
    created_at, operation_id = decode_cursor(cursor)
    return [tuple_(OperationRow.created_at, OperationRow.id) < tuple_(created_at, operation_id)]


async def page_of(
    store: ReadSource, conditions: list[ColumnElement[bool]], limit: int, cursor: str | None
) -> Page:
    """One page of the operations meeting `conditions`, newest first, from `cursor`."""
    conditions = [*conditions, *before_cursor(cursor)]
    query = (
        select(OperationRow.__table__)
        .where(*conditions)
        .order_by(OperationRow.created_at.desc(), OperationRow.id.desc())
        .limit(limit + 1)
    )
    async with store.read() as conn:
        rows = (await conn.execute(query)).all()
    ops = [Operation.from_row(row) for row in rows[:limit]]
    has_more = len(rows) > limit
    next_cursor = encode_cursor(ops[-1].created_at, ops[-1].id) if has_more else None
    return Page(tuple(ops), next_cursor, has_more)


async def windowed_page(
    store: ReadSource,
    indexed: list[ColumnElement[bool]],
    scanned: list[ColumnElement[bool]],
    limit: int,
    cursor: str | None,
    window: int = SEARCH_WINDOW,
) -> Page:
    """One page of the operations meeting `indexed` and `scanned`, newest first, from
    `cursor`, looking through at most `window` operations that meet `indexed` (conditions an
    index serves; `scanned` are tested row by row, inside the window only)."""
    indexed = [*indexed, *before_cursor(cursor)]
    newest_first = (OperationRow.created_at.desc(), OperationRow.id.desc())
    key = tuple_(OperationRow.created_at, OperationRow.id)
    # The window's oldest operation and, if there is one, the next older: the window is then
    # a range of the index, which the page reads in its order and filters row by row.
    edge = select(OperationRow.created_at, OperationRow.id).where(*indexed)
    edge = edge.order_by(*newest_first).offset(window - 1).limit(2)
    async with store.read() as conn:
        beyond = (await conn.execute(edge)).all()
        within = [key >= tuple_(beyond[0].created_at, beyond[0].id)] if beyond else []
        query = (
            select(OperationRow.__table__)
            .where(*indexed, *within, *scanned)
            .order_by(*newest_first)
            .limit(limit + 1)
        )
        rows = (await conn.execute(query)).all()
    ops = [Operation.from_row(row) for row in rows[:limit]]
    if len(rows) > limit:
        return Page(tuple(ops), encode_cursor(ops[-1].created_at, ops[-1].id), True)
    if len(beyond) < 2:  # the window reached the oldest operation: nothing older to look at
        return Page(tuple(ops), None, False)
    last = beyond[0]
    return Page(tuple(ops), encode_cursor(last.created_at, last.id), True, last.created_at)


async def count(store: ReadSource, state: State | None = None) -> int:
    query = select(func.count()).select_from(OperationRow)
    if state is not None:
        query = query.where(OperationRow.state == state.value)
    async with store.read() as conn:
        return int((await conn.execute(query)).scalar_one())


async def claim_count(store: ReadSource, operation_id: str) -> int:
    async with store.read() as conn:
        return int(
            (
                await conn.execute(
                    select(func.count())
                    .select_from(ClaimRow)
                    .where(ClaimRow.operation_id == operation_id)
                )
            ).scalar_one()
        )


async def claim_id(store: ReadSource, operation_id: str) -> str | None:
    """The id of the operation's claim (the decision that let it run), if it has one."""
    async with store.read() as conn:
        found = await conn.execute(select(ClaimRow.id).where(ClaimRow.operation_id == operation_id))
        return found.scalar_one_or_none()


async def confirmations(store: ReadSource, operation_id: str) -> list[Confirmation]:
    async with store.read() as conn:
        rows = (
            await conn.execute(
                select(ConfirmationRow.__table__)
                .where(ConfirmationRow.operation_id == operation_id)
                .order_by(ConfirmationRow.id)
            )
        ).all()
    return [Confirmation.from_row(row) for row in rows]


async def confirmation_of(
    store: ReadSource, operation_id: str, event_id: str
) -> Confirmation | None:
    """The record of one click (by its stored event id), if there is one."""
    async with store.read() as conn:
        row = (
            await conn.execute(
                select(ConfirmationRow.__table__)
                .where(
                    ConfirmationRow.operation_id == operation_id,
                    ConfirmationRow.event_id == event_id,
                )
                .order_by(ConfirmationRow.id)
                .limit(1)
            )
        ).one_or_none()
    return None if row is None else Confirmation.from_row(row)


async def audit(store: ReadSource, operation_id: str) -> list[AuditEntry]:
    async with store.read() as conn:
        rows = (
            await conn.execute(
                select(AuditRow.__table__)
                .where(AuditRow.operation_id == operation_id)
                .order_by(AuditRow.id)
            )
        ).all()
    return [AuditEntry.from_row(row) for row in rows]
