"""Waiting for the audit chain to link everything (store/audit/chain.py)."""

from __future__ import annotations

from store import AuditChain, Store
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
