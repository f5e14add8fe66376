"""The operation authority: the only code that changes an operation's envelope state.

Every state change is one conditional UPDATE whose WHERE clause carries the rule
(state, digest, expiry), so the database, not a Python lock, decides races.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    and_,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from ulid import ULID

from store.canonical import canonical_json
from store.claim_sql import claim_intent
from store.click_sql import ShownCard, refusal_statements, shown_statements
from store.conclusions import enqueue_closing
from store.engine import SQLITE_IMMEDIATE
from store.envelope import Audience, Envelope, Source, confirm_digest
from store.groupcommit import (
    ConditionNotMet,
    GroupWriter,
    Intent,
    Results,
    Statement,
    current_lane,
    run_on_connection,
)
from store.lifecycle import Event, IllegalTransition, State, next_state, sources_for
from store.models import AuditRow, ClaimRow, ConfirmationRow, OperationRow
from store.reader import SqliteReader
from store.reasons import Reason
from store.records import AuditEntry, Confirmation, Operation
from store.reject_sql import reject_statements
from store.timeutil import Clock, iso_utc, parse_iso_utc, utc_now
from store.vocabulary import CardAction, ClickAction

MAX_PAGE_SIZE = 50
EXPIRE_BATCH = 500


class OperationNotFound(LookupError):
    def __init__(self, operation_id: str) -> None:
        super().__init__(f"no operation {operation_id!r}")
        self.operation_id = operation_id


class RequestConflict(Exception):
    """Same (proposer, request_id) with different content."""

    def __init__(self, operation_id: str, fields: Sequence[str]) -> None:
        super().__init__(
            f"request_id already used for {operation_id} with different {', '.join(fields)}"
        )
        self.operation_id = operation_id
        self.fields = tuple(fields)


class InvalidCursor(ValueError):
    pass


@dataclass(frozen=True)
class Draft:
    """A validated proposal, ready to become an operation."""

    kind: str
    schema_version: int
    executor_name: str
    executor_revision: str
    simulated: bool
    payload: Mapping[str, Any]
    projection: Mapping[str, Any]
    audience: Audience
    target_ref: str
    expires_in_s: int
    source: Source
    # What the proposer sent (minus request_id): a replay must match it exactly.
    request_content: Mapping[str, Any]
    # Re-filing replaces the open draft for the same kind and target (message drafts).
    supersede_open: bool = False


@dataclass(frozen=True)
class Proposed:
    operation: Operation
    created: bool


@dataclass(frozen=True)
class Click:
    """One operator decision on a card, as transport and provenance checks delivered it."""

    operation_id: str
    action: str
    digest: str
    operator_open_id: str
    chat_id: str | None = None
    message_id: str | None = None
    event_id: str | None = None


@dataclass(frozen=True)
class Claimed:
    operation: Operation
    claim_id: str


@dataclass(frozen=True)
class Decided:
    """A reject click that took effect."""

    operation: Operation


@dataclass(frozen=True)
class Refused:
    reason: Reason
    operation: Operation | None


@dataclass(frozen=True)
class Page:
    items: tuple[Operation, ...]
    next_cursor: str | None
    has_more: bool


CLOSED_STATE_REASONS: dict[State, Reason] = {
    State.PREPARED: Reason.NOT_OFFERED,
    State.CLAIMED: Reason.ALREADY_CLAIMED,
    State.OUTCOME_OBSERVED: Reason.ALREADY_CLAIMED,
    State.REJECTED: Reason.ALREADY_REJECTED,
    State.CANCELLED: Reason.CANCELLED,
    State.SUPERSEDED: Reason.SUPERSEDED,
    State.EXPIRED: Reason.EXPIRED,
}


def refusal_reason(op: Operation | None, click: Click, now: datetime) -> Reason:
    """Why a click could not take effect, read off the operation as it now is."""
    if op is None:
        return Reason.OPERATION_UNKNOWN
    if click.digest != op.confirm_digest:
        return Reason.DIGEST_MISMATCH
    if op.state in (State.PREPARED, State.AWAITING_CONFIRMATION) and op.envelope.expires_at <= now:
        return Reason.EXPIRED
    return CLOSED_STATE_REASONS.get(op.state, Reason.NOT_OFFERED)


_ISSUED_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")  # what a cursor may name: ids we made


def encode_cursor(created_at: datetime, operation_id: str) -> str:
    raw = f"{iso_utc(created_at)}|{operation_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, operation_id = raw.split("|", 1)
        if not _ISSUED_ID.fullmatch(operation_id):  # e.g. a NUL, which PostgreSQL refuses
            raise ValueError(operation_id)
        return parse_iso_utc(stamp), operation_id
    except (ValueError, OverflowError, binascii.Error, UnicodeDecodeError):
        # OverflowError: a timestamp at the edge of the calendar moved into UTC
        raise InvalidCursor(
            "cursor is not one this API issued; pass next_cursor verbatim"
        ) from None


def content_differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Dotted paths where two JSON values differ (leaves only)."""
    if isinstance(old, dict) and isinstance(new, dict):
        fields: list[str] = []
        for key in sorted(set(old) | set(new)):
            sub = f"{path}.{key}" if path else key
            if key not in old or key not in new:
                fields.append(sub)
            else:
                fields.extend(content_differences(old[key], new[key], sub))
        return fields
    return [] if old == new else [path or "$"]


T = TypeVar("T")
# built once: building a statement costs more than running it (the click path reads this)
LOAD_OPERATION = select(OperationRow.__table__).where(OperationRow.id == bindparam("operation_id"))


class Store:
    def __init__(
        self,
        engine: AsyncEngine,
        clock: Clock = utc_now,
        writer: GroupWriter | None = None,
        reader: SqliteReader | None = None,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.sqlite = engine.dialect.name == "sqlite"
        # hot reads in one hop on SQLite (store/reader.py); None: through the engine
        self.reader = reader
        # The process's one group-commit writer (store/groupcommit): hot paths submit intents
        # to it; on SQLite every other write takes a turn from it, so one writes at a time.
        self.writer = writer
        # write() and transact() transactions begun (not hand-written intents: the writer's
        # stats count those), for tests that count a pass's writes
        self.writes = 0

    async def close(self) -> None:
        if self.writer is not None:
            await self.writer.close()
        if self.reader is not None:
            await self.reader.close()
        await self.engine.dispose()

    # -- plumbing ---------------------------------------------------------------------------

    async def submit(self, intent: Intent) -> Results:
        """A hot-path write as one intent of the next group commit (see store/groupcommit)."""
        if self.writer is None:
            raise RuntimeError("this store was opened without its writer; use open_store()")
        return await self.writer.submit(intent)

    async def transact(self, work: Callable[[Connection], T]) -> T:
        """One write transaction as a plain function of a sync SQLAlchemy `Connection`; what
        it returns, once committed (what it raises: nothing of it was written).

        On SQLite it rides in the writer's next group commit (`store.groupcommit.Work`):
        many such writes share one fsync and none waits for a turn. On PostgreSQL it is a
        transaction of its own on the pool (`run_sync`). So `work` must only touch the
        database, and briefly."""
        if self.sqlite and self.writer is not None and self.writer.runs_work:
            self.writes += 1
            return await self.writer.run(work)
        async with self.write() as conn:  # counts itself
            return await conn.run_sync(work)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction written with SQLAlchemy, on the event loop (rare paths, and
        those that must read and decide in between on PostgreSQL). On SQLite it takes a
        turn; prefer `transact`."""
        self.writes += 1
        lent = self.writer.turn() if self.sqlite and self.writer is not None else nullcontext()
        async with lent:
            async with self.engine.connect() as conn:
                conn = await conn.execution_options(**{SQLITE_IMMEDIATE: True})
                async with conn.begin():
                    yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn:
            yield conn

    async def fetch(self, read: Callable[[Connection], T]) -> T:
        """A read as a plain function of a sync `Connection` (one snapshot): on SQLite in
        one hop on the reader's thread, else on the pool (`run_sync`)."""
        if self.reader is not None:
            return await self.reader.run(read)
        async with self.read() as conn:
            return await conn.run_sync(read)

    @staticmethod
    def _load(conn: Connection, operation_id: str) -> Operation | None:
        row = conn.execute(LOAD_OPERATION, {"operation_id": operation_id}).one_or_none()
        return None if row is None else Operation.from_row(row)

    def _audit(
        self,
        conn: Connection,
        operation_id: str,
        actor: str,
        event: str,
        from_state: State | None,
        to_state: State | None,
        reason: Reason | None = None,
        at: datetime | None = None,
    ) -> None:
        conn.execute(
            insert(AuditRow).values(
                operation_id=operation_id,
                at=at or self.clock(),
                actor=actor,
                event=event,
                from_state=from_state.value if from_state else None,
                to_state=to_state.value if to_state else None,
                reason_code=reason.value if reason else None,
            )
        )

    def _transition(
        self,
        conn: Connection,
        operation_id: str,
        event: Event,
        actor: str,
        *,
        values: Mapping[str, Any] | None = None,
        where: Sequence[ColumnElement[bool]] = (),
    ) -> bool:
        """Compare-and-set from the state read now; False if another writer moved it first."""
        current = (
            conn.execute(select(OperationRow.state).where(OperationRow.id == operation_id))
        ).scalar_one_or_none()
        if current is None:
            raise OperationNotFound(operation_id)
        from_state = State(current)
        to_state = next_state(from_state, event)
        now = self.clock()
        result = conn.execute(
            update(OperationRow)
            .where(OperationRow.id == operation_id, OperationRow.state == from_state.value, *where)
            .values(
                state=to_state.value,
                version=OperationRow.version + 1,
                updated_at=now,
                # every new version is due on the card, unless the caller says otherwise
                **{"card_due_at": now, **(values or {})},
            )
        )
        if result.rowcount != 1:
            return False
        self._audit(conn, operation_id, actor, event.value, from_state, to_state, at=now)
        return True

    # -- proposals --------------------------------------------------------------------------

    async def propose(self, draft: Draft) -> Proposed:
        """Create the operation, or return the one this (proposer, request_id) already made."""
        content = canonical_json(draft.request_content)

        def filed(conn: Connection) -> Proposed:
            existing = self._by_request(conn, draft.source)
            if existing is not None:
                return self._replay(existing, content)
            op = self._insert(conn, draft, content)
            if draft.supersede_open:
                self._supersede_open(conn, op, f"proposer:{draft.source.proposer}")
            return Proposed(op, created=True)

        try:
            return await self.transact(filed)
        except IntegrityError:
            # A concurrent duplicate won the unique (proposer, request_id) race.
            async with self.read() as conn:
                existing = await conn.run_sync(self._by_request, draft.source)
            if existing is None:
                raise
            return self._replay(existing, content)

    @staticmethod
    def _by_request(conn: Connection, source: Source) -> tuple[Operation, str] | None:
        row = (
            conn.execute(
                select(OperationRow.__table__).where(
                    OperationRow.source_proposer == source.proposer,
                    OperationRow.source_request_id == source.request_id,
                )
            )
        ).one_or_none()
        if row is None:
            return None
        return Operation.from_row(row), str(row.request_content)

    @staticmethod
    def _replay(existing: tuple[Operation, str], content: str) -> Proposed:
        op, stored = existing
        if stored != content:
            raise RequestConflict(
                op.id, content_differences(json.loads(stored), json.loads(content))
            )
        return Proposed(op, created=False)

    def _supersede_open(self, conn: Connection, newer: Operation, actor: str) -> None:
        """Every other unclaimed operation of this kind on this target gives way to `newer`."""
        open_states = [state.value for state in sources_for(Event.SUPERSEDED)]
        older = (
            (
                conn.execute(
                    select(OperationRow.id).where(
                        OperationRow.kind == newer.kind,
                        OperationRow.target_ref == newer.envelope.target_ref,
                        OperationRow.state.in_(open_states),
                        OperationRow.id != newer.id,
                    )
                )
            )
            .scalars()
            .all()
        )
        for operation_id in older:
            self._transition(conn, operation_id, Event.SUPERSEDED, actor)

    def _insert(self, conn: Connection, draft: Draft, content: str) -> Operation:
        now = self.clock()
        expires_at = (now + timedelta(seconds=draft.expires_in_s)).replace(microsecond=0)
        envelope = Envelope(
            id=str(ULID.from_datetime(now)),
            kind=draft.kind,
            schema_version=draft.schema_version,
            executor_name=draft.executor_name,
            executor_revision=draft.executor_revision,
            simulated=draft.simulated,
            payload=canonical_json(draft.payload),
            projection=canonical_json(draft.projection),
            audience=draft.audience,
            target_ref=draft.target_ref,
            expires_at=expires_at,
            source=draft.source,
        )
        digest = confirm_digest(envelope)
        conn.execute(
            insert(OperationRow).values(
                id=envelope.id,
                created_at=now,
                updated_at=now,
                kind=envelope.kind,
                schema_version=envelope.schema_version,
                executor_name=envelope.executor_name,
                executor_revision=envelope.executor_revision,
                simulated=envelope.simulated,
                payload=envelope.payload,
                payload_digest=envelope.payload_digest,
                projection=envelope.projection,
                projection_digest=envelope.projection_digest,
                audience_name=envelope.audience.name,
                audience_chat_id=envelope.audience.chat_id,
                audience_operators=canonical_json(sorted(envelope.audience.operators)),
                allow_self_approval=envelope.audience.allow_self_approval,
                target_ref=envelope.target_ref,
                expires_at=envelope.expires_at,
                source_proposer=envelope.source.proposer,
                source_request_id=envelope.source.request_id,
                source_requester_open_id=envelope.source.requester_open_id,
                source_context=canonical_json(envelope.source.context),
                source_routes=(
                    canonical_json(routes) if (routes := envelope.source.routes()) else None
                ),
                request_content=content,
                confirm_digest=digest,
                state=State.PREPARED.value,
                version=1,
                card_due_at=now,
            )
        )
        self._audit(
            conn,
            envelope.id,
            f"proposer:{draft.source.proposer}",
            "proposed",
            None,
            State.PREPARED,
            at=now,
        )
        op = self._load(conn, envelope.id)
        assert op is not None
        return op

    # -- card and clicks --------------------------------------------------------------------

    async def mark_card_sent(self, operation_id: str, message_id: str) -> Operation:
        """The card is posted: prepared -> awaiting_confirmation, with its message id, and in
        the same write the card recorded as shown (its delivery logged).

        If the operation left `prepared` while the card was being sent (cancelled, expired),
        the message id is still recorded and the card is due again, so it gets patched to
        show that state; a card must never stay out there with live buttons.
        """

        def marked(conn: Connection) -> Operation:
            moved = (
                self._transition(
                    conn,
                    operation_id,
                    Event.CARD_SENT,
                    "system:cards",
                    values={
                        "card_message_id": message_id,
                        # the card just sent shows the awaiting version this transition makes
                        "card_version": OperationRow.version + 1,
                        "card_due_at": None,
                    },
                    where=(OperationRow.card_message_id.is_(None),),
                )
                if self._state_of(conn, operation_id) is State.PREPARED
                else False
            )
            if not moved:
                conn.execute(
                    update(OperationRow)
                    .where(OperationRow.id == operation_id, OperationRow.card_message_id.is_(None))
                    .values(card_message_id=message_id, card_due_at=self.clock())
                )
            op = self._load(conn, operation_id)
            assert op is not None
            if op.card_version is None:  # the card shows no state any more: due again
                return op
            shown = ShownCard(operation_id, op.card_version)
            run_on_connection(
                conn, Intent(shown_statements(shown, CardAction.SEND, self.clock(), self.sqlite))
            )
            again = self._load(conn, operation_id)
            assert again is not None
            return again

        return await self.transact(marked)

    @staticmethod
    def _state_of(conn: Connection, operation_id: str) -> State:
        current = (
            conn.execute(select(OperationRow.state).where(OperationRow.id == operation_id))
        ).scalar_one_or_none()
        if current is None:
            raise OperationNotFound(operation_id)
        return State(current)

    async def confirm_and_claim(self, click: Click) -> Claimed | Refused:
        """One intent: the confirmation, the claim and the state change, returning the
        operation as claimed; or a refusal."""
        if click.action != ClickAction.CONFIRM:
            return await self._refuse(click, Reason.ACTION_UNKNOWN)
        now = self.clock()
        claim_id = str(ULID.from_datetime(now))
        try:
            (claimed, *_) = await self.submit(
                claim_intent(
                    operation_id=click.operation_id,
                    digest=click.digest,
                    operator=click.operator_open_id,
                    claim_id=claim_id,
                    now=now,
                    sqlite=self.sqlite,
                    lane=current_lane(),
                    chat_id=click.chat_id,
                    message_id=click.message_id,
                    event_id=click.event_id,
                )
            )
        except ConditionNotMet:
            return await self._refuse_as_found(click, now)
        return Claimed(Operation.from_stored(claimed[0]), claim_id)

    async def reject(self, click: Click) -> Decided | Refused:
        """One intent: the reject, its confirmation, its audit and its conclusions, returning
        the operation as rejected; or a refusal."""
        if click.action != ClickAction.REJECT:
            return await self._refuse(click, Reason.ACTION_UNKNOWN)
        now = self.clock()
        first, *rest = reject_statements(
            click.operation_id,
            digest=click.digest,
            operator=click.operator_open_id,
            now=now,
            sqlite=self.sqlite,
            at=0,
            chat_id=click.chat_id,
            message_id=click.message_id,
            event_id=click.event_id,
        )
        try:
            (rejected, *_) = await self.submit(
                Intent((replace(first, require_row=True), *rest), current_lane())
            )
        except ConditionNotMet:
            return await self._refuse_as_found(click, now)
        return Decided(Operation.from_stored(rejected[0]))

    async def record_refusal(self, click: Click, reason: Reason) -> Refused:
        """Store a refused click and its reason; nothing else changes."""
        return await self._refuse(click, reason)

    async def _refuse_as_found(self, click: Click, now: datetime) -> Refused:
        async with self.read() as conn:
            op = await conn.run_sync(self._load, click.operation_id)
        return await self._refuse(click, refusal_reason(op, click, now), op)

    async def _refuse(self, click: Click, reason: Reason, op: Operation | None = None) -> Refused:
        await self.submit(Intent(self.refusal_statements(click, reason), current_lane()))
        return Refused(reason, op)

    def refusal_statements(self, click: Click, reason: Reason) -> tuple[Statement, ...]:
        """A refused click on record (its confirmation and audit rows), for an intent."""
        return refusal_statements(
            operation_id=click.operation_id,
            action=click.action,
            operator=click.operator_open_id,
            digest=click.digest,
            reason=reason.value,
            now=self.clock(),
            sqlite=self.sqlite,
            chat_id=click.chat_id,
            message_id=click.message_id,
            event_id=click.event_id,
        )

    # -- proposer and system transitions ----------------------------------------------------

    async def cancel(self, operation_id: str, actor: str) -> Operation:
        return await self._simple(operation_id, Event.CANCELLED, actor)

    async def supersede(self, operation_id: str, actor: str) -> Operation:
        return await self._simple(operation_id, Event.SUPERSEDED, actor)

    async def _simple(self, operation_id: str, event: Event, actor: str) -> Operation:

        def moved_to(conn: Connection) -> tuple[bool, Operation | None]:
            return self._transition(conn, operation_id, event, actor), self._load(
                conn, operation_id
            )

        moved, op = await self.transact(moved_to)
        assert op is not None
        if not moved:  # pragma: no cover - only if the row moved between read and write
            raise IllegalTransition(op.state, event)
        return op

    async def expire_due(self) -> list[str]:
        """Move unclaimed operations past their expiry to `expired`; returns their ids."""
        now = self.clock()
        expirable = [state.value for state in sources_for(Event.EXPIRED)]

        def expired_now(conn: Connection) -> list[str]:
            expired: list[str] = []
            due = (
                conn.execute(
                    select(OperationRow.id, OperationRow.source_routes)
                    .where(OperationRow.state.in_(expirable), OperationRow.expires_at <= now)
                    .order_by(OperationRow.expires_at)
                    .limit(EXPIRE_BATCH)
                )
            ).all()
            for operation_id, routed in due:
                moved = self._transition(
                    conn,
                    operation_id,
                    Event.EXPIRED,
                    "system:expiry",
                    where=(OperationRow.expires_at <= now,),
                )
                if not moved:
                    continue
                expired.append(operation_id)
                if routed:  # the proposer hears of it through its routes
                    op = self._load(conn, operation_id)
                    assert op is not None
                    enqueue_closing(conn, op, now)
            return expired

        return await self.transact(expired_now)

    # -- reads ------------------------------------------------------------------------------

    async def get(self, operation_id: str) -> Operation | None:
        return await self.fetch(partial(self._load, operation_id=operation_id))

    async def list_operations(
        self,
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
        if cursor is not None:
            created_at, operation_id = decode_cursor(cursor)
            conditions.append(
                or_(
                    OperationRow.created_at < created_at,
                    and_(OperationRow.created_at == created_at, OperationRow.id < operation_id),
                )
            )
        query = (
            select(OperationRow.__table__)
            .where(*conditions)
            .order_by(OperationRow.created_at.desc(), OperationRow.id.desc())
            .limit(limit + 1)
        )
        async with self.read() as conn:
            rows = (await conn.execute(query)).all()
        ops = [Operation.from_row(row) for row in rows[:limit]]
        has_more = len(rows) > limit
        next_cursor = encode_cursor(ops[-1].created_at, ops[-1].id) if has_more else None
        return Page(tuple(ops), next_cursor, has_more)

    async def count(self, state: State | None = None) -> int:
        query = select(func.count()).select_from(OperationRow)
        if state is not None:
            query = query.where(OperationRow.state == state.value)
        async with self.read() as conn:
            return int((await conn.execute(query)).scalar_one())

    async def claim_count(self, operation_id: str) -> int:
        async with self.read() as conn:
            return int(
                (
                    await conn.execute(
                        select(func.count())
                        .select_from(ClaimRow)
                        .where(ClaimRow.operation_id == operation_id)
                    )
                ).scalar_one()
            )

    async def confirmations(self, operation_id: str) -> list[Confirmation]:
        async with self.read() as conn:
            rows = (
                await conn.execute(
                    select(ConfirmationRow.__table__)
                    .where(ConfirmationRow.operation_id == operation_id)
                    .order_by(ConfirmationRow.id)
                )
            ).all()
        return [Confirmation.from_row(row) for row in rows]

    async def confirmation_of(self, operation_id: str, event_id: str) -> Confirmation | None:
        """The record of one click (by its stored event id), if there is one."""
        async with self.read() as conn:
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

    async def audit(self, operation_id: str) -> list[AuditEntry]:
        async with self.read() as conn:
            rows = (
                await conn.execute(
                    select(AuditRow.__table__)
                    .where(AuditRow.operation_id == operation_id)
                    .order_by(AuditRow.id)
                )
            ).all()
        return [AuditEntry.from_row(row) for row in rows]
