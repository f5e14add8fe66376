"""`countersign run --config FILE` as a real process from an empty working directory: it
writes only where the config says (no ./var/sim-venue.db with finance disabled), and
`run --sandbox --config FILE` runs that config against the built-in sandbox, whose app id,
tenant, base URL and secrets fill its [lark] section (README, docs/lark-setup.md). Both
backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.backends import Backend
from tests.support.processes import (
    ENV,
    ROOT,
    Running,
    backend_config,
    cli,
    free_port,
    start_command,
    stop,
)
from tests.support.waiting import eventually

LISTENING = "countersign API listening on "
TOKEN = "svc-secret-token-1234"


def own_config(backend: Backend, directory: Path, port: int, finance: str) -> Path:
    """One audience (Alice, Bob) in the sandbox's Ops chat, one proposer, `finance` its table."""
    return backend_config(
        backend, directory, port, operators=("ou_alice", "ou_bob"), finance=finance
    )


def tree(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


async def run_from(cwd: Path, *args: str) -> Running:
    env = {**ENV, "SVC_TOKEN": TOKEN}
    process, seen = await start_command(
        "run", *args, ready=lambda line: line.startswith(LISTENING), env=env, cwd=cwd
    )
    return Running(process, seen[-1].split()[-1])


async def test_run_with_finance_disabled_writes_nothing_in_the_working_directory(
    backend: Backend, tmp_path: Path
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    config = own_config(backend, tmp_path, free_port(), "enabled = false")
    env = {**ENV, "SVC_TOKEN": TOKEN}
    assert (await cli("db", "upgrade", "--config", str(config), env=env, cwd=cwd)).code == 0
    running = await run_from(cwd, "--config", str(config))
    try:
        health = await cli("health", "--config", str(config), env=env, cwd=cwd)
        assert health.code == 0, health.err
    finally:
        assert await stop(running) == 0
    assert tree(cwd) == []  # no ./var/sim-venue.db, nor anything else


async def test_run_sandbox_with_your_own_config_confirms_on_the_sandbox(
    backend: Backend, tmp_path: Path
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    venue = tmp_path / "venue" / "sim.db"
    finance = f'venue_path = "{venue}"\n[[domains.finance.accounts]]\nname = "sim-main"\n'
    config = own_config(backend, tmp_path, free_port(), finance + 'budget = "100000"')
    env = {**ENV, "SVC_TOKEN": TOKEN}
    assert (await cli("db", "upgrade", "--config", str(config), env=env, cwd=cwd)).code == 0
    sandbox = f"http://127.0.0.1:{free_port()}"
    args = ("--sandbox", "--config", str(config), "--sandbox-port", sandbox.rsplit(":", 1)[1])
    running = await run_from(cwd, *args)
    try:
        order = str(ROOT / "examples" / "order.json")
        proposed = await cli("propose", order, "--config", str(config), "--json", env=env)
        assert proposed.code == 0, proposed.err
        view = json.loads(proposed.out)
        assert view["source"]["proposer"] == "svc"  # the config's proposer, not the dev one
        async with aiohttp.ClientSession() as http:
            card = await card_shown(http, running.url, view["id"])
            async with http.post(
                f"{sandbox}/sandbox/api/messages/{card}/click",
                json={"operator": "ou_alice", "button": "confirm"},
            ) as response:
                clicked = await response.json()
        # the bot took the click: the sandbox's app is the config's Lark app
        assert clicked["sent"] and clicked["toast"]["type"] == "success", clicked
        done = await cli("show", view["id"], "--wait", "60", "--config", str(config), env=env)
        assert done.code == 0 and "Filled" in done.out, done.out + done.err
    finally:
        assert await stop(running) == 0
    assert tree(cwd) == []  # the sandbox's state stays in memory: no --data-dir was given
    assert venue.exists()


async def card_shown(http: aiohttp.ClientSession, bot: str, operation_id: str) -> str:
    """The card's message id, once the bot has posted it and recorded it as shown."""
    shown: dict[str, Any] = {}

    async def current() -> bool:
        async with http.get(
            f"{bot}/api/v1/operations/{operation_id}",
            headers={"Authorization": f"Bearer {TOKEN}"},
        ) as response:
            shown.update(await response.json())
        return bool(shown["card"]["delivery"] == "current" and shown["card"]["message_id"])

    await eventually(current)
    return str(shown["card"]["message_id"])
