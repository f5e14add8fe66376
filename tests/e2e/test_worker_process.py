"""`[execution] workers = "process"`: the workers run in a supervised child of the bot.

The executor's poll is an hour here, so an order executes only if the parent's wake-up
reaches the child. Real child processes, killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.support.backends import Backend
from tests.support.bot_processes import (
    BotProcess,
    bot_env,
    bot_processes,
    sandbox_alone,
    write_config,
)
from tests.support.factories import order_request
from tests.support.processes import free_port
from tests.support.stack import Stack, StackFactory, card_says, settled
from tests.support.waiting import eventually
from tests.support.worker_process import executor_report

WORKERS_IN_A_CHILD = {"workers": "process", "poll_s": 3600}


async def child_running(stack: Stack, starts: int) -> dict[str, Any]:
    """The executor report once the child started `starts` times is reporting in."""
    found: dict[str, Any] = {}

    async def running() -> bool:
        found.update(await executor_report(stack))
        return found["state"] == "running" and found["starts"] == starts

    await eventually(running, deadline_s=30)
    return found


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet, as under a container's init, counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_a_claim_here_wakes_the_executor_in_the_child_which_fills_and_patches(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", execution=WORKERS_IN_A_CHILD)
    report = await child_running(stack, starts=1)
    assert report["process"] == "separate" and report["pid"] != os.getpid()

    view, message_id = await stack.offered(order_request("in-a-child"))  # card sent by the child
    reply = await stack.click(message_id, "ou_alice")
    assert reply["toast"]["type"] == "success"
    await card_says(stack, message_id, "Filled · SIMULATED")
    # the child reports an outcome at once, before it even patches the card: so this
    # process's /metrics counts the fill by the time the card shows it, not a second later
    async with stack.http.get(f"{stack.bot_url}/metrics") as response:
        assert response.status == 200
        assert 'countersign_executions_total{outcome="filled"} 1.0' in await response.text()
    await settled(stack, view["id"], "filled")

    async def counted() -> bool:
        return int((await executor_report(stack))["passes"]) >= 1

    await eventually(counted)  # the child's pass counter reaches this process's /readyz


async def test_a_killed_worker_process_is_started_again_and_goes_on(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", execution=WORKERS_IN_A_CHILD)
    first = (await child_running(stack, starts=1))["pid"]
    os.kill(first, signal.SIGKILL)

    second = (await child_running(stack, starts=2))["pid"]
    assert second != first and not alive(first)
    view, message_id = await stack.offered(order_request("after-restart"))
    await stack.click(message_id, "ou_bob")
    await settled(stack, view["id"], "filled")


@asynccontextmanager
async def bot_with_a_worker_process(
    backend: Backend, tmp_path: Path
) -> AsyncIterator[tuple[BotProcess, dict[str, Any]]]:
    """A `countersign run` process whose workers run in a child, once the child reports in;
    with the child's executor report."""
    async with sandbox_alone() as lark, bot_processes() as start:
        config = write_config(
            tmp_path / "bot.toml",
            backend,
            lark.app,
            free_port(),
            "ws",
            execution=WORKERS_IN_A_CHILD,
        )
        bot = await start(config, bot_env(lark.app))
        child: dict[str, Any] = {}

        async def reporting() -> bool:
            _, body = await bot.readyz()
            child.update(body["components"]["executor"])
            return child["state"] == "running"

        await eventually(reporting, deadline_s=30)
        assert child["process"] == "separate" and alive(child["pid"])
        yield bot, child


async def test_a_crashed_bot_takes_its_worker_process_with_it(
    backend: Backend, tmp_path: Path
) -> None:
    async with bot_with_a_worker_process(backend, tmp_path) as (bot, child):
        assert await bot.kill() == -signal.SIGKILL

        async def gone() -> bool:
            return not alive(child["pid"])

        # the kernel kills the orphan (PR_SET_PDEATHSIG); nobody else would
        await eventually(gone, deadline_s=10)


async def test_a_stopped_bot_stops_its_worker_process_cleanly(
    backend: Backend, tmp_path: Path
) -> None:
    async with bot_with_a_worker_process(backend, tmp_path) as (bot, child):
        assert await bot.terminate() == 0
        assert not alive(child["pid"])  # waited for, not orphaned
        assert not any("Traceback" in line for line in bot.output), bot.output[-40:]
