"""Real `countersign` processes: run a command to its end, or start the bot and wait for it."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Result:
    code: int
    out: str
    err: str


async def cli(
    *args: str,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
) -> Result:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env or ENV,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), 60)
    assert process.returncode is not None
    return Result(process.returncode, out.decode(), err.decode())


@dataclass
class Running:
    process: asyncio.subprocess.Process
    url: str


async def start(*args: str, env: dict[str, str] | None = None) -> Running:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "run",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT,
        env=env or ENV,
    )
    assert process.stdout is not None
    async with asyncio.timeout(30):
        while True:
            line = (await process.stdout.readline()).decode()
            assert line, "the bot exited before it was ready"
            if line.startswith("countersign API listening on "):
                return Running(process, line.split()[-1])


async def stop(running: Running) -> int:
    running.process.send_signal(signal.SIGTERM)
    return await asyncio.wait_for(running.process.wait(), 20)
