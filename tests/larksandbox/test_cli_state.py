"""`countersign sandbox` as a process: banner with the defaults, state persisted across restarts."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import aiohttp

from larksandbox.state import DEFAULT_APP_ID
from tests.support.processes import free_port, start_sandbox


async def test_the_banner_lists_the_defaults_and_state_survives_a_restart(tmp_path: Path) -> None:
    port, state_file = free_port(), tmp_path / "sandbox.json"
    process, banner = await start_sandbox(port, state_file)
    base = f"http://127.0.0.1:{port}"
    try:
        for expected in (
            DEFAULT_APP_ID,
            "sandbox-tenant",
            "ou_alice (Alice",
            "ou_eve (Eve, other-tenant)",
            "oc_ops (Ops: ou_alice, ou_bob, ou_carol, ou_mallory)",
            "oc_acme",
            "oc_other",
            f"{base}/sandbox",
        ):
            assert expected in banner, expected
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/sandbox/api/apps") as response:
                app = (await response.json())["items"][0]
            assert app["app_secret"] in banner and app["encrypt_key"] in banner
            assert app["verification_token"] in banner
            async with http.post(
                f"{base}/sandbox/api/users", json={"open_id": "ou_dave", "name": "Dave"}
            ) as r:
                assert r.status == 201
            async with http.post(
                f"{base}/sandbox/api/chats/oc_ops/messages",
                json={"sender": "ou_bob", "text": "kept"},
            ) as r:
                message_id = (await r.json())["message_id"]
    finally:
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 20) == 0
    saved = json.loads(state_file.read_text())
    assert any(u["open_id"] == "ou_dave" for u in saved["users"])

    process, banner = await start_sandbox(port, state_file)
    try:
        assert app["app_secret"] in banner, "the same credentials after a restart"
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{base}/sandbox/api/messages/{message_id}") as r,
        ):
            assert json.loads((await r.json())["content"]) == {"text": "kept"}
    finally:
        process.send_signal(signal.SIGINT)
        await asyncio.wait_for(process.wait(), 20)
