"""`AuditChain`: linking the audit log's new entries, checking the chain and exporting it, for
the chainer worker (workers/audit_chain.py) and `countersign audit verify|export`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from store.audit.chain import (
    ChainCheck,
    link_pending,
    read_head,
    unlinked_count,
    unlinked_exists,
    verify_stored,
)
from store.audit.export import ExportWindow, exported
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

    async def head(self) -> tuple[int, str]:
        """The chain's last linked entry: its place and its hash."""
        return await self.store.fetch(read_head)

    async def export(self, window: ExportWindow, write: Callable[[dict[str, Any]], None]) -> int:
        """Hand each record of the window's run to `write` as it is read (one snapshot, a page
        of entries in memory at a time); how many it handed over."""

        def stream(conn: Connection) -> int:
            count = 0
            for record in exported(conn, window):
                write(record)
                count += 1
            return count

        return await self.store.fetch(stream)
