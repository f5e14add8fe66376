"""The store's share of `/readyz` and `/metrics`: one summary (store/reads/summary.py),
refreshed in the background, so neither ever asks the store anything on the request and
both answer in the same few milliseconds whatever the store holds (issue 34).

The first refresh runs before the app serves; then one every `[http] summary_period_s`.
Its age is reported; a summary older than `summary_stale_after_s` means the store is stuck
(a read that never returns, a pool that never lends a connection), and `/readyz` says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from kernel.timeutil import iso_utc, utc_now
from store import Store, StoreSummary, store_summary

log = logging.getLogger("countersign")


class Summary:
    def __init__(self, store: Store, period_s: float, stale_after_s: float) -> None:
        self.store = store
        self.period_s = period_s
        # a refresh that takes longer is given up (and the summary is stale by then anyway)
        self.stale_after_s = stale_after_s
        self.latest: StoreSummary | None = None
        self.error: str | None = None  # the last refresh's failure, by class
        self.latency_ms: float | None = None  # how long the latest refresh took
        self.refreshed_at: datetime | None = None
        self._fresh_since = time.monotonic()  # of the latest summary (or of the start)
        self._task: asyncio.Task[None] | None = None

    async def refresh(self) -> None:
        started = time.monotonic()
        try:
            # asyncio.timeout, not wait_for: on 3.11 a wait_for whose read finishes just as it
            # is cancelled returns the read and drops the cancellation
            async with asyncio.timeout(self.stale_after_s):
                latest = await store_summary(self.store)
        except Exception as error:  # the class only: a message may carry a DSN
            if self.error is None:  # once per failure, not once a period
                log.warning("store summary not refreshed: %s", type(error).__name__)
            self.error = type(error).__name__
            return
        if self.error is not None:
            log.info("store summary refreshed again after %s", self.error)
        self.latest, self.error = latest, None
        self._fresh_since = time.monotonic()
        self.latency_ms = round((self._fresh_since - started) * 1000, 3)
        self.refreshed_at = utc_now()

    def age_s(self) -> float:
        """Seconds since the latest summary was read (since the start, before the first)."""
        return time.monotonic() - self._fresh_since

    def state(self) -> str:
        """ok | down (the last refresh failed) | stale (older than the bound: the store is
        stuck) | starting (no summary yet)."""
        if self.age_s() > self.stale_after_s:
            return "stale"
        if self.error is not None:
            return "down"
        return "ok" if self.latest is not None else "starting"

    def status(self) -> dict[str, Any]:
        """The store component of `/readyz`: no statement, only what the refreshes saw."""
        report: dict[str, Any] = {
            "state": self.state(),
            "backend": self.store.engine.dialect.name,
            "latency_ms": self.latency_ms,
            "summary_age_s": round(self.age_s(), 3),
            "summary_at": iso_utc(self.refreshed_at) if self.refreshed_at else None,
        }
        if self.error is not None:
            report["error"] = self.error
        return report

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Refresh now, then every period until the block ends (the app's lifetime)."""
        if self._task is not None:  # one refresher, however many apps share it
            yield
            return
        await self.refresh()
        closing = asyncio.Event()
        self._task = asyncio.create_task(self._refreshing(closing), name="store-summary")
        try:
            yield
        finally:
            closing.set()  # ends the loop even if a cancellation below were lost
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _refreshing(self, closing: asyncio.Event) -> None:
        while not closing.is_set():
            await asyncio.sleep(self.period_s)
            if not closing.is_set():
                await self.refresh()
