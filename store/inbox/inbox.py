"""The ingress inbox: each callback (by event_id) and text message (by message_id) once.

An entry is written before anything acts on it. A replayed callback gets the first
answer back; a text message that was received but never answered is found after a
restart and answered, at most `max_tries` times.

The stored envelope is Lark's, minus its secrets: the verification token (`header.token`,
or `token` at the top level), the card's update token (`event.token`) and any `encrypt`
field are dropped before it is written. Keys longer than the column are kept by digest.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select, update

from kernel.canonical import record_json
from kernel.timeutil import stored_time
from store.authority.store import Store
from store.claims.click_sql import ShownCard, answered_intent, entry_intent, replayed
from store.groupcommit import Row, Statement, current_lane
from store.schema.tables import InboxRow
from store.vocabulary import InboxStatus

RECEIVED = InboxStatus.RECEIVED.value
ANSWERED = InboxStatus.ANSWERED.value
FAILED = InboxStatus.FAILED.value
KEY_CHARS = 128  # InboxRow.key
SECRET_FIELDS = frozenset({"token", "encrypt"})
# where Lark puts them: the envelope itself (schema 1.0, url_verification), its header
# (schema 2.0) and the callback's event (the card update token)
SECRET_PLACES = ((), ("header",), ("event",))


def stored_key(key: str) -> str:
    """A dedupe key that fits its column: short keys as they are, longer ones by digest."""
    if len(key) <= KEY_CHARS:
        return key
    return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def without_secrets(envelope: dict[str, Any]) -> dict[str, Any]:
    """A copy of `envelope` without the tokens and ciphertext Lark sends with it."""
    cleaned = dict(envelope)
    for place in SECRET_PLACES:
        parent = cleaned
        for step in place:
            child = parent.get(step)
            if not isinstance(child, dict):
                break
            parent[step] = child = dict(child)
            parent = child
        else:
            for name in SECRET_FIELDS & parent.keys():
                del parent[name]
    return cleaned


def payload_digest(payload: dict[str, Any]) -> str:
    """SHA-256 of a payload as the inbox keeps it (its stored text): what a decision's audit
    entry names as its evidence, recomputable from the inbox row while it is kept."""
    text = record_json(without_secrets(payload))
    # surrogatepass: an unstorable click (refused for it) still gets a digest, never an error
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class InboxEntry:
    kind: str
    key: str
    received_at: datetime
    payload: dict[str, Any]
    status: str
    tries: int
    answer: dict[str, Any] | None

    @classmethod
    def from_row(cls, row: Any) -> InboxEntry:
        return cls(
            kind=row.kind,
            key=row.key,
            received_at=row.received_at,
            payload=json.loads(row.payload),
            status=row.status,
            tries=row.tries,
            answer=json.loads(row.answer) if row.answer is not None else None,
        )

    @classmethod
    def from_stored(cls, kind: str, key: str, row: Row) -> InboxEntry:
        """An entry as a raw driver returned it (a group-commit intent's row)."""
        return cls(
            kind=kind,
            key=key,
            received_at=stored_time(row["received_at"]),
            payload=json.loads(row["payload"]),
            status=row["status"],
            tries=row["tries"],
            answer=json.loads(row["answer"]) if row["answer"] is not None else None,
        )


@dataclass(frozen=True)
class Received:
    entry: InboxEntry
    first: bool  # False: this key was seen before (a replay or a re-push)


class Inbox:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def receive(self, kind: str, key: str, payload: dict[str, Any]) -> Received:
        """Record `key` if new; either way return the entry as stored (without secrets).

        One group-commit intent: clicks arriving together share a transaction, and the
        unique (kind, key) decides which one is first, on any number of replicas."""
        key = stored_key(key)
        now = self.store.clock()
        cleaned = without_secrets(payload)
        inserted, stored = await self.store.commit_intent(
            entry_intent(
                kind=kind,
                key=key,
                payload=record_json(cleaned),
                now=now,
                sqlite=self.store.sqlite,
                lane=current_lane(),
            )
        )
        if inserted:
            return Received(InboxEntry(kind, key, now, cleaned, RECEIVED, 0, None), first=True)
        entry = InboxEntry.from_stored(kind, key, replayed(stored))
        return Received(entry, first=False)

    @staticmethod
    async def _get(conn: Any, kind: str, key: str) -> InboxEntry | None:
        row = (
            await conn.execute(
                select(InboxRow.__table__).where(InboxRow.kind == kind, InboxRow.key == key)
            )
        ).one_or_none()
        return None if row is None else InboxEntry.from_row(row)

    async def get(self, kind: str, key: str) -> InboxEntry | None:
        async with self.store.read() as conn:
            return await self._get(conn, kind, stored_key(key))

    async def answered(
        self,
        kind: str,
        key: str,
        answer: dict[str, Any],
        shown: ShownCard | None = None,
        also: tuple[Statement, ...] = (),
    ) -> bool:
        """Store the answer once (False if another answer was stored first); `shown`: the
        answer carried that card, now recorded as shown; `also`: what else belongs to this
        moment (a refusal): all in one write."""
        (stored, *_) = await self.store.commit_intent(
            answered_intent(
                kind=kind,
                key=stored_key(key),
                answer=record_json(answer),
                now=self.store.clock(),
                sqlite=self.store.sqlite,
                shown=shown,
                also=also,
                lane=current_lane(),
            )
        )
        return bool(stored)

    async def attempt(self, kind: str, key: str, max_tries: int) -> bool:
        """Count one processing try; False (and marked failed) once `max_tries` are used up."""
        key = stored_key(key)
        counted = (
            update(InboxRow)
            .where(
                InboxRow.kind == kind,
                InboxRow.key == key,
                InboxRow.status == RECEIVED,
                InboxRow.tries < max_tries,
            )
            .values(tries=InboxRow.tries + 1)
        )
        used_up = (
            update(InboxRow)
            .where(InboxRow.kind == kind, InboxRow.key == key, InboxRow.status == RECEIVED)
            .values(status=FAILED)
        )

        def write(conn: Connection) -> bool:
            if conn.execute(counted).rowcount == 1:
                return True
            conn.execute(used_up)
            return False

        return await self.store.transact(write)

    async def unanswered(
        self, kind: str, limit: int = 100, *, received_before: datetime | None = None
    ) -> list[InboxEntry]:
        """Entries still `received`, oldest first; optionally only those received before a time
        (a restarted consumer's own live entries are not a previous run's leftovers)."""
        query = select(InboxRow.__table__).where(InboxRow.kind == kind, InboxRow.status == RECEIVED)
        if received_before is not None:
            query = query.where(InboxRow.received_at < received_before)
        async with self.store.read() as conn:
            rows = (await conn.execute(query.order_by(InboxRow.id).limit(limit))).all()
        return [InboxEntry.from_row(row) for row in rows]

    async def count(self, kind: str, status: str | None = None) -> int:
        query = select(func.count()).select_from(InboxRow).where(InboxRow.kind == kind)
        if status is not None:
            query = query.where(InboxRow.status == status)
        async with self.store.read() as conn:
            return int((await conn.execute(query)).scalar_one())
