"""`countersign run --sandbox-url URL`: the dev profile wired to a sandbox already running."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import aiohttp

from tests.support.processes import cli, free_port, start, start_sandbox


async def test_the_bot_joins_a_running_sandbox_and_posts_its_cards_there(tmp_path: Path) -> None:
    sandbox_port = free_port()
    sandbox, _banner = await start_sandbox(sandbox_port, tmp_path / "sandbox.json")
    sandbox_url = f"http://127.0.0.1:{sandbox_port}"
    bot = None
    try:
        bot = await start(
            "--sandbox-url",
            sandbox_url,
            "--data-dir",
            str(tmp_path / "dev"),
            "--port",
            str(free_port()),
        )
        proposed = await cli(
            "propose", "examples/order.json", "--url", bot.url, "--token", "dev-token", "--json"
        )
        assert proposed.code == 0, proposed.err
        operation_id = json.loads(proposed.out)["id"]
        async with aiohttp.ClientSession() as http:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30  # the card worker posts within a second or two
            while True:
                async with http.get(f"{sandbox_url}/sandbox/api/chats/oc_ops/messages") as response:
                    items = (await response.json())["items"]
                cards = [
                    m
                    for m in items
                    if m["msg_type"] == "interactive" and operation_id in m["content"]
                ]
                if cards or loop.time() > deadline:
                    break
                await asyncio.sleep(0.02)
            assert len(cards) == 1
            while loop.time() < deadline:  # clicks need the bot's long connection up
                async with http.get(f"{bot.url}/readyz") as response:
                    if response.status == 200:
                        break
                await asyncio.sleep(0.05)
            async with http.post(
                f"{sandbox_url}/sandbox/api/messages/{cards[0]['message_id']}/click",
                json={"operator": "ou_alice", "button": "confirm"},
            ) as response:
                reply = await response.json()
        assert reply["status"] == "answered" and reply["toast"]["type"] == "success"
        assert reply["transport"] == "ws"
    finally:
        if bot is not None and bot.process.returncode is None:
            bot.process.send_signal(signal.SIGTERM)
            await bot.process.wait()
        sandbox.send_signal(signal.SIGINT)
        await sandbox.wait()
