"""`countersign health` reads /readyz for people, and fails when the bot is not ready."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.backends import Backend
from tests.support.processes import ENV, backend_config, cli, free_port, start, stop
from tests.support.stack import StackFactory


async def test_health_prints_each_consumer_and_its_state(make_stack: StackFactory) -> None:
    stack = await make_stack("ws")
    result = await cli("health", "--url", stack.bot_url)
    assert result.code == 0, result.err
    assert "countersign: ready" in result.out
    lines = {line.split()[0]: line for line in result.out.splitlines()[1:]}
    assert (
        "listening_unverified" in lines["callback_consumer"]
        and "mode ws" in lines["callback_consumer"]
    )
    assert "listening" in lines["text_listener"]
    assert "ok" in lines["store"] and "ok" in lines["outbox"]
    as_json = await cli("health", "--url", stack.bot_url, "--json")
    body = json.loads(as_json.out)
    assert body["components"]["callback_consumer"]["mode"] == "ws"
    assert stack.sandbox.app_secret not in as_json.out


async def test_health_exits_non_zero_when_nothing_answers() -> None:
    result = await cli("health", "--url", f"http://127.0.0.1:{free_port()}")
    assert result.code == 1 and "cannot read" in result.err


async def test_health_finds_the_bot_its_config_describes(backend: Backend, tmp_path: Path) -> None:
    """`health --config F` asks the bot `run --config F` started: [http] host and port."""
    config = backend_config(backend, tmp_path, free_port())
    env = {**ENV, "SVC_TOKEN": "svc-secret-token-1234", "COUNTERSIGN_URL": ""}
    assert (await cli("db", "upgrade", "--config", str(config), env=env)).code == 0
    running = await start("--config", str(config), env=env)
    try:
        result = await cli("health", "--config", str(config), "--json", env=env)
        assert result.code == 0, result.err
        assert json.loads(result.out)["status"] == "ready"
    finally:
        assert await stop(running) == 0
    missing = await cli("health", "--config", str(tmp_path / "nope.toml"), env=env)
    assert missing.code == 2 and "no config file" in missing.err
