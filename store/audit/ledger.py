"""`AuditChain`: linking the audit log's new entries and checking the chain, for the chainer
worker (workers/audit_chain.py) and `countersign audit verify --store`."""

from __future__ import annotations

from store.audit.chain import (
    ChainCheck,
    link_pending,
    unlinked_count,
    unlinked_exists,
    verify_stored,
)
from store.authority.store import Store


class AuditChain:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def link(self) -> int:
        """Link what is waiting, a batch per write, until nothing is; how many it linked."""
        linked = 0
        while await self.store.fetch(unlinked_exists):
            batch = await self.store.transact(link_pending)
            linked += batch
            if batch == 0:  # only entries of transactions still running: the next pass
                break
        return linked

    async def verify(self) -> ChainCheck:
        return await self.store.fetch(verify_stored)

    async def unlinked(self) -> int:
        """Entries not linked yet (the chainer links them within its period)."""
        return await self.store.fetch(unlinked_count)
