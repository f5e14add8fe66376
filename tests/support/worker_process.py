"""`countersign worker` as a real process, and a claimed operation for it to execute."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store import Claimed, Click, Store
from tests.support.backends import Backend
from tests.support.factories import offered
from tests.support.processes import ENV, ROOT
from tests.support.stack import Stack
from tests.support.waiting import eventually, scaled


def worker_config(path: Path, backend: Backend, venue: Path, *, poll_s: float = 0.2) -> Path:
    schema = f'schema = "{backend.schema}"\n' if backend.schema else ""
    path.write_text(
        f"""
[store]
url = "{backend.url}"
{schema}
[lark]
mode = "off"

[[audiences]]
name = "ops"
chat_id = "oc_ops"
operators = ["ou_alice", "ou_bob"]

[[proposers]]
name = "dev-agent"
token_env = "WORKER_TEST_TOKEN"

[domains.finance]
venue_path = "{venue}"
accounts = [{{ name = "sim-main", venue = "sim", budget = "100000" }}]

[execution]
poll_s = {poll_s}
venue_tick_s = 0.2
"""
    )
    return path


@dataclass
class WorkerProcess:
    """A running `countersign worker` and the lines it wrote so far (JSON ones parsed)."""

    process: asyncio.subprocess.Process
    output: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)

    def said(self, logger: str, words: str, operation_id: str | None = None) -> bool:
        return any(
            r.get("logger") == logger
            and words in str(r.get("message"))
            and (operation_id is None or r.get("operation_id") == operation_id)
            for r in self.records
        )

    async def until(self, done: Callable[[], Awaitable[bool]], deadline_s: float = 30) -> None:
        """Wait for `done()` while the process runs; its last lines if it never holds."""

        async def running_and_done() -> bool:
            assert self.process.returncode is None, "\n".join(self.output[-30:])
            return await done()

        try:
            await eventually(running_and_done, deadline_s)
        except AssertionError as error:
            raise AssertionError(f"{error}\n" + "\n".join(self.output[-30:])) from None


@asynccontextmanager
async def worker_process(config: Path, env: dict[str, str]) -> AsyncIterator[WorkerProcess]:
    """`countersign worker` running; stopped with SIGTERM (exit 0) when the block ends."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "worker",
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT,
        env={**ENV, "WORKER_TEST_TOKEN": "worker-test-token-123456", **env},
    )
    worker = WorkerProcess(process)

    async def read() -> None:
        assert process.stdout is not None
        async for raw in process.stdout:
            line = raw.decode(errors="replace").rstrip()
            worker.output.append(line)
            if line.startswith("{"):
                worker.records.append(json.loads(line))

    reader = asyncio.create_task(read())
    try:
        yield worker
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), scaled(20)) == 0, "\n".join(
            worker.output[-30:]
        )
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await reader


async def claimed(store: Store) -> str:
    op = await offered(store)
    claim = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claim, Claimed)
    return op.id


async def executor_report(stack: Stack) -> dict[str, Any]:
    """The executor's part of the bot's /readyz (with a worker process: its pid, its starts,
    the rows released when one died)."""
    async with stack.http.get(f"{stack.bot_url}/readyz") as response:
        body: dict[str, Any] = await response.json()
    executor: dict[str, Any] = body["components"]["executor"]
    return executor
