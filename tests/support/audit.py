"""The audit chain in tests: waiting for it to link everything (store/audit/chain.py), and
the evidence a decision's entry names."""

from __future__ import annotations

import hashlib

from sqlalchemy import select

from store import AuditChain, InboxRow, Store
from tests.support.waiting import eventually


async def link_all(store: Store) -> int:
    """Link until nothing waits; how many were linked. On PostgreSQL an entry waits while any
    older transaction of the server still runs, another test session's too (CI runs two
    against one server), so this polls to a deadline instead of linking once."""
    chain = AuditChain(store)
    linked = 0

    async def nothing_waits() -> bool:
        nonlocal linked
        linked += await chain.link()
        return await chain.unlinked() == 0

    await eventually(nothing_waits, interval_s=0.2)
    return linked


async def inbox_digest(store: Store, kind: str, key: str) -> str:
    """SHA-256 of an inbox entry's payload as stored: what its decision's audit entry must
    name as its evidence."""
    async with store.read() as conn:
        stored = (
            await conn.execute(
                select(InboxRow.payload).where(InboxRow.kind == kind, InboxRow.key == key)
            )
        ).scalar_one()
    return hashlib.sha256(str(stored).encode()).hexdigest()


async def evidence_of(store: Store, operation_id: str, event: str) -> str | None:
    """The evidence the operation's (one) `event` audit entry names."""
    [entry] = [e for e in await store.audit(operation_id) if e.event == event]
    return entry.evidence
