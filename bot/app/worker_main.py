"""The worker process's own side (`python -m bot.app.worker_main`, started by `run` through
`bot.app.worker_process.WorkerProcess`, where the link between the two is described): its main,
which reads the config the parent handed over and serves the workers, and `ParentLink`, its
end of the socketpair (kicks in; counters and lease announcements out)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import sys

from bot.app.logs import configure, redact
from bot.app.worker_process import DATAGRAM_MAX
from bot.app.workers_serving import serve_workers
from bot.app.workforce import Workforce
from bot.config import Config, parse, resolve
from store import Lease, announce_leases

log = logging.getLogger("countersign.workers")

STATS_EVERY_S = 1.0
EXIT_ORPHANED = 4
PR_SET_PDEATHSIG = 1


class ParentLink:
    """The child's side: kicks from the parent wake its workers; its counters go back."""

    def __init__(self, fd: int) -> None:
        self._sock = socket.socket(fileno=fd)
        self._sock.setblocking(False)
        # from now on: the workers' first leases come before `run` starts
        announce_leases(self._announce)

    def _announce(self, lease: Lease) -> None:
        """Sent before the lease is taken; if it cannot be sent, the lease runs out instead."""
        with contextlib.suppress(OSError):
            self._sock.send(json.dumps({"lease": lease.as_json()}).encode())

    async def run(self, force: Workforce, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        wakes = force.wakes()

        def on_kick() -> None:
            while True:
                try:
                    name = self._sock.recv(DATAGRAM_MAX).decode(errors="replace")
                except BlockingIOError:
                    return
                except OSError:  # the parent's end is gone: stdin's EOF stops us
                    loop.remove_reader(self._sock.fileno())
                    return
                wake = wakes.get(name)
                if wake is not None:
                    wake()

        # an outcome is reported at once, so the parent's /metrics counts it by the time
        # its card shows it; the rest (passes) at least every second
        outcome = asyncio.Event()
        force.outcome_hooks.append(outcome.set)
        loop.add_reader(self._sock.fileno(), on_kick)
        try:
            while not stop.is_set():
                outcome.clear()
                executor = force.executor
                report = {
                    "passes": executor.passes,
                    "failures": executor.failures,
                    "outcomes": dict(executor.outcomes),
                }
                with contextlib.suppress(OSError):
                    self._sock.send(json.dumps(report).encode())
                await _first_of(stop, outcome, STATS_EVERY_S)
        finally:
            with contextlib.suppress(ValueError, OSError):
                loop.remove_reader(self._sock.fileno())
            self._sock.close()


async def _first_of(stop: asyncio.Event, event: asyncio.Event, timeout_s: float) -> None:
    """Until `stop` or `event` is set, or `timeout_s` has passed."""
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(event.wait())]
    try:
        await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


def _die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent dies (Linux); exit now if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the request above took effect
        os._exit(EXIT_ORPHANED)


async def _serve(config: Config, fd: int) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    async def until_parent_closes() -> None:
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), sys.stdin
        )
        try:
            await reader.read()  # returns at EOF
        finally:
            transport.close()
        stop.set()

    watch = asyncio.create_task(until_parent_closes())
    link = ParentLink(fd)
    try:
        return await serve_workers(config, stop=stop, link=link.run)
    finally:
        watch.cancel()


def main(argv: list[str]) -> int:
    parent_pid, fd = int(argv[0]), int(argv[1])
    _die_with_parent(parent_pid)
    configure()
    handoff = json.loads(sys.stdin.buffer.readline() or b"null")
    if not isinstance(handoff, dict):
        log.error("worker process: no config from the parent")
        return EXIT_ORPHANED
    config = resolve(parse(handoff["settings"]), handoff["environ"])
    redact(config.secret_values())
    return asyncio.run(_serve(config, fd))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
