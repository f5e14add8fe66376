"""Auto-send worker: time-boxed drafts nobody decided in time are confirmed by the clock
(`store/auto_send.py` decides, in one conditional write each)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from store.authority import Store
from store.auto_send import auto_send_due
from store.logcontext import about

log = logging.getLogger("countersign.auto_send")


async def run_auto_send(
    store: Store, interval_s: float, stop: asyncio.Event, on_claimed: Callable[[], None]
) -> None:
    """Sweep every `interval_s` until `stop`; `on_claimed` after a sweep that claimed any
    (the executor runs them, the card worker patches their cards)."""
    while not stop.is_set():
        try:
            claimed = await auto_send_due(store)
            for claim in claimed:
                with about(claim.operation.id):
                    log.info("nobody decided in time: sent by the clock (claim %s)", claim.claim_id)
            if claimed:
                on_claimed()
        except Exception:
            # A transient store error must not end the sweep; the next one retries.
            log.exception("auto-send sweep failed; retrying in %.1fs", interval_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
