"""`[execution] workers = "process"`: `run` starts the workers in a supervised second process.
This module is the parent's side (`WorkerProcess`); the child's is `bot/app/worker_main.py`.

Why: the answer path (clicks, claims) and the workers (executor, venue, card patches) are
both CPU-bound Python. In one interpreter a burst of executions delays every click's answer;
in two, each has its own core.

The link between the two, all inherited at spawn (no path, no port):
* the config: one JSON line on the child's stdin (the settings and the secrets they name, so
  no secret is on a command line or in the environment). stdin then stays open: its EOF
  tells the child the parent is gone or stopping.
* wake-ups: the parent's kicks (a claim wakes the executor; a proposal or a decision whose
  answer showed nothing, the card worker) go as datagrams over a socketpair; the child sends
  its executor counters back on it at once after each outcome and at least every second,
  for `/readyz` and `/metrics`. On PostgreSQL the child also
  LISTENs like any replica; the datagrams are just faster.
* leases: the child announces each lease on the socketpair before it takes it
  (`store.backend.leases.announce_leases`); when the child dies, the parent releases the rows still
  held under them (`store.backend.leases.release`), so its operations are taken up by the restarted
  child at once instead of waiting out the lease (23 s for the executor by default).
* dying together: on Linux the child asks the kernel for SIGKILL when its parent dies, so a
  crashed parent never leaves workers running beside its successor. A child that dies is
  started again with backoff; what it left is leased and recovered as after any crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable

from bot.config import Config, secrets_environ
from kernel.timeutil import utc_now
from store import Lease, Store, release

log = logging.getLogger("countersign.workers")

STALE_AFTER_S = 5.0  # no counters for this long: the child is not running its loop
FIRST_RESTART_S = 0.5
MAX_RESTART_S = 30.0
HEALTHY_RUN_S = 60.0  # a child that ran this long starts the backoff afresh when it dies
STOP_GRACE_S = 10.0
DATAGRAM_MAX = 4096
PRUNE_LEASES_OVER = 1000  # announced leases kept before those run out are dropped


class WorkerProcess:
    """The parent's side: spawns the child, restarts it, forwards kicks, keeps its counters."""

    def __init__(self, config: Config, store: Store | None = None) -> None:
        self.config = config
        self.store = store  # where a dead child's leases are released (None: they run out)
        self._mine, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._mine.setblocking(False)
        self._process: asyncio.subprocess.Process | None = None
        self._stats_at: float | None = None
        self.passes = 0
        self.failures = 0
        self.outcomes: Counter[str] = Counter()  # by status, for /metrics
        self.starts = 0  # children started so far (restarts = starts - 1)
        self._kicked: set[str] = set()  # workers to wake once this turn of the loop is over
        self._leases: set[Lease] = set()  # announced by the running child
        self.leases_released = 0  # rows made due at once after a child died

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def state(self) -> str:
        """`running` while the child reports in; `starting` before its first report or after
        a silence; `down` between a death and the restart."""
        if self._process is None or self._process.returncode is not None:
            return "down"
        if self._stats_at is None or time.monotonic() - self._stats_at > STALE_AFTER_S:
            return "starting"
        return "running"

    def where(self) -> dict[str, object]:
        return {
            "process": "separate",
            "pid": self.pid,
            "starts": self.starts,
            "leases_released": self.leases_released,
        }

    def kick(self, worker: str) -> None:
        """Wake `worker` in the child, at the end of this turn of the event loop: a burst of
        claims is one datagram per worker, not one per claim. Dropped if the child is gone or
        its queue is full: then its own first pass (on restart) or its poll finds the work."""
        if not self._kicked:  # kicks come from the event loop (consumers, the API)
            asyncio.get_running_loop().call_soon(self._send_kicks)
        self._kicked.add(worker)

    def _send_kicks(self) -> None:
        kicked, self._kicked = self._kicked, set()
        for worker in sorted(kicked):
            with contextlib.suppress(OSError):
                self._mine.send(worker.encode())

    def kicker(self, worker: str) -> Callable[[], None]:
        return lambda: self.kick(worker)

    async def run(self, stop: asyncio.Event) -> None:
        """Keep a child running until `stop`; then let it finish its passes and exit."""
        loop = asyncio.get_running_loop()
        loop.add_reader(self._mine.fileno(), self._on_report)
        delay = FIRST_RESTART_S
        try:
            while not stop.is_set():
                started = time.monotonic()
                code: int | str | None
                try:
                    code = await self._run_child(stop)
                except OSError as error:  # could not even start it (fork, exec): try again
                    code = f"{type(error).__name__}: {error}"
                await self._release_leases()
                if stop.is_set():
                    break
                if time.monotonic() - started > HEALTHY_RUN_S:
                    delay = FIRST_RESTART_S
                log.error("worker process exited with %s; starting it again in %.1f s", code, delay)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                delay = min(MAX_RESTART_S, delay * 2)
        finally:
            loop.remove_reader(self._mine.fileno())
            self._mine.close()
            self._theirs.close()

    async def _run_child(self, stop: asyncio.Event) -> int | None:
        fd = self._theirs.fileno()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.app.worker_main",
            str(os.getpid()),
            str(fd),
            stdin=asyncio.subprocess.PIPE,
            pass_fds=(fd,),
        )
        self._process, self._stats_at = process, None
        self.starts += 1
        assert process.stdin is not None
        handoff = {
            "settings": self.config.settings.model_dump(mode="json"),
            "environ": secrets_environ(self.config),
        }
        with contextlib.suppress(ConnectionError):  # a child that died at once: seen below
            process.stdin.write(json.dumps(handoff).encode() + b"\n")
            await process.stdin.drain()
        log.info("worker process %s started", process.pid)
        exited = asyncio.ensure_future(process.wait())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not exited.done():
                process.stdin.close()  # EOF: the child stops like on SIGTERM
                try:
                    await asyncio.wait_for(asyncio.shield(exited), STOP_GRACE_S)
                except TimeoutError:
                    log.warning("worker process %s did not stop in time: killed", process.pid)
                    process.kill()
                    await exited
        finally:
            stopping.cancel()
            if not exited.done():  # the parent itself is being cancelled: take the child along
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await asyncio.shield(exited)
        return process.returncode

    async def _release_leases(self) -> None:
        """The child is gone: what it still held under the leases it announced is due now."""
        self._on_report()  # what it said before it died, still in the socket's buffer
        held, self._leases = self._leases, set()
        if not held or self.store is None:
            return
        try:
            released = await release(self.store, held)
        except Exception:  # they run out by themselves; the restart goes ahead
            log.exception("releasing the leases of the worker process failed")
            return
        self.leases_released += released
        if released:
            log.warning("released %d rows the worker process held when it died", released)

    def _took_lease(self, announced: object) -> None:
        try:
            self._leases.add(Lease.from_json(announced))
        except (ValueError, KeyError, TypeError):
            log.warning("worker process sent an unreadable lease")
            return
        if len(self._leases) > PRUNE_LEASES_OVER:
            now = utc_now()
            self._leases = {lease for lease in self._leases if lease.until > now}

    def _on_report(self) -> None:
        while True:
            try:
                datagram = self._mine.recv(DATAGRAM_MAX)
            except BlockingIOError:
                return
            try:
                report = json.loads(datagram)
                if isinstance(report, dict) and "lease" in report:
                    self._took_lease(report["lease"])
                    continue
                self.passes, self.failures = int(report["passes"]), int(report["failures"])
                self.outcomes = Counter({str(k): int(v) for k, v in report["outcomes"].items()})
            except (ValueError, KeyError, TypeError, AttributeError):
                log.warning("worker process sent an unreadable report")
                continue
            self._stats_at = time.monotonic()
