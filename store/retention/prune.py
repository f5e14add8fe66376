"""Retention: what grows with history, pruned past its window, never what the record needs.

What `countersign prune` touches (each past its own window, `Retention`):
- the inbox's stored clicks, posts and texts: the payload becomes its SHA-256 (the digest a
  decision's audit entry names as its evidence) and the stored answer (a whole card) goes.
  The row stays, with its key, time and status, so a click replayed even then is known;
  entries still being processed (`received`) are never touched;
- card revisions (`card_deliveries`): every row but the newest of an operation that is
  settled (final, nothing due: no execution, card patch, reminder or send pending);
- delivery attempts: every attempt but the last of a delivery that was delivered (a
  failed one stays whole: `countersign deliveries retry` may still need it);
- web sessions and sign-ins that can no longer be used (expired, idle or revoked).
Never touched: operations, confirmations, claims, attempts, outcomes, reservations,
deliveries themselves, signals and the audit log with its chain. Those are the record
(`countersign audit export` is the way to archive it).

Each table is walked by primary key a page at a time, each page its own short write, so a
prune runs beside the bot and its memory is a page's whatever the history.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, or_, select, update
from sqlalchemy.orm import aliased

from store.authority.store import Store
from store.lifecycle import TERMINAL_UNCLAIMED
from store.schema.tables import (
    CardDeliveryRow,
    DeliveryAttemptRow,
    DeliveryRow,
    InboxRow,
    OperationRow,
)
from store.sessions.session_rows import WebSessionRow, WebSignInRow
from store.vocabulary import DeliveryState, InboxStatus, State

PAGE = 1_000
PRUNED_KEY = "pruned"
SETTLED_STATES = tuple(sorted(s.value for s in {*TERMINAL_UNCLAIMED, State.OUTCOME_OBSERVED}))


@dataclass(frozen=True)
class Retention:
    """How long each kind of growing history is kept whole."""

    inbox: timedelta
    card_revisions: timedelta
    delivery_attempts: timedelta
    session_idle: timedelta
    session_max: timedelta


@dataclass(frozen=True)
class PruneReport:
    inbox_stripped: int = 0
    card_revisions: int = 0
    delivery_attempts: int = 0
    sessions: int = 0
    sign_ins: int = 0

    def lines(self, dry_run: bool) -> list[str]:
        verb = "would be" if dry_run else "were"
        return [
            f"inbox entries whose payload and answer {verb} replaced by the payload's "
            f"digest: {self.inbox_stripped}",
            f"card revisions of settled operations {verb} removed (the newest kept): "
            f"{self.card_revisions}",
            f"attempts of delivered results {verb} removed (the last kept): "
            f"{self.delivery_attempts}",
            f"web sessions that can no longer be used {verb} removed: {self.sessions}",
            f"sign-ins that expired {verb} removed: {self.sign_ins}",
        ]

    def total(self) -> int:
        return sum(getattr(self, field.name) for field in fields(self))


def pruned_payload(payload_text: str) -> str:
    """What a pruned inbox payload becomes: its SHA-256 (as `payload_digest` computed it when
    it was stored), as JSON, so a reader of the row still reads JSON."""
    digest = hashlib.sha256(payload_text.encode("utf-8", "surrogatepass")).hexdigest()
    return json.dumps({PRUNED_KEY: True, "sha256": digest})


def _strip_inbox_page(
    conn: Connection, after: int, cutoff: datetime, dry_run: bool
) -> tuple[int | None, int]:
    rows = conn.execute(
        select(InboxRow.id, InboxRow.payload)
        .where(
            InboxRow.id > after,
            InboxRow.received_at < cutoff,
            InboxRow.status != InboxStatus.RECEIVED.value,
            or_(InboxRow.answer.is_not(None), ~InboxRow.payload.startswith('{"pruned": true')),
        )
        .order_by(InboxRow.id)
        .limit(PAGE)
    ).all()
    if not rows:
        return None, 0
    if not dry_run:
        for row in rows:
            stripped = row.payload if row.payload.startswith('{"pruned": true') else None
            conn.execute(
                update(InboxRow)
                .where(InboxRow.id == row.id)
                .values(payload=stripped or pruned_payload(row.payload), answer=None)
            )
    return rows[-1].id, len(rows)


def _settled(operation: Any, cutoff: datetime) -> Any:
    """An operation nothing will change any more, last changed before `cutoff`."""
    pending = select(DeliveryRow.id).where(
        DeliveryRow.operation_id == operation.id, DeliveryRow.due_at.is_not(None)
    )
    return (
        operation.state.in_(SETTLED_STATES)
        & (operation.updated_at < cutoff)
        & operation.exec_due_at.is_(None)
        & operation.card_due_at.is_(None)
        & operation.remind_at.is_(None)
        & operation.auto_send_at.is_(None)
        & ~pending.exists()
    )


def _card_revisions_page(
    conn: Connection, after: int, cutoff: datetime, dry_run: bool
) -> tuple[int | None, int]:
    newer = aliased(CardDeliveryRow)
    newest = (
        select(func.max(newer.id))
        .where(newer.operation_id == CardDeliveryRow.operation_id)
        .scalar_subquery()
    )
    operation = aliased(OperationRow)
    ids = (
        conn.execute(
            select(CardDeliveryRow.id)
            .join(operation, operation.id == CardDeliveryRow.operation_id)
            .where(
                CardDeliveryRow.id > after,
                CardDeliveryRow.at < cutoff,
                _settled(operation, cutoff),
                CardDeliveryRow.id < newest,
            )
            .order_by(CardDeliveryRow.id)
            .limit(PAGE)
        )
        .scalars()
        .all()
    )
    return _removed(conn, CardDeliveryRow, ids, dry_run)


def _delivery_attempts_page(
    conn: Connection, after: int, cutoff: datetime, dry_run: bool
) -> tuple[int | None, int]:
    later = aliased(DeliveryAttemptRow)
    last = (
        select(func.max(later.id))
        .where(later.delivery_id == DeliveryAttemptRow.delivery_id)
        .scalar_subquery()
    )
    ids = (
        conn.execute(
            select(DeliveryAttemptRow.id)
            .join(DeliveryRow, DeliveryRow.id == DeliveryAttemptRow.delivery_id)
            .where(
                DeliveryAttemptRow.id > after,
                DeliveryAttemptRow.at < cutoff,
                DeliveryRow.state == DeliveryState.DELIVERED.value,
                DeliveryAttemptRow.id < last,
            )
            .order_by(DeliveryAttemptRow.id)
            .limit(PAGE)
        )
        .scalars()
        .all()
    )
    return _removed(conn, DeliveryAttemptRow, ids, dry_run)


def _removed(
    conn: Connection, table: Any, ids: Iterable[int], dry_run: bool
) -> tuple[int | None, int]:
    found = list(ids)
    if not found:
        return None, 0
    if not dry_run:
        conn.execute(delete(table).where(table.id.in_(found)))
    return found[-1], len(found)


def _sessions(
    conn: Connection, now: datetime, retention: Retention, dry_run: bool
) -> tuple[int, int]:
    dead = or_(
        WebSessionRow.revoked.is_(True),
        WebSessionRow.last_seen_at <= now - retention.session_idle,
        WebSessionRow.signed_in_at <= now - retention.session_max,
    )
    expired = WebSignInRow.expires_at <= now
    if dry_run:
        sessions = conn.execute(select(func.count()).select_from(WebSessionRow).where(dead))
        sign_ins = conn.execute(select(func.count()).select_from(WebSignInRow).where(expired))
        return int(sessions.scalar_one()), int(sign_ins.scalar_one())
    removed = conn.execute(delete(WebSessionRow).where(dead)).rowcount
    gone = conn.execute(delete(WebSignInRow).where(expired)).rowcount
    return int(removed or 0), int(gone or 0)


Page = Any  # (conn, after, cutoff, dry_run) -> (next after | None, rows)


async def _walk(store: Store, page: Page, cutoff: datetime, dry_run: bool) -> int:
    """Run `page` from the start of its table until it finds nothing more; rows it took."""
    after, total = 0, 0
    while True:

        def one(conn: Connection, start: int = after) -> tuple[int | None, int]:
            result: tuple[int | None, int] = page(conn, start, cutoff, dry_run)
            return result

        last, count = await (store.fetch(one) if dry_run else store.transact(one))
        if last is None:
            return total
        after, total = last, total + count


async def prune(store: Store, retention: Retention, *, dry_run: bool = False) -> PruneReport:
    """Prune what is past its window (or, `dry_run`, count it); what was (or would be)."""
    now = store.clock()

    def sessions(conn: Connection) -> tuple[int, int]:
        return _sessions(conn, now, retention, dry_run)

    removed_sessions, removed_sign_ins = await (
        store.fetch(sessions) if dry_run else store.transact(sessions)
    )
    return PruneReport(
        inbox_stripped=await _walk(store, _strip_inbox_page, now - retention.inbox, dry_run),
        card_revisions=await _walk(
            store, _card_revisions_page, now - retention.card_revisions, dry_run
        ),
        delivery_attempts=await _walk(
            store, _delivery_attempts_page, now - retention.delivery_attempts, dry_run
        ),
        sessions=removed_sessions,
        sign_ins=removed_sign_ins,
    )
