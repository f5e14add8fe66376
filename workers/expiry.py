"""Expiry worker: unclaimed operations past their expiry become `expired`, and delegations
that ran out get their audit entry (store/delegation/ledger.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from store import DelegationLedger, Store

log = logging.getLogger("countersign.expiry")

OnExpired = Callable[[list[str]], Awaitable[None]]


async def run_expiry(
    store: Store, interval_s: float, stop: asyncio.Event, on_expired: OnExpired | None = None
) -> None:
    """Sweep every `interval_s` until `stop`; `on_expired` gets each batch (cards to patch)."""
    while not stop.is_set():
        try:
            expired = await store.expire_due()
            for operation_id in expired:
                log.info("operation %s expired", operation_id)
            if expired and on_expired is not None:
                await on_expired(expired)
            ended = await DelegationLedger(store).audit_ended()
            if ended:
                log.info("%d delegations ended", ended)
        except Exception:
            # A transient store error must not end the sweep; the next one retries.
            log.exception("expiry sweep failed; retrying in %.1fs", interval_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
