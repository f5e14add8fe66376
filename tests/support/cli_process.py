"""`python -m bot.cli …` as a real subprocess for the browser tests: started in the checkout,
its output read in a thread, handed over once a line says it is ready, stopped after."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

from tests.support.processes import ENV, ROOT

START_TIMEOUT_S = 40.0


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line.rstrip())
    lines.put(None)


@contextmanager
def running_cli(*args: str, ready: Callable[[str], bool]) -> Iterator[list[str]]:
    """The command's output lines up to the first that is `ready` (an exit before it, or
    START_TIMEOUT_S without it, fails the test); terminated (killed if it lingers) after."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", *args],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while True:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                raise AssertionError("the bot exited:\n" + "\n".join(seen[-30:]))
            seen.append(line)
            if ready(line):
                break
        yield seen
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
