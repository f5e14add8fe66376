"""`PolicyLedger`: the effective policy's versions, as the bot recorded them on each start
(bot/app/policy_record.py): each one an audit entry in the same transaction (`policy_changed`,
its evidence the document's digest, so the chain vouches for the document kept here)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from kernel.canonical import canonical_json, sha256_hex
from store.authority.store import Store
from store.authority.transitions import audit
from store.schema.policy_tables import PolicyAudienceRow, PolicyVersionRow
from store.schema.tables import AuditRow

POLICY_EVENT = "policy_changed"
POLICY_ACTOR_PREFIX = "config:"


POLICY_SUBJECT_PREFIX = "policy:v"


def policy_subject(seq: int) -> str:
    """The audit entry's subject (its `operation_id`) for version `seq`."""
    return f"{POLICY_SUBJECT_PREFIX}{seq}"


def is_policy_subject(subject: str) -> bool:
    return subject.startswith(POLICY_SUBJECT_PREFIX)


@dataclass(frozen=True)
class PolicyLine:
    audience: str | None  # the audience a line concerns (None: every audience)
    text: str


@dataclass(frozen=True)
class PolicyVersion:
    seq: int
    digest: str
    at: datetime
    actor: str
    document: dict[str, Any]
    changes: tuple[PolicyLine, ...]
    audiences: dict[str, str]  # audience name -> the digest its cards were filed under
    announced_at: datetime | None

    def lines_for(self, audience: str) -> list[str]:
        """The lines an audience's chat is told: its own and those about every audience."""
        return [line.text for line in self.changes if line.audience in (None, audience)]


def _versions(conn: Connection, rows: Sequence[Any]) -> list[PolicyVersion]:
    seqs = [row.seq for row in rows]
    digests: dict[int, dict[str, str]] = {seq: {} for seq in seqs}
    found = select(PolicyAudienceRow).where(PolicyAudienceRow.seq.in_(seqs))
    for audience in conn.execute(found):
        digests[audience.seq][audience.audience] = audience.digest
    return [
        PolicyVersion(
            seq=row.seq,
            digest=row.digest,
            at=row.at,
            actor=row.actor,
            document=json.loads(row.document),
            changes=tuple(PolicyLine(**line) for line in json.loads(row.changes)),
            audiences=digests[row.seq],
            announced_at=row.announced_at,
        )
        for row in rows
    ]


class PolicyLedger:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def latest(self) -> PolicyVersion | None:
        found = await self.history(1)
        return found[0] if found else None

    async def add(
        self,
        seq: int,
        digest: str,
        document: Mapping[str, Any],
        changes: Sequence[PolicyLine],
        audiences: Mapping[str, str],
        actor: str,
        *,
        announce: bool = True,
    ) -> bool:
        """Record version `seq` and its audit entry; False if another process recorded a
        version `seq` first (nothing of this one is written: read the latest again).
        `announce`: its lines are still to be posted (else it counts as announced)."""
        at = self.store.clock()

        def write(conn: Connection) -> None:
            conn.execute(
                insert(PolicyVersionRow).values(
                    seq=seq,
                    digest=digest,
                    at=at,
                    actor=actor,
                    document=canonical_json(dict(document)),
                    changes=json.dumps([line.__dict__ for line in changes], ensure_ascii=False),
                    announced_at=None if announce else at,
                )
            )
            if audiences:
                conn.execute(
                    insert(PolicyAudienceRow),
                    [
                        {"seq": seq, "audience": name, "digest": value}
                        for name, value in sorted(audiences.items())
                    ],
                )
            audit(
                conn, policy_subject(seq), actor, POLICY_EVENT, None, None, at=at, evidence=digest
            )

        try:
            await self.store.transact(write)
        except IntegrityError:
            return False
        return True

    async def version(self, seq: int) -> PolicyVersion | None:
        def read(conn: Connection) -> list[PolicyVersion]:
            found = select(PolicyVersionRow).where(PolicyVersionRow.seq == seq)
            return _versions(conn, list(conn.execute(found)))

        found = await self.store.fetch(read)
        return found[0] if found else None

    async def history(self, limit: int = 50) -> list[PolicyVersion]:
        """The newest `limit` versions, newest first."""

        def read(conn: Connection) -> list[PolicyVersion]:
            newest = select(PolicyVersionRow).order_by(PolicyVersionRow.seq.desc()).limit(limit)
            return _versions(conn, list(conn.execute(newest)))

        return await self.store.fetch(read)

    async def filed_under(
        self, audience: str, digest: str, filed_at: datetime
    ) -> PolicyVersion | None:
        """The version an operation of `audience` filed at `filed_at` under `digest` came
        from: the newest one recorded by then with that digest for the audience (a policy
        changed and changed back is two versions), else the first recorded with it."""

        def read(conn: Connection) -> list[PolicyVersion]:
            matching = (
                select(PolicyAudienceRow.seq)
                .join(PolicyVersionRow, PolicyVersionRow.seq == PolicyAudienceRow.seq)
                .where(PolicyAudienceRow.audience == audience, PolicyAudienceRow.digest == digest)
            )
            by_then = matching.where(PolicyVersionRow.at <= filed_at).order_by(
                PolicyAudienceRow.seq.desc()
            )
            seq = conn.execute(by_then.limit(1)).scalar_one_or_none()
            if seq is None:
                first = matching.order_by(PolicyAudienceRow.seq).limit(1)
                seq = conn.execute(first).scalar_one_or_none()
            if seq is None:
                return []
            version = select(PolicyVersionRow).where(PolicyVersionRow.seq == seq)
            return _versions(conn, list(conn.execute(version)))

        found = await self.store.fetch(read)
        return found[0] if found else None

    async def changed_since(self, audience: str, seq: int) -> list[PolicyVersion]:
        """Versions after `seq` that changed `audience`'s card digest, oldest first: what made
        a card filed under version `seq` stale."""

        def read(conn: Connection) -> list[PolicyVersion]:
            later = list(
                conn.execute(
                    select(PolicyVersionRow)
                    .where(PolicyVersionRow.seq > seq)
                    .order_by(PolicyVersionRow.seq)
                    .limit(50)
                )
            )
            return _versions(conn, later)

        versions = await self.store.fetch(read)
        changed: list[PolicyVersion] = []
        before = await self._digest_at(audience, seq)
        for version in versions:
            now = version.audiences.get(audience)
            if now != before:
                changed.append(version)
            before = now
        return changed

    async def _digest_at(self, audience: str, seq: int) -> str | None:
        def read(conn: Connection) -> str | None:
            found = conn.execute(
                select(PolicyAudienceRow.digest).where(
                    PolicyAudienceRow.seq == seq, PolicyAudienceRow.audience == audience
                )
            )
            return found.scalar_one_or_none()

        return await self.store.fetch(read)

    async def check(self) -> tuple[int, str | None]:
        """Each version's document against its digest, and its digest against its audit
        entry's evidence (which the chain covers): (versions read, the first that does not
        fit, in words, or None)."""

        def read(conn: Connection) -> tuple[int, str | None]:
            rows = list(conn.execute(select(PolicyVersionRow).order_by(PolicyVersionRow.seq)))
            subjects = [policy_subject(row.seq) for row in rows]
            # by subject: the audit log's operation index, never a scan of its history
            entries = conn.execute(
                select(AuditRow.operation_id, AuditRow.evidence).where(
                    AuditRow.operation_id.in_(subjects), AuditRow.event == POLICY_EVENT
                )
            )
            evidence = {entry.operation_id: entry.evidence for entry in entries}
            for count, row in enumerate(rows, start=1):
                if sha256_hex(row.document) != row.digest:
                    return count, f"policy version {row.seq}'s document was edited"
                if evidence.get(policy_subject(row.seq)) != row.digest:
                    return count, f"policy version {row.seq} is not the one its audit entry names"
            return len(rows), None

        return await self.store.fetch(read)

    async def unannounced(self) -> list[PolicyVersion]:
        """Versions whose lines were not posted yet, oldest first."""

        def read(conn: Connection) -> list[PolicyVersion]:
            waiting = (
                select(PolicyVersionRow)
                .where(PolicyVersionRow.announced_at.is_(None))
                .order_by(PolicyVersionRow.seq)
                .limit(50)
            )
            return _versions(conn, list(conn.execute(waiting)))

        return await self.store.fetch(read)

    async def announced(self, seq: int) -> None:
        at = self.store.clock()

        def write(conn: Connection) -> None:
            conn.execute(
                update(PolicyVersionRow)
                .where(PolicyVersionRow.seq == seq, PolicyVersionRow.announced_at.is_(None))
                .values(announced_at=at)
            )

        await self.store.transact(write)
