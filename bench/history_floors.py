"""The floors bench/history.py sets the memory and CLI figures beside: one bare process that
imports lark-oapi and serves a long connection (its RSS), `python -c pass`, and the CLI's
own start (`countersign --version`, `countersign list`).

bench/rest.py (issue 34 item 4) owns these floors once it exists: `floors()` asks it first
and measures them here only without it. Run as a script, this is the bare SDK process: it
holds a long connection to the sandbox at argv[1] with the app's id and secret (argv[2],
argv[3]) until it is killed."""

from __future__ import annotations

import asyncio
import importlib
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling benches
from sandbox_process import SandboxProcess

COUNTERSIGN = Path(sys.executable).with_name("countersign")
REST_S = 3.0  # after the connection is up, before RSS is read
RUNS = 3


def wall_s(argv: Sequence[str], env: dict[str, str] | None = None) -> float:
    """Median wall time of RUNS runs of `argv` (each must succeed)."""
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def cli_times(bot_url: str, token: str) -> dict[str, float]:
    """`countersign --version` and `countersign list` against a running bot, in seconds."""
    return {
        "cli_version_s": wall_s([str(COUNTERSIGN), "--version"]),
        "cli_list_s": wall_s([str(COUNTERSIGN), "list", "--url", bot_url, "--token", token]),
    }


def python_pass_s() -> float:
    return wall_s([sys.executable, "-c", "pass"])


async def bare_sdk_rss_mb(sandbox: SandboxProcess) -> float:
    """RSS of one process that imports lark-oapi and holds a long connection (no bot may be
    connected meanwhile: the sandbox's connection count says when it is up)."""
    import aiohttp
    from history_grow import rss_mb

    app = sandbox.app
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(Path(__file__)), sandbox.base_url, app.app_id, app.app_secret
    )
    try:
        async with aiohttp.ClientSession() as http:
            await sandbox.wait_connections(http, 1, "the bare SDK client's long connection")
        await asyncio.sleep(REST_S)
        return rss_mb(process.pid)
    finally:
        process.kill()
        await process.wait()
        async with aiohttp.ClientSession() as http:
            await sandbox.wait_connections(http, 0, "the bare SDK client gone")


async def floors(sandbox: SandboxProcess) -> dict[str, float]:
    """python -c pass (s) and the bare SDK process's RSS (MB): bench/rest.py's, if it is
    there, else measured here."""
    try:
        rest: Any = importlib.import_module("rest")
    except ImportError:
        rest = None
    if rest is not None and hasattr(rest, "floors"):
        found: dict[str, float] = await rest.floors(sandbox)
        return found
    return {"python_pass_s": python_pass_s(), "bare_sdk_rss_mb": await bare_sdk_rss_mb(sandbox)}


def serve_bare(base_url: str, app_id: str, app_secret: str) -> None:
    from sandbox_push import start_sdk_client

    start_sdk_client(app_id, app_secret, base_url).join()


if __name__ == "__main__":
    serve_bare(*sys.argv[1:4])
