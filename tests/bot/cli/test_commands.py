"""The real `countersign` process: run, propose, show, list, cancel, config, db."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from store import head_revision
from tests.support.backends import Backend
from tests.support.processes import (
    ENV,
    ROOT,
    Running,
    backend_config,
    cli,
    free_port,
    start,
    stop,
)

MESSAGE_EXAMPLE = (ROOT / "examples" / "message.json").read_bytes()


@pytest.fixture
async def dev_bot(tmp_path: Path) -> AsyncIterator[Running]:
    running = await start("--dev", "--data-dir", str(tmp_path / "dev"), "--port", str(free_port()))
    yield running
    if running.process.returncode is None:
        running.process.kill()
        await running.process.wait()


async def test_dev_profile_serves_the_api_and_the_cli_round_trips(dev_bot: Running) -> None:
    client = ["--url", dev_bot.url, "--token", "dev-token"]
    proposed = await cli("propose", "examples/order.json", *client, "--json")
    assert proposed.code == 0, proposed.err
    view = json.loads(proposed.out)
    assert view["state"] == "prepared" and view["audience"]["chat_id"] == "oc_ops"
    assert view["audience"]["operators"] == ["ou_alice", "ou_bob", "ou_carol"]
    # Lark is off under --dev: no card is posted, and every surface says why and what to do
    assert "Lark is off here" in view["card"]["error"]
    assert "countersign run --sandbox" in view["card"]["error"]
    async with aiohttp.ClientSession() as http, http.get(f"{dev_bot.url}/ops/{view['id']}") as page:
        assert page.status == 200 and "Card not posted: Lark is off here" in await page.text()

    replay = await cli("propose", "examples/order.json", *client)
    assert replay.code == 0 and "already proposed" in replay.out and view["id"] in replay.out

    message = await cli(
        "propose",
        "-",
        *client,
        stdin=MESSAGE_EXAMPLE,
    )
    assert message.code == 0 and "acme-supplier" in message.out
    # a new draft to the same destination supersedes the open one, and says which
    newer = json.loads(MESSAGE_EXAMPLE)
    newer.update(request_id="example-message-2")
    newer["payload"]["text"] = "About invoice 7: please send it again."
    superseding = await cli("propose", "-", *client, stdin=json.dumps(newer).encode())
    first_line = message.out.splitlines()[1]  # "<id>  <headline>"
    assert superseding.code == 0 and f"superseded the open draft {first_line.split()[0]}" in (
        superseding.out
    )

    shown = await cli("show", view["id"], *client)
    assert shown.code == 0
    lark_off = "Card not posted: Lark is off here (run --dev)"
    assert shown.out.startswith(f"{view['id']}  {lark_off}  SIMULATED\n"), shown.out
    assert view["confirm_digest"] in shown.out and "Quantity: 0.010" in shown.out
    assert "operators Alice, Bob" in shown.out  # the dev profile names the sandbox's people

    listed = await cli("list", *client, "--limit", "1")
    assert listed.code == 0 and "more: --cursor" in listed.out

    cancelled = await cli("cancel", view["id"], *client)
    assert cancelled.code == 0 and cancelled.out.startswith("cancelled:\n")
    assert "Cancelled by the proposer" in cancelled.out

    filtered = await cli("list", *client, "--state", "cancelled", "--json")
    assert [item["id"] for item in json.loads(filtered.out)["items"]] == [view["id"]]

    assert await stop(dev_bot) == 0


async def test_api_errors_exit_non_zero_with_the_message(dev_bot: Running, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"request_id": "b1", "kind": "finance.order", "audience": "ops", '
        '"payload": {"quantity": 0.5}}'
    )
    result = await cli("propose", str(bad), "--url", dev_bot.url, "--token", "dev-token")
    assert result.code == 1
    assert "payload.quantity" in result.err and "decimal numbers as strings" in result.err
    wrong = await cli("list", "--url", dev_bot.url, "--token", "nope")
    assert wrong.code == 1 and "unauthorized" in wrong.err
    missing = await cli("show", "01NOPE", "--url", dev_bot.url, "--token", "dev-token", "--json")
    assert missing.code == 1 and json.loads(missing.out)["error"]["code"] == "not_found"


async def test_run_with_a_config_file_on_the_test_backend(backend: Backend, tmp_path: Path) -> None:
    port = free_port()
    config = backend_config(backend, tmp_path, port)
    env = {**ENV, "SVC_TOKEN": "svc-secret-token-1234"}
    upgraded = await cli("db", "upgrade", "--config", str(config), env=env)
    assert upgraded.code == 0 and f"revision {head_revision()}" in upgraded.out
    running = await start("--config", str(config), env=env)
    try:
        result = await cli(
            "propose", "examples/order.json", "--config", str(config), "--json", env=env
        )
        assert result.code == 0, result.err
        assert json.loads(result.out)["source"]["proposer"] == "svc"
    finally:
        assert await stop(running) == 0


async def test_run_refuses_a_config_with_problems(tmp_path: Path) -> None:
    config = tmp_path / "countersign.toml"
    config.write_text('[[proposers]]\nname = "svc"\ntoken_env = "UNSET_TOKEN_VAR"\n')
    result = await cli("run", "--config", str(config))
    assert result.code == 2
    assert "proposers[0].token_env: environment variable UNSET_TOKEN_VAR is not set" in result.err
