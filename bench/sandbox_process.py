"""The sandbox (a local Lark) in its own process, as the real Lark is remote to the bot.

Run as a script it serves the sandbox on a free loopback port, prints its base URL as one
line on stdout and serves until SIGTERM. Setup is lifted out of the way, as in the in-process
benches before: the 5 messages/s per chat limit (posting hundreds of cards into one chat is
setup, not what is measured) and the long connection's reconnect delay.

`SandboxProcess.start()` spawns it and reads the app's credentials from the control API.

    .venv/bin/python bench/sandbox_process.py      # prints http://127.0.0.1:PORT
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.app.heap import startup_heap_frozen
from larksandbox import state as sandbox_state
from larksandbox.app import SandboxOptions, build_sandbox
from larksandbox.entities import App
from larksandbox.longconn_wire import ClientConfig
from larksandbox.state import DEFAULT_APP_ID, default_state

START_DEADLINE_S = 30.0
STOP_DEADLINE_S = 10.0


@dataclass
class SandboxProcess:
    """A running sandbox process and its one app."""

    base_url: str
    app: App
    process: asyncio.subprocess.Process

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def start(cls) -> SandboxProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__)), stdout=asyncio.subprocess.PIPE
        )
        assert process.stdout is not None
        try:
            line = await asyncio.wait_for(process.stdout.readline(), START_DEADLINE_S)
            base_url = line.decode().strip()
            if not base_url.startswith("http://"):
                raise RuntimeError(f"the sandbox process did not start: {line!r}")
            async with aiohttp.ClientSession() as http:
                async with http.get(f"{base_url}/sandbox/api/apps") as response:
                    apps = (await response.json())["items"]
        except BaseException:
            process.kill()
            await process.wait()
            raise
        fields = App.__dataclass_fields__
        app = next(
            App(**{k: v for k, v in item.items() if k in fields})
            for item in apps
            if item["app_id"] == DEFAULT_APP_ID
        )
        return cls(base_url, app, process)

    async def connections(self, http: aiohttp.ClientSession) -> int:
        """Long connections the sandbox holds for the app right now."""
        async with http.get(f"{self.base_url}/sandbox/api/apps") as response:
            apps = (await response.json())["items"]
        return sum(int(item["connections"]) for item in apps if item["app_id"] == self.app.app_id)

    async def wait_connections(self, http: aiohttp.ClientSession, count: int, what: str) -> None:
        async def connected() -> bool:
            return await self.connections(http) == count

        await wait_until(connected, START_DEADLINE_S, what)

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), STOP_DEADLINE_S)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


async def wait_until(check: Callable[[], Awaitable[bool]], deadline_s: float, what: str) -> None:
    """Poll `check` until it is true; raise naming `what` after `deadline_s`."""
    deadline = time.monotonic() + deadline_s
    while not await check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {deadline_s:.0f} s")
        await asyncio.sleep(0.05)


async def post_cards(sandbox: SandboxProcess, card: dict[str, Any], count: int) -> list[str]:
    """Send `count` copies of `card` into oc_ops as the app, through the OpenAPI; message ids."""
    base = sandbox.base_url
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{base}/open-apis/auth/v3/tenant_access_token/internal",
            json={"app_id": sandbox.app.app_id, "app_secret": sandbox.app.app_secret},
        ) as response:
            token = (await response.json())["tenant_access_token"]
        body = {"receive_id": "oc_ops", "msg_type": "interactive", "content": json.dumps(card)}

        async def send() -> str:
            async with http.post(
                f"{base}/open-apis/im/v1/messages?receive_id_type=chat_id",
                json=body,
                headers={"Authorization": f"Bearer {token}"},
            ) as response:
                reply = await response.json()
            if reply.get("code") != 0:
                raise RuntimeError(f"the sandbox refused a card: {reply}")
            return str(reply["data"]["message_id"])

        ids: list[str] = []
        for start in range(0, count, 50):
            ids += await asyncio.gather(*(send() for _ in range(min(50, count - start))))
        return ids


async def serve() -> None:
    sandbox_state.CHAT_SEND_LIMIT_PER_S = 1_000_000
    options = SandboxOptions(
        client_config=ClientConfig(reconnect_nonce_s=0, reconnect_interval_s=1)
    )
    runner = web.AppRunner(
        build_sandbox(default_state(), options), access_log=None, shutdown_timeout=2.0
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        print(f"http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
        with startup_heap_frozen():  # as `countersign sandbox` does
            await stop.wait()
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    from clickers import pin_stand_in  # run as a script: its sibling

    pin_stand_in()
    asyncio.run(serve())
