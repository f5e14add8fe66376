"""`DelegationLedger`: delegations granted, revoked and ended, each an audit entry written in
the same transaction (subject `delegation:<id>`). Whether a grant is allowed (the audience
allows it, the window is within its longest, the delegator is one of its operators) is the
config's to say (bot/config/delegation.py); the store refuses what is never allowed (a right
handed to oneself, a window that ends before it starts) and checks in force at each click
(store/claims/delegation_sql.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update
from ulid import ULID

from kernel.canonical import canonical_json, sha256_hex
from kernel.timeutil import iso_utc
from store.authority.store import Store
from store.authority.transitions import audit
from store.schema.delegation_tables import DelegationRow

SUBJECT_PREFIX = "delegation:"
GRANTED = "delegation_granted"
REVOKED = "delegation_revoked"
ENDED = "delegation_ended"
LISTED = 200  # delegations shown at once (the newest)


def delegation_subject(delegation_id: str) -> str:
    return f"{SUBJECT_PREFIX}{delegation_id}"


class DelegationRefused(ValueError):
    """A grant or a revocation the store never allows; the message says why."""


@dataclass(frozen=True)
class Delegation:
    id: str
    audience: str
    delegator: str
    delegate: str
    starts_at: datetime
    ends_at: datetime
    created_at: datetime
    created_by: str
    revoked_at: datetime | None
    revoked_by: str | None

    def in_force(self, at: datetime) -> bool:
        return self.revoked_at is None and self.starts_at <= at < self.ends_at

    def terms_digest(self) -> str:
        """What its grant's audit entry names as evidence: the terms, digested."""
        terms = {
            "id": self.id,
            "audience": self.audience,
            "delegator": self.delegator,
            "delegate": self.delegate,
            "starts_at": iso_utc(self.starts_at),
            "ends_at": iso_utc(self.ends_at),
        }
        return sha256_hex(canonical_json(terms))

    @classmethod
    def from_row(cls, row: Any) -> Delegation:
        return cls(
            id=row.id,
            audience=row.audience,
            delegator=row.delegator,
            delegate=row.delegate,
            starts_at=row.starts_at,
            ends_at=row.ends_at,
            created_at=row.created_at,
            created_by=row.created_by,
            revoked_at=row.revoked_at,
            revoked_by=row.revoked_by,
        )


class DelegationLedger:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def grant(
        self,
        audience: str,
        delegator: str,
        delegate: str,
        *,
        ends_at: datetime,
        by: str,
        starts_at: datetime | None = None,
    ) -> Delegation:
        """Hand `delegator`'s right in `audience` to `delegate` until `ends_at` (from
        `starts_at`, default now); `by`: who did it (the audit entry's actor)."""
        now = self.store.clock()
        starts = starts_at or now
        if delegator == delegate:
            raise DelegationRefused("a right cannot be handed to its own holder")
        if ends_at <= max(starts, now):
            raise DelegationRefused("the window must end after it starts, and in the future")
        delegation = Delegation(
            id=str(ULID.from_datetime(now)),
            audience=audience,
            delegator=delegator,
            delegate=delegate,
            starts_at=starts,
            ends_at=ends_at,
            created_at=now,
            created_by=by,
            revoked_at=None,
            revoked_by=None,
        )

        def write(conn: Connection) -> None:
            conn.execute(
                insert(DelegationRow).values(
                    id=delegation.id,
                    audience=audience,
                    delegator=delegator,
                    delegate=delegate,
                    starts_at=starts,
                    ends_at=ends_at,
                    ends_text=iso_utc(ends_at),
                    created_at=now,
                    created_by=by,
                )
            )
            subject = delegation_subject(delegation.id)
            evidence = delegation.terms_digest()
            audit(conn, subject, by, GRANTED, None, None, at=now, evidence=evidence)

        await self.store.transact(write)
        return delegation

    async def revoke(self, delegation_id: str, by: str) -> Delegation | None:
        """End a delegation now; None if there is none in force by that id (unknown,
        revoked or ended already: nothing changes)."""
        now = self.store.clock()

        def write(conn: Connection) -> Any:
            row = conn.execute(
                update(DelegationRow)
                .where(
                    DelegationRow.id == delegation_id,
                    DelegationRow.revoked_at.is_(None),
                    DelegationRow.ends_at > now,
                )
                .values(revoked_at=now, revoked_by=by)
                .returning(*DelegationRow.__table__.columns)
            ).one_or_none()
            if row is not None:
                subject = delegation_subject(delegation_id)
                audit(conn, subject, by, REVOKED, None, None, at=now)
            return row

        row = await self.store.transact(write)
        return None if row is None else Delegation.from_row(row)

    async def find(self, delegation_id: str) -> Delegation | None:
        def read(conn: Connection) -> Delegation | None:
            row = conn.execute(
                select(DelegationRow.__table__).where(DelegationRow.id == delegation_id)
            ).one_or_none()
            return None if row is None else Delegation.from_row(row)

        return await self.store.fetch(read)

    async def listed(self, audience: str | None = None, *, ended: bool = False) -> list[Delegation]:
        """Delegations, newest first: those in force or yet to start (`ended`: all)."""
        now = self.store.clock()

        def read(conn: Connection) -> list[Delegation]:
            query = select(DelegationRow.__table__).order_by(DelegationRow.id.desc()).limit(LISTED)
            if audience is not None:
                query = query.where(DelegationRow.audience == audience)
            if not ended:
                query = query.where(DelegationRow.revoked_at.is_(None), DelegationRow.ends_at > now)
            return [Delegation.from_row(row) for row in conn.execute(query)]

        return await self.store.fetch(read)

    async def to_person(self, audience: str, delegate: str) -> list[Delegation]:
        """Every delegation `delegate` holds or held in `audience` (to name why a click of
        theirs was refused), newest first."""

        def read(conn: Connection) -> list[Delegation]:
            query = (
                select(DelegationRow.__table__)
                .where(DelegationRow.audience == audience, DelegationRow.delegate == delegate)
                .order_by(DelegationRow.ends_at.desc())
                .limit(LISTED)
            )
            return [Delegation.from_row(row) for row in conn.execute(query)]

        return await self.store.fetch(read)

    async def audit_ended(self) -> int:
        """Write an entry for each delegation that has run out since the last look (once
        each, at its end); how many. Reads first: nothing ended, nothing written."""
        now = self.store.clock()
        unaudited = (
            DelegationRow.ends_at <= now,
            DelegationRow.revoked_at.is_(None),
            DelegationRow.ended_audited_at.is_(None),
        )

        def due(conn: Connection) -> bool:
            found = conn.execute(select(DelegationRow.id).where(*unaudited).limit(1))
            return found.first() is not None

        if not await self.store.fetch(due):
            return 0

        def write(conn: Connection) -> int:
            ended = conn.execute(
                update(DelegationRow)
                .where(
                    DelegationRow.ends_at <= now,
                    DelegationRow.revoked_at.is_(None),
                    DelegationRow.ended_audited_at.is_(None),
                )
                .values(ended_audited_at=now)
                .returning(DelegationRow.id, DelegationRow.ends_at)
            ).all()
            for delegation_id, ends_at in sorted(ended):
                subject = delegation_subject(delegation_id)
                audit(conn, subject, "system:delegations", ENDED, None, None, at=ends_at)
            return len(ended)

        return await self.store.transact(write)
