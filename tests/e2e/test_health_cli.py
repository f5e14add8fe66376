"""`countersign health` reads /readyz for people, and fails when the bot is not ready."""

from __future__ import annotations

import json

from tests.support.processes import cli, free_port
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
