"""The operation authority: the only code that changes an operation's envelope state.

Every state change is one conditional UPDATE whose WHERE clause carries the rule
(state, digest, expiry), so the database, not a Python lock, decides races.

`Store` is the façade: the process's connections (engine, group-commit writer, SQLite
reader), the click decisions (hand-written intents), and every other public method
delegating to the module that owns it: `store/authority/filing.py` (proposals),
`store/authority/transitions.py` (the compare-and-set and the system's moves),
`store/reads/operations.py` (reads). Its values live in `store/claims/decisions.py`,
`store/authority/proposals.py` and `store/reads/paging.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager, nullcontext
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import TypeVar

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from ulid import ULID

# the dashboard's session tables on the one Base, for every holder of a store (and the
# migrations' comparison with the models)
import store.sessions.session_rows  # noqa: F401
from kernel.canonical import canonical_json
from kernel.reasons import Reason
from kernel.timeutil import Clock, utc_now
from store.authority import transitions
from store.authority.filing import being_sent, by_request, file_draft, replay, replayed
from store.authority.proposals import ActiveClaim, Draft, Proposed
from store.authority.records import AuditEntry, Confirmation, Operation
from store.authority.transitions import load_operation
from store.backend.engine import SQLITE_IMMEDIATE
from store.backend.sqlite_reader import SqliteReader
from store.claims.claim_sql import claim_params
from store.claims.click_sql import refusal_statements
from store.claims.decisions import Claimed, Click, Counted, Decided, Refused, refusal_reason
from store.claims.quorum_sql import Confirmed, confirm_statements
from store.claims.reject_sql import CLOSING_EVENTS, reject_statements
from store.groupcommit import (
    ConditionNotMet,
    GroupWriter,
    Intent,
    Results,
    Statement,
    current_lane,
)
from store.lifecycle import Event, IllegalTransition, State
from store.reads import operations as operation_reads
from store.reads.paging import MAX_PAGE_SIZE, Page
from store.vocabulary import ClickAction

T = TypeVar("T")


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
        # hot reads in one hop on SQLite (store/backend/sqlite_reader.py); None: through the engine
        self.reader = reader
        # The process's one group-commit writer (store/groupcommit): hot paths commit their
        # intents through it; on SQLite every other write takes a turn from it, so one writes at a time.
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

    async def commit_intent(self, intent: Intent) -> Results:
        """A hot-path write as one intent of the next group commit (see store/groupcommit)."""
        if self.writer is None:
            raise RuntimeError("this store was opened without its writer; use open_store()")
        return await self.writer.commit_intent(intent)

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

    # -- proposals --------------------------------------------------------------------------

    async def propose(self, draft: Draft) -> Proposed:
        """Create the operation, or return the one this (proposer, request_id) already made."""
        content = canonical_json(draft.request_content)
        try:
            return await self.transact(lambda conn: file_draft(conn, self.clock, draft, content))
        except IntegrityError:
            # A concurrent duplicate won the unique (proposer, request_id) race.
            async with self.read() as conn:
                again = await conn.run_sync(replayed, draft.source, content)
            if again is None:
                raise
            return again

    async def filed_before(self, draft: Draft) -> Operation | None:
        """The operation this draft's (proposer, request_id) already filed, or None; raises
        RequestConflict or ActiveClaim as `propose` would. Writes nothing."""
        async with self.read() as conn:
            existing = await conn.run_sync(by_request, draft.source)
            if existing is None and draft.supersede_open:
                sending = await conn.run_sync(being_sent, draft.kind, draft.target_ref)
                if sending is not None:
                    raise ActiveClaim(sending, draft.target_ref)
        if existing is None:
            return None
        return replay(existing, canonical_json(draft.request_content)).operation

    # -- card and clicks --------------------------------------------------------------------

    async def mark_card_sent(self, operation_id: str, message_id: str) -> Operation:
        """The card is posted: prepared -> awaiting_confirmation, with its message id, and in
        the same write the card recorded as shown (its delivery logged).

        If the operation left `prepared` while the card was being sent (cancelled, expired),
        the message id is still recorded and the card is due again, so it gets patched to
        show that state; a card must never stay out there with live buttons.
        """
        return await self.transact(
            lambda conn: transitions.mark_card_sent(
                conn, self.clock, self.sqlite, operation_id, message_id
            )
        )

    async def confirm_and_claim(self, click: Click) -> Claimed | Counted | Refused:
        """One intent: the confirmation and, if it is the last one the operation needs, the
        claim and the state change (store/claims/quorum_sql.py), returning the operation as it
        left it; or a refusal."""
        if click.action != ClickAction.CONFIRM:
            return await self._refuse(click, Reason.ACTION_UNKNOWN)
        now = self.clock()
        claim_id = str(ULID.from_datetime(now))
        params = claim_params(
            operation_id=click.operation_id,
            digest=click.digest,
            operator=click.operator_open_id,
            claim_id=claim_id,
            now=now,
            sqlite=self.sqlite,
            chat_id=click.chat_id,
            message_id=click.message_id,
            event_id=click.event_id,
            entry=click.entry,
            evidence=click.evidence,
        )
        statements, layout = confirm_statements(params, sqlite=self.sqlite, at=0)
        results = await self.commit_intent(Intent(statements, current_lane()))
        confirmed, row = layout.read(results)
        if confirmed is Confirmed.CLAIMED:
            assert row is not None
            return Claimed(Operation.from_stored(row), claim_id)
        if confirmed is Confirmed.COUNTED:
            assert row is not None
            return Counted(Operation.from_stored(row))
        if confirmed is Confirmed.ALREADY:
            return await self._refuse(click, Reason.ALREADY_CONFIRMED)
        return await self._refuse_as_found(click, now)

    async def reject(self, click: Click) -> Decided | Refused:
        """One intent: the reject, its confirmation, its audit and its conclusions, returning
        the operation as rejected; or a refusal."""
        if click.action not in CLOSING_EVENTS:
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
            entry=click.entry,
            reason=click.reason,
            action=ClickAction(click.action),
            evidence=click.evidence,
        )
        try:
            (rejected, *_) = await self.commit_intent(
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
            op = await conn.run_sync(load_operation, click.operation_id)
        return await self._refuse(click, refusal_reason(op, click, now), op)

    async def _refuse(self, click: Click, reason: Reason, op: Operation | None = None) -> Refused:
        await self.commit_intent(Intent(self.refusal_statements(click, reason), current_lane()))
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
            entry=click.entry,
            evidence=click.evidence,
        )

    # -- proposer and system transitions ----------------------------------------------------

    async def cancel(self, operation_id: str, actor: str) -> Operation:
        return await self._simple(operation_id, Event.CANCELLED, actor)

    async def supersede(self, operation_id: str, actor: str) -> Operation:
        return await self._simple(operation_id, Event.SUPERSEDED, actor)

    async def _simple(self, operation_id: str, event: Event, actor: str) -> Operation:
        moved, op = await self.transact(
            lambda conn: transitions.moved_to(conn, self.clock, operation_id, event, actor)
        )
        assert op is not None
        if not moved:  # pragma: no cover - only if the row moved between read and write
            raise IllegalTransition(op.state, event)
        return op

    async def expire_due(self) -> list[str]:
        """Move unclaimed operations past their expiry to `expired`; returns their ids."""
        now = self.clock()
        return await self.transact(lambda conn: transitions.expire_due(conn, self.clock, now))

    # -- reads (store/reads/operations.py) ---------------------------------------------------

    async def get(self, operation_id: str) -> Operation | None:
        return await self.fetch(partial(load_operation, operation_id=operation_id))

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
        return await operation_reads.list_operations(
            self, state=state, limit=limit, cursor=cursor, proposer=proposer, audiences=audiences
        )

    async def count(self, state: State | None = None) -> int:
        return await operation_reads.count(self, state)

    async def claim_count(self, operation_id: str) -> int:
        return await operation_reads.claim_count(self, operation_id)

    async def confirmations(self, operation_id: str) -> list[Confirmation]:
        return await operation_reads.confirmations(self, operation_id)

    async def confirmation_of(self, operation_id: str, event_id: str) -> Confirmation | None:
        """The record of one click (by its stored event id), if there is one."""
        return await operation_reads.confirmation_of(self, operation_id, event_id)

    async def audit(self, operation_id: str) -> list[AuditEntry]:
        return await operation_reads.audit(self, operation_id)
