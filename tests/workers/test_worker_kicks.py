"""The parent's wake-ups for a worker process: a burst of claims in one turn of the event loop
is one datagram per worker, not one per claim (each datagram wakes the child's loop)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from bot.app.worker_process import WorkerProcess
from bot.config import read_file, resolve

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.toml"


def datagrams(sock: socket.socket) -> list[bytes]:
    received = []
    while True:
        try:
            received.append(sock.recv(4096))
        except BlockingIOError:
            return received


async def test_a_burst_of_kicks_in_one_turn_is_one_datagram_per_worker() -> None:
    config = resolve(read_file(EXAMPLE), {"COUNTERSIGN_TOKEN": "x" * 32})
    workers = WorkerProcess(config)
    child_end = workers._theirs  # the end the child inherits
    child_end.setblocking(False)
    try:
        for _ in range(100):  # 100 claims answered in one turn of the loop
            workers.kick("executor")
            workers.kick("cards")
        assert datagrams(child_end) == []  # nothing sent before the turn is over
        await asyncio.sleep(0)
        assert sorted(datagrams(child_end)) == [b"cards", b"executor"]
        workers.kick("executor")  # a later turn: woken again
        await asyncio.sleep(0)
        assert datagrams(child_end) == [b"executor"]
    finally:
        workers._mine.close()
        child_end.close()
