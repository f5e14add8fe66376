"""The first hour: `make run` and the commands the demo and the README suggest, for real."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path

from bot.app.demo_story import story
from tests.support.processes import ENV, ROOT, Running, cli, free_port, start_command, stop
from tests.support.waiting import eventually

ORDER_EXAMPLE = str(ROOT / "examples" / "order.json")
ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")


def test_make_run_takes_ports_and_says_it_installs_before_pip(tmp_path: Path) -> None:
    dry = subprocess.run(
        ["make", "-n", "run", "PORT=8123", "SANDBOX_PORT=9123", f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    said = next(i for i, line in enumerate(dry) if "installing (1\u20132 min)\u2026" in line)
    installs = next(i for i, line in enumerate(dry) if "pip install" in line)
    assert said < installs
    assert any(line.endswith("countersign demo --port 8123 --sandbox-port 9123") for line in dry)


async def test_the_demo_says_what_to_do_next_and_each_suggestion_works(tmp_path: Path) -> None:
    """Run from a fresh directory with no config: the tools find the demo's data alone."""
    port, sandbox_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    logs = (tmp_path / "demo.log").open("wb")
    demo = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "bot.cli", "demo", "--port", str(port)),
        *("--sandbox-port", str(sandbox_port)),
        stdout=asyncio.subprocess.PIPE,
        stderr=logs,
        cwd=tmp_path,
        env=ENV,
    )
    assert demo.stdout is not None
    block: list[str] = []
    try:
        async with asyncio.timeout(120):
            while not block or "countersign venue orders" not in block[-1]:
                line = (await demo.stdout.readline()).decode()
                assert line, f"the demo ended before it said what to do: {block}"
                if block or line.startswith("countersign demo is ready"):
                    block.append(line.rstrip("\n"))
        text = "\n".join(block)
        assert "token:      dev-token" in text and f"{url}/ops" in text
        listed_ops = block[
            block.index("  operations:") + 1 : block.index("  try, in another shell:")
        ]
        ids = [found[0] for line in listed_ops if (found := ULID.search(line))]
        samples = story(tmp_path).samples  # every registered domain's
        assert len(ids) == len(samples), text  # one a sample
        # a sample decided otherwise than by Alice's Confirm says how, beside its id
        assert any("confirm as Alice, then confirm as Carol" in line for line in listed_ops), text
        assert any("reject as Alice, typing a reason" in line for line in listed_ops), text
        commands = [
            line.split("countersign ", 1)[1].split() for line in block if "bin/countersign " in line
        ]
        assert [c[0] for c in commands] == ["show", "propose", "venue"]
        assert commands[0][1] == ids[0]

        shown = await cli(*commands[0], cwd=tmp_path)
        assert shown.code == 0 and ids[0] in shown.out, shown.err
        proposed = await cli(
            *[ORDER_EXAMPLE if a == "examples/order.json" else a for a in commands[1]], cwd=tmp_path
        )
        assert proposed.code == 0 and "proposed" in proposed.out, proposed.err
        orders = await cli(*commands[2], "--json", cwd=tmp_path)
        assert orders.code == 0 and "using the dev data in var/dev" in orders.err, orders.err
        # One name for the dev token: the CLI reads the variable the demo's proposer uses.
        listed = await cli(
            "list", "--url", url, env={**ENV, "COUNTERSIGN_TOKEN": "dev-token"}, cwd=tmp_path
        )
        assert listed.code == 0 and ids[0] in listed.out, listed.err
        for tool in (("reconcile",), ("deliveries", "list"), ("audit", "verify", "--store")):
            found = await cli(*tool, cwd=tmp_path)
            assert found.code == 0 and "using the dev data in var/dev" in found.err, (
                tool,
                found.err,
            )

        # the demo's own chainer linked what its samples did: the chain holds
        async def linked_and_holds() -> bool:
            said = await cli("audit", "verify", "--store", cwd=tmp_path)
            return (
                said.code == 0 and "audit chain holds" in said.out and "not linked" not in said.out
            )

        await eventually(linked_and_holds)
    finally:
        demo.send_signal(signal.SIGTERM)
        await asyncio.wait_for(demo.wait(), 30)
        logs.close()
    # The workers alone, on the demo's data, with nothing exported: found alone, or by --dev.
    bare = {k: v for k, v in ENV.items() if not k.startswith("COUNTERSIGN_")}
    for extra in ((), ("--dev",)):
        said = await worker_starts(tmp_path, bare, *extra)
        assert "countersign worker running" in said, said
        assert ("using the dev data in var/dev" in said) == (extra == ()), said
    # Quiet at the default level: one line for the migrations, none per step or HTTP request,
    # and no WARNING on the happy path (a card locked by its click, a chat's message rate and
    # the faults the demo asks of its venue are expected)
    logged = (tmp_path / "demo.log").read_text(encoding="utf-8").splitlines()
    assert [line for line in logged if " WARNING " in line or " ERROR " in line] == []
    assert [line for line in logged if "alembic" in line or "httpx" in line] == []
    # (the bot and its worker process each open the store; whichever comes first migrates)
    assert sum("countersign.store store migrated from nothing to" in line for line in logged) == 1


async def worker_starts(cwd: Path, env: dict[str, str], *extra: str) -> str:
    """`countersign worker` until it says it runs; stopped by SIGTERM, it must exit 0. Its
    output (stderr merged)."""
    worker, seen = await start_command(
        "worker",
        *extra,
        ready=lambda line: "countersign worker running" in line,
        env=env,
        cwd=cwd,
        deadline_s=60,
    )
    code = await stop(Running(worker, ""))
    assert code == 0, "".join(seen)
    return "".join(seen)
