"""A stop asked for by SIGTERM ends within its bound even when something in it hangs, and
says where it hung (bot/app/workers_serving.py stop_on_signals), in a real process."""

from __future__ import annotations

import asyncio
import signal
import sys
import textwrap

# The process under test: the real stop_on_signals, with a task that ignores its cancellation
# the way a hung shutdown would (a short bound, so the test does not wait 25 s).
HUNG_STOP = textwrap.dedent(
    """
    import asyncio, sys
    from bot.app import workers_serving

    workers_serving.STOP_BOUND_S = {bound}
    workers_serving.TASKS_LOGGED_BEFORE_S = {bound} / 2

    async def stubborn_close(forever):
        while True:
            try:
                await forever.wait()
            except asyncio.CancelledError:
                continue

    async def main():
        stop = workers_serving.stop_on_signals(None)
        print("ready", flush=True)
        await stop.wait()
        print("stopping", flush=True)
        await asyncio.create_task(stubborn_close(asyncio.Event()), name="stubborn-close")

    asyncio.run(main())
    """
)


async def run_until_signalled(source: str, signum: int) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        source,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    assert (await asyncio.wait_for(process.stdout.readline(), 30)).strip() == b"ready"
    process.send_signal(signum)
    try:
        output = await asyncio.wait_for(process.stdout.read(), 60)
        return await asyncio.wait_for(process.wait(), 30), output.decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_hung_stop_is_cut_at_its_bound_naming_the_task_it_waits_on() -> None:
    code, output = await run_until_signalled(HUNG_STOP.format(bound=1.5), signal.SIGTERM)
    assert code == 1, output  # faulthandler's exit: a supervisor sees a failed stop
    assert "stopping" in output
    assert "still stopping: " in output
    assert "pending: stubborn-close awaits " in output and "stubborn_close" in output, output
    assert "Timeout (0:00:01.5" in output  # every thread's stack follows
    assert "Current thread" in output or "Thread 0x" in output, output


async def test_a_stop_that_finishes_exits_cleanly_with_no_dump() -> None:
    clean = HUNG_STOP.format(bound=1.5).replace(
        'await asyncio.create_task(stubborn_close(asyncio.Event()), name="stubborn-close")',
        "await asyncio.sleep(0)",
    )
    code, output = await run_until_signalled(clean, signal.SIGINT)
    assert code == 0, output
    assert output.split() == ["stopping"]


async def test_the_bound_is_armed_once_however_many_signals_come() -> None:
    # a second SIGTERM while stopping must not push the bound out (or stop twice)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HUNG_STOP.format(bound=2.0),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    lines: list[bytes] = []
    try:
        lines.append(await asyncio.wait_for(process.stdout.readline(), 30))
        process.send_signal(signal.SIGTERM)
        lines.append(await asyncio.wait_for(process.stdout.readline(), 30))
        process.send_signal(signal.SIGTERM)
        rest = await asyncio.wait_for(process.stdout.read(), 60)
        await asyncio.wait_for(process.wait(), 30)
        text = b"".join(lines).decode() + rest.decode()
        assert process.returncode == 1, text
        assert text.count("still stopping: ") == 1, text
        assert text.count("Timeout (0:00:02") == 1, text
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
