"""Reads for the operator dashboard: what needs a person now (by group, with counts), recent
activity, and the list filtered by state, newest outcome and a search text.

Each question is one portable statement (SQLite and PostgreSQL alike) with a LIMIT; a group's
count is one more. "Newest outcome" is the outcome row with the highest id of its operation,
the one every surface shows (`cards.vocabulary.needs_attention` asks the same of a view).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import aliased

from store.authority.records import Operation
from store.lifecycle import State
from store.reads.operations import SEARCH_WINDOW, page_of, windowed_page
from store.reads.paging import MAX_PAGE_SIZE, Page
from store.schema.tables import NEEDS_PEOPLE, DeliveryRow, OperationRow, OutcomeRow, constant
from store.vocabulary import DeliveryState

if TYPE_CHECKING:
    from store.authority.store import Store

# the groups of the "Needs attention" view, in the order a person should look at them
AWAITING, UNKNOWN, UNRESOLVED = "awaiting", "unknown", "unresolved"
CARD_FAILED, DELIVERY_FAILED = "card_failed", "delivery_failed"
GROUPS = (AWAITING, UNKNOWN, UNRESOLVED, CARD_FAILED, DELIVERY_FAILED)
OPEN = (State.PREPARED.value, State.AWAITING_CONFIRMATION.value)
# a search text longer than this is not a search anyone types; the caller refuses it
SEARCH_MAX_CHARS = 64


@dataclass(frozen=True)
class Group:
    key: str
    count: int
    operations: tuple[Operation, ...]  # the first `limit` of them


def _newest_outcome_is(status: str) -> ColumnElement[bool]:
    """The operation's newest outcome has `status`: driven from the outcomes with it (a
    partial index, ix_outcomes_<status>, holds just those), each one checked for a later
    outcome of its operation by a seek on ix_outcomes_operation_id_id."""
    assert status in NEEDS_PEOPLE, status
    newer = aliased(OutcomeRow)
    newest = select(OutcomeRow.operation_id).where(
        OutcomeRow.status == constant(status),
        ~exists().where(newer.operation_id == OutcomeRow.operation_id, newer.id > OutcomeRow.id),
    )
    return OperationRow.id.in_(newest)


def newest_outcome_status() -> Any:
    """The newest outcome's status of the operation in the enclosing query (NULL: none)."""
    return (
        select(OutcomeRow.status)
        .where(OutcomeRow.operation_id == OperationRow.id)
        .order_by(OutcomeRow.id.desc())
        .limit(1)
        .scalar_subquery()
    )


def _group_condition(key: str) -> ColumnElement[bool]:
    if key == AWAITING:
        return OperationRow.state.in_(OPEN)
    if key in (UNKNOWN, UNRESOLVED):
        return _newest_outcome_is(key)
    if key == CARD_FAILED:
        return OperationRow.card_error.is_not(None)
    failed = select(DeliveryRow.operation_id).where(DeliveryRow.state == DeliveryState.FAILED.value)
    return OperationRow.id.in_(failed)


def _group_order(key: str) -> tuple[Any, ...]:
    if key == AWAITING:  # the one running out first, first
        return (OperationRow.expires_at.asc(), OperationRow.id.asc())
    return (OperationRow.created_at.desc(), OperationRow.id.desc())


async def attention(store: Store, limit: int = MAX_PAGE_SIZE) -> list[Group]:
    """Every group with its count and its first `limit` operations (an operation may be in
    more than one: a card that failed to post for an order still awaiting confirmation)."""
    async with store.read() as conn:
        return [await _group(conn, key, limit) for key in GROUPS]


async def group(store: Store, key: str, limit: int = MAX_PAGE_SIZE) -> Group:
    """One group of `attention`: its count and its first `limit` operations."""
    async with store.read() as conn:
        return await _group(conn, key, limit)


async def _group(conn: AsyncConnection, key: str, limit: int) -> Group:
    condition = _group_condition(key)
    count = await _count(conn, condition)
    query = select(OperationRow.__table__).where(condition).order_by(*_group_order(key))
    rows = (await conn.execute(query.limit(limit))).all()
    return Group(key, count, tuple(Operation.from_row(row) for row in rows))


async def counts(store: Store, keys: Collection[str] = GROUPS) -> dict[str, int]:
    """How many operations each of these groups holds (for `/readyz` and `/metrics`)."""
    found = {}
    async with store.read() as conn:
        for key in keys:
            found[key] = await _count(conn, _group_condition(key))
    return found


async def _count(conn: AsyncConnection, condition: ColumnElement[bool]) -> int:
    query = select(func.count()).select_from(OperationRow).where(condition)
    return int((await conn.execute(query)).scalar_one())


async def recent(store: Store, limit: int = 20) -> list[Operation]:
    """The operations that changed last (a fill moves an old order up)."""
    query = (
        select(OperationRow.__table__)
        .order_by(OperationRow.updated_at.desc(), OperationRow.id.desc())
        .limit(limit)
    )
    async with store.read() as conn:
        rows = (await conn.execute(query)).all()
    return [Operation.from_row(row) for row in rows]


def _matches(text: str) -> ColumnElement[bool]:
    """An id (or a piece of one), or any piece of the terms: instrument, counterparty,
    account, destination, the title, a message's text. Case does not matter (ASCII case on
    SQLite); LIKE's wildcards in the text are matched literally."""
    needle = text.lower()
    return or_(
        func.lower(OperationRow.id).contains(needle, autoescape=True),
        func.lower(OperationRow.projection).contains(needle, autoescape=True),
        func.lower(OperationRow.target_ref).contains(needle, autoescape=True),
    )


async def search(
    store: Store,
    *,
    state: State | None = None,
    outcome: str | None = None,
    text: str = "",
    limit: int = MAX_PAGE_SIZE,
    cursor: str | None = None,
    window: int = SEARCH_WINDOW,
) -> Page:
    """Newest first, keyed by (created_at, id) like the API's list; every filter optional.
    `outcome` is the newest outcome's status; `text` at most SEARCH_MAX_CHARS characters.
    With either, a page looks through at most SEARCH_WINDOW operations (`Page.searched_to`
    says how far back, when it stopped there)."""
    assert len(text) <= SEARCH_MAX_CHARS, "the caller bounds the search text"
    limit = max(1, min(limit, MAX_PAGE_SIZE))
    indexed: list[ColumnElement[bool]] = []
    if state is not None:  # ix_operations_state_created_at_id
        indexed.append(OperationRow.state == state.value)
    scanned: list[ColumnElement[bool]] = []
    if outcome is not None:
        scanned.append(newest_outcome_status() == outcome)
    if text:
        scanned.append(_matches(text))
    if not scanned:
        return await page_of(store, indexed, limit, cursor)
    return await windowed_page(store, indexed, scanned, limit, cursor, window)
