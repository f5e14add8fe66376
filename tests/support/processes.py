"""Real `countersign` processes: run a command to its end, or start the bot and wait for it."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.support.backends import Backend
from tests.support.waiting import scaled

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


# Ports a test hands to a process it starts (and may restart on the same port after a
# SIGKILL) come from below the kernel's ephemeral range (32768-60999 here): a port in that
# range, free when picked, can be taken meanwhile as the local end of any outgoing
# connection or by any bind to port 0, in this suite's other lane or elsewhere.
PICKED_PORTS = range(20000, 32768)


def free_port() -> int:
    """A port free on 127.0.0.1 now, outside the ephemeral range."""
    for port in random.sample(PICKED_PORTS, 64):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError("no free port below the ephemeral range")


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
    out, err = await asyncio.wait_for(process.communicate(stdin), scaled(60))
    assert process.returncode is not None
    return Result(process.returncode, out.decode(), err.decode())


@dataclass
class Running:
    process: asyncio.subprocess.Process
    url: str


async def start_command(
    *args: str,
    ready: Callable[[str], bool],
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
    deadline_s: float = 30,
) -> tuple[asyncio.subprocess.Process, list[str]]:
    """`python -m bot.cli *args` until a line of its output (stderr merged) is `ready`; an
    exit before it fails the test. The process, and its lines so far."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "bot.cli", *args),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=cwd,
        env=env or ENV,
    )
    assert process.stdout is not None
    seen: list[str] = []
    async with asyncio.timeout(scaled(deadline_s)):
        while not seen or not ready(seen[-1]):
            line = (await process.stdout.readline()).decode()
            assert line, f"{args[0]} exited before it was ready:\n" + "".join(seen)
            seen.append(line)
    return process, seen


async def start(*args: str, env: dict[str, str] | None = None) -> Running:
    """`countersign run *args` until it listens."""
    process, seen = await start_command(
        "run", *args, ready=lambda line: line.startswith("countersign API listening on "), env=env
    )
    return Running(process, seen[-1].split()[-1])


async def stop(running: Running) -> int:
    running.process.send_signal(signal.SIGTERM)
    return await asyncio.wait_for(running.process.wait(), scaled(20))


async def start_sandbox(port: int, state_file: Path) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "sandbox",
        "--port",
        str(port),
        "--state",
        str(state_file),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT,
        env=ENV,
    )
    assert process.stdout is not None
    banner = []
    async with asyncio.timeout(scaled(30)):
        while True:
            line = (await process.stdout.readline()).decode()
            assert line, "the sandbox exited early:\n" + "".join(banner)
            banner.append(line)
            if line.strip().startswith("OpenAPI domain for lark-oapi:"):
                break
    # the server starts right after the banner; wait until it answers
    async with asyncio.timeout(scaled(30)), aiohttp.ClientSession() as http:
        while True:
            try:
                async with http.get(f"http://127.0.0.1:{port}/sandbox/api/apps") as response:
                    if response.status == 200:
                        break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
    return process, "".join(banner)


SIM_ACCOUNT = '[[domains.finance.accounts]]\nname = "sim-main"\nbudget = "1000"'


def backend_config(
    backend: Backend,
    directory: Path,
    port: int,
    *,
    operators: tuple[str, ...] = ("ou_alice",),
    finance: str = SIM_ACCOUNT,
) -> Path:
    """A config file for a real process on the test backend: one audience in the sandbox's
    Ops chat, one proposer (`svc`, its token in SVC_TOKEN), and `finance` as its finance
    table (default: the simulated venue's account)."""
    schema_line = f'schema = "{backend.schema}"' if backend.schema else ""
    config = directory / "countersign.toml"
    config.write_text(
        f"""
[store]
url = "{backend.url}"
{schema_line}
[http]
port = {port}
[[audiences]]
name = "ops"
chat_id = "oc_ops"
operators = {json.dumps(list(operators))}
[[proposers]]
name = "svc"
token_env = "SVC_TOKEN"
[domains.finance]
{finance}
"""
    )
    return config
