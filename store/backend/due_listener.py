"""Wake-ups across replicas: PostgreSQL notifications of due work, heard on one connection.

Triggers (migration 0008) notify channel `countersign_due` with `<schema>.<worker>` when a
row falls due for a worker: an operation's executor (a claim, a venue change), its card, or
a result delivery. PostgreSQL delivers the notification at COMMIT to every listening
session, so a click taken by one replica wakes the executors of all; the lease (one
statement, `SKIP LOCKED`) then gives each row to exactly one of them.

`DueListener` keeps one dedicated asyncpg connection LISTENing and calls the in-process
kick of the worker named. The connection is checked every `check_s` (a ping); when it is
lost (a database restart, `pg_terminate_backend`, a dead network) it reconnects with
exponential backoff (tenacity) and then wakes every worker once, since a notification sent
while nobody listened is gone. Workers still poll, slowly: a lost notification costs a poll
interval, never an operation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_exponential

from kernel.timeutil import iso_utc, utc_now
from store.groupcommit.pg_writer import asyncpg_dsn

log = logging.getLogger("countersign.events")

CHANNEL = "countersign_due"
APPLICATION_NAME = "countersign-due-listener"
CONNECT_TIMEOUT_S = 10.0
# what a failed connect or a lost connection may be; anything else is a bug and is raised
LOST = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)

Wake = Callable[[], None]


def worker_of(payload: str, schema: str) -> str | None:
    """The worker a notification names, if it is about our schema."""
    theirs, _, worker = payload.rpartition(".")
    return worker if theirs == schema else None


class DueListener:
    def __init__(
        self,
        url: str,
        wake: Mapping[str, Wake],
        *,
        schema: str | None = None,
        check_s: float = 30.0,
        first_retry_s: float = 0.2,
        max_retry_s: float = 30.0,
    ) -> None:
        self._dsn = asyncpg_dsn(url)
        self._settings = {"application_name": APPLICATION_NAME}
        if schema:
            self._settings["search_path"] = schema
        self.wake = dict(wake)
        self.check_s = check_s
        self.max_retry_s = max_retry_s
        self._backoff = wait_exponential(multiplier=first_retry_s, max=max_retry_s)
        self.state = "starting"  # starting -> listening <-> reconnecting -> closed
        self.schema: str | None = None  # as the database resolves it (current_schema())
        self.backend_pid: int | None = None
        self.listening_since: datetime | None = None
        self.connects = 0
        self.heard: Counter[str] = Counter()  # notifications by worker
        self.listening = asyncio.Event()  # set while LISTEN is in force

    def status(self) -> dict[str, Any]:
        """For readiness: the listener's state, how often it connected, what it heard."""
        return {
            "state": self.state,
            "channel": CHANNEL,
            "connects": self.connects,
            "listening_since": iso_utc(self.listening_since) if self.listening_since else None,
            "heard": dict(sorted(self.heard.items())),
        }

    async def run(self, stop: asyncio.Event) -> None:
        """Listen until `stop` is set, reconnecting whenever the connection is lost."""
        try:
            while not stop.is_set():
                conn = await self._connect(stop)
                if conn is None:
                    break
                broken = False
                try:
                    await self._listen(conn, stop)
                except LOST as error:
                    log.warning("due listener lost its connection (%s)", type(error).__name__)
                except Exception:  # never die quietly: workers would only poll from now on
                    log.exception("due listener failed; reconnecting in %.0f s", self.max_retry_s)
                    broken = True
                finally:
                    self.listening.clear()
                    self.backend_pid = None
                    with contextlib.suppress(*LOST):
                        await conn.close(timeout=CONNECT_TIMEOUT_S)
                if not stop.is_set():
                    self.state = "reconnecting"
                if broken:
                    await _pause(stop, self.max_retry_s)  # a bug must not spin
        finally:
            self.state = "closed"
            self.listening.clear()

    async def _connect(self, stop: asyncio.Event) -> asyncpg.Connection | None:
        """A connection, retried with backoff until one opens or `stop` is set (None)."""

        async def pause(seconds: float) -> None:
            await _pause(stop, seconds)

        def failed(retry: RetryCallState) -> None:
            error = retry.outcome.exception() if retry.outcome else None
            log.warning(
                "due listener cannot connect (%s); trying again in %.1f s",
                type(error).__name__,
                retry.upcoming_sleep,
            )

        retrying = AsyncRetrying(
            wait=self._backoff,
            retry=retry_if_exception_type(LOST),
            sleep=pause,
            before_sleep=failed,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                if stop.is_set():
                    return None
                conn: asyncpg.Connection = await asyncpg.connect(
                    self._dsn, server_settings=self._settings, timeout=CONNECT_TIMEOUT_S
                )
                return conn
        return None  # pragma: no cover - AsyncRetrying returns or raises above

    async def _listen(self, conn: asyncpg.Connection, stop: asyncio.Event) -> None:
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        self.schema = await conn.fetchval("SELECT current_schema()")
        await conn.add_listener(CHANNEL, self._heard)
        self.connects += 1
        self.state = "listening"
        self.backend_pid = conn.get_server_pid()
        self.listening_since = utc_now()
        self.listening.set()
        log.info("due listener listening on %s for schema %s", CHANNEL, self.schema)
        if self.connects > 1:  # what fell due while nobody listened was announced to no one
            self._wake_all()
        while not stop.is_set() and not lost.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_first(stop, lost), self.check_s)
            if not stop.is_set() and not lost.is_set():
                await asyncio.wait_for(conn.fetchval("SELECT 1"), CONNECT_TIMEOUT_S)
        if lost.is_set() and not stop.is_set():
            log.warning("due listener's connection was closed by the server")

    def _heard(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        worker = worker_of(payload, self.schema or "")
        if worker is None:
            return  # another schema's deployment shares this database
        self.heard[worker] += 1
        kick = self.wake.get(worker)
        if kick is not None:
            kick()

    def _wake_all(self) -> None:
        for kick in self.wake.values():
            kick()


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    """Sleep `seconds`, or less if `stop` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def _first(*events: asyncio.Event) -> None:
    """Return once any of `events` is set."""
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
