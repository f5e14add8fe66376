"""Expiry worker: unclaimed operations past their expiry become `expired`."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from store.authority import Store

log = logging.getLogger("countersign.expiry")


async def run_expiry(store: Store, interval_s: float, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            expired = await store.expire_due()
            for operation_id in expired:
                log.info("operation expired", extra={"operation_id": operation_id})
        except Exception:
            # Crash-only elsewhere, but a transient store error must not kill the sweep.
            log.exception("expiry sweep failed; retrying in %.1fs", interval_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
