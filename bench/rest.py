"""Light at rest (issue 34, item 4): resident memory of the bot and its worker child at
rest beside the floor, and CLI start times beside `python -c pass`.

* the floor: one bare process that imports lark-oapi (all of it, `import lark_oapi`) and
  serves a long connection to the sandbox; its RSS once the sandbox holds the connection.
* the bot: `countersign run --sandbox-url` (ws mode, SQLite in a temporary directory) against
  the same sandbox process; RSS of the bot and of its worker child once /readyz says ready
  and the sandbox holds its connection, REST_S seconds more and no longer growing.
* the CLI: wall time of `python -c pass`, `countersign --version` and `countersign list`
  (against that bot), each the median of RUNS; beside `list`, its HTTP round trip (the same
  GET from this process, warm, median). Beside each wall time its CPU time (user + system):
  on a shared machine the wall time includes waiting for a core. Each CLI figure twice: as
  this environment starts it, and with its bytecode cached (as an installed countersign runs:
  where PYTHONDONTWRITEBYTECODE is set, as on the development machines, every start compiles
  our modules from source; here the cache goes to a temporary PYTHONPYCACHEPREFIX, written by
  one warm-up run and not counted).

Targets: bot + worker <= 1.5x the floor; --version <= 3x python -c pass; list <= 0.3 s
beyond its round trip. One run on this machine; `figures()` is for bench/history.py.

    PYTHONPATH=$PWD .venv/bin/python bench/rest.py
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import aiohttp
from sandbox_process import SandboxProcess, wait_until

ROOT = Path(__file__).resolve().parents[1]
REST_S = 5.0
SAMPLE_S = 1.0
SETTLED_MB = 0.5
SETTLE_DEADLINE_S = 60.0
READY_DEADLINE_S = 120.0
RUNS = 7
TOKEN = "dev-token"  # the dev profile's proposer (bot/config/profiles.py DEV_TOKEN)

FLOOR = """
import sys, lark_oapi as lark
lark.ws.Client(sys.argv[1], sys.argv[2], domain=sys.argv[3],
               event_handler=lark.EventDispatcherHandler.builder("", "").build(),
               log_level=lark.LogLevel.WARNING).start()
"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


async def settled_mb(pid: int) -> float:
    """RSS once at rest: REST_S after the call, then until two samples SAMPLE_S apart differ by
    under SETTLED_MB (a child still importing grows by tens of MB a second)."""
    await asyncio.sleep(REST_S)
    deadline = time.monotonic() + SETTLE_DEADLINE_S
    last = rss_mb(pid)
    while True:
        await asyncio.sleep(SAMPLE_S)
        now = rss_mb(pid)
        if abs(now - last) < SETTLED_MB:
            return now
        if time.monotonic() > deadline:
            raise RuntimeError(f"RSS of {pid} still moving after {SETTLE_DEADLINE_S:.0f} s")
        last = now


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "COUNTERSIGN_TOKEN": TOKEN}


async def floor_mb(sandbox: SandboxProcess, http: aiohttp.ClientSession) -> float:
    app = sandbox.app
    argv = [sys.executable, "-c", FLOOR, app.app_id, app.app_secret, sandbox.base_url]
    process = await asyncio.create_subprocess_exec(*argv, env=env())
    try:
        await sandbox.wait_connections(http, 1, "the floor's long connection")
        return await settled_mb(process.pid)
    finally:
        process.terminate()
        await process.wait()
        await sandbox.wait_connections(http, 0, "the floor's disconnect")


def cached_env(prefix: str) -> dict[str, str]:
    """env() with bytecode written to and read from `prefix`, whatever this machine sets."""
    found = {name: value for name, value in env().items() if name != "PYTHONDONTWRITEBYTECODE"}
    return {**found, "PYTHONPYCACHEPREFIX": prefix}


def wall_s(argv: list[str]) -> float:
    return timed(argv)[0]


def timed(argv: list[str], environ: dict[str, str] | None = None) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of RUNS runs, after one warm-up
    run: on a shared machine the wall time waits for the CPU, the CPU time says what the
    command itself cost."""
    environ = environ or env()
    subprocess.run(argv, env=environ, stdout=subprocess.DEVNULL, check=True)
    walls, cpus = [], []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=environ, stdout=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def round_trip_s(url: str) -> float:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    times = []
    for _ in range(RUNS + 1):
        start = time.perf_counter()
        with urllib.request.urlopen(request, timeout=30) as answer:
            answer.read()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])  # the first opens what the others reuse


async def bot_figures(sandbox: SandboxProcess, http: aiohttp.ClientSession) -> dict[str, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data_dir:
        argv = [sys.executable, "-m", "bot.cli", "run", "--sandbox-url", sandbox.base_url]
        argv += ["--data-dir", data_dir, "--port", str(port)]
        process = await asyncio.create_subprocess_exec(
            *argv, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:

            async def ready() -> bool:
                try:
                    async with http.get(f"{url}/readyz") as answer:
                        return answer.status == 200
                except aiohttp.ClientError:
                    return False

            await wait_until(ready, READY_DEADLINE_S, "the bot's /readyz")
            await sandbox.wait_connections(http, 1, "the bot's long connection")
            (child,) = children(process.pid)
            worker_mb = await settled_mb(child)
            bot_mb = await settled_mb(process.pid)
            cli = [sys.executable, "-m", "bot.cli"]
            listing = await asyncio.to_thread(timed, [*cli, "list", "--url", url])
            with tempfile.TemporaryDirectory() as prefix:
                cached = await asyncio.to_thread(
                    timed, [*cli, "list", "--url", url], cached_env(prefix)
                )
            figures = {
                "bot_mb": bot_mb,
                "worker_mb": worker_mb,
                "list_s": listing[0],
                "list_cpu_s": listing[1],
                "list_cached_s": cached[0],
                "list_cached_cpu_s": cached[1],
                "list_round_trip_s": await asyncio.to_thread(
                    round_trip_s, f"{url}/api/v1/operations"
                ),
            }
        finally:
            process.terminate()
            await process.wait()
    return figures


async def floors(sandbox: SandboxProcess) -> dict[str, float]:
    """The floors bench/history.py sets its memory and CLI figures beside, measured as this
    script measures them: `python -c pass` (s) and the bare SDK process's RSS (MB)."""
    async with aiohttp.ClientSession() as http:
        floor = await floor_mb(sandbox, http)
    return {"python_pass_s": wall_s([sys.executable, "-c", "pass"]), "bare_sdk_rss_mb": floor}


async def figures() -> dict[str, float]:
    sandbox = await SandboxProcess.start()
    try:
        async with aiohttp.ClientSession() as http:
            floor = await floor_mb(sandbox, http)
            bot = await bot_figures(sandbox, http)
    finally:
        await sandbox.stop()
    python_pass = [sys.executable, "-c", "pass"]
    version = [sys.executable, "-m", "bot.cli", "--version"]
    found = {"floor_mb": floor, **bot}
    with tempfile.TemporaryDirectory() as prefix:
        for name, argv in (("python_pass", python_pass), ("version", version)):
            found[f"{name}_s"], found[f"{name}_cpu_s"] = timed(argv)
            cached = timed(argv, cached_env(prefix))
            found[f"{name}_cached_s"], found[f"{name}_cached_cpu_s"] = cached
    return found


def ms(f: dict[str, float], name: str) -> str:
    return f"{f[name + '_s'] * 1000:.0f} ms (CPU {f[name + '_cpu_s'] * 1000:.0f} ms)"


def cli_rows(f: dict[str, float], how: str, cached: str) -> list[tuple[str, str, str]]:
    """The CLI's rows, `cached` "" (as this environment starts it) or "_cached"."""
    beyond = f[f"list{cached}_s"] - f["list_round_trip_s"]
    python_pass, version = f"python_pass{cached}", f"version{cached}"
    return [
        (f"python -c pass{how}", ms(f, python_pass), ""),
        (
            f"countersign --version{how}",
            ms(f, version),
            f"{f[version + '_s'] / f[python_pass + '_s']:.2f}x python -c pass (target <= 3x); "
            f"CPU {f[version + '_cpu_s'] / f[python_pass + '_cpu_s']:.2f}x",
        ),
        (
            f"countersign list{how}",
            ms(f, f"list{cached}"),
            f"{beyond * 1000:.0f} ms beyond its round trip (target <= 300 ms); CPU beyond "
            f"python -c pass {(f[f'list{cached}_cpu_s'] - f[python_pass + '_cpu_s']) * 1000:.0f} ms",
        ),
    ]


def report(f: dict[str, float]) -> str:
    at_rest = f["bot_mb"] + f["worker_mb"]
    no_bytecode = " (no bytecode cache)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else ""
    rows = [
        ("floor: import lark_oapi + long connection", f"{f['floor_mb']:.0f} MB", ""),
        ("bot process at rest", f"{f['bot_mb']:.0f} MB", ""),
        ("worker child at rest", f"{f['worker_mb']:.0f} MB", ""),
        (
            "bot + worker",
            f"{at_rest:.0f} MB",
            f"{at_rest / f['floor_mb']:.2f}x the floor (target <= 1.5x)",
        ),
        ("list's HTTP round trip", f"{f['list_round_trip_s'] * 1000:.0f} ms", ""),
        *cli_rows(f, no_bytecode, ""),
        *cli_rows(f, " (bytecode cached)", "_cached"),
    ]
    return "\n".join(f"{name:<42} {value:>24}  {note}".rstrip() for name, value, note in rows)


if __name__ == "__main__":
    print(report(asyncio.run(figures())))
