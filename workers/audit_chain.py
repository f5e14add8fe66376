"""The audit chainer: links the audit log's new entries to its hash chain
(store/audit/chain.py says why after the write and not in it). Every replica runs one; they
take turns on the chain's head, so running several is safe, never a second chain."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from store import AuditChain

log = logging.getLogger("countersign.audit")

# how long an entry may wait unlinked: the window in which a raw-SQL edit of it is not
# yet evident (a read of a partial index when nothing waits)
LINK_PERIOD_S = 1.0


async def run_audit_chain(
    chain: AuditChain, stop: asyncio.Event, period_s: float = LINK_PERIOD_S
) -> None:
    while not stop.is_set():
        try:
            await chain.link()
        except Exception:  # a store hiccup: the next pass links what this one did not
            log.exception("linking the audit chain failed; retrying in %.1fs", period_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), period_s)
