"""Crash-only recovery with a real process: SIGKILL while a reply is in flight, restart, once.

The bot runs as `countersign run --config FILE` (webhook mode) against an in-process sandbox.
The helpers here (a TOML written from the e2e harness's own settings, a bot subprocess whose
output is drained and shown on failure) are shared with the other process tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from bot.devstack import (
    APP_SECRET_ENV,
    ENCRYPT_KEY_ENV,
    VERIFICATION_TOKEN_ENV,
    SandboxApp,
    point_webhooks,
)
from bot.ingress.text import INBOX_KIND
from larksandbox.app import SandboxOptions, build_sandbox
from larksandbox.longconn import ClientConfig
from larksandbox.state import DEFAULT_APP_ID, SandboxState, default_state
from store.authority import Store
from store.inbox import ANSWERED, RECEIVED, Inbox
from tests.conftest import Backend
from tests.e2e.conftest import CALLBACK_SECRET, DEV_TOKEN, OTHER_TOKEN, bot_config, eventually
from tests.sandbox.conftest import until
from tests.support.processes import ENV, ROOT, free_port

READY_LINE = "countersign API listening on "
START_DEADLINE_S = 30.0
STOP_DEADLINE_S = 20.0

# -- a bot process ----------------------------------------------------------------------------


def toml_value(value: Any) -> str:
    """One TOML value; tables become inline tables (keys here are all bare-key safe)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key} = {toml_value(item)}" for key, item in value.items()) + "}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def write_config(
    path: Path, backend: Backend, sandbox: SandboxApp, port: int, mode: str, **lark: Any
) -> Path:
    """The in-process harness's settings (same store, audiences, proposers) as a TOML file."""
    venue_path = path.parent / "venue.db"  # the in-process bot's venue: one exchange for all
    settings = bot_config(backend, port, sandbox, mode, venue_path=venue_path, **lark).settings
    data = settings.model_dump(mode="json", by_alias=True, exclude_none=True)
    path.write_text("".join(f"{key} = {toml_value(value)}\n" for key, value in data.items()))
    return path


def bot_env(sandbox: SandboxApp) -> dict[str, str]:
    """The secrets the config names, as environment variables (never in the file)."""
    return {
        **ENV,
        "E2E_DEV_TOKEN": DEV_TOKEN,
        "E2E_OTHER_TOKEN": OTHER_TOKEN,
        "E2E_CALLBACK_SECRET": CALLBACK_SECRET,
        APP_SECRET_ENV: sandbox.app_secret,
        ENCRYPT_KEY_ENV: sandbox.encrypt_key,
        VERIFICATION_TOKEN_ENV: sandbox.verification_token,
    }


@dataclass
class BotProcess:
    process: asyncio.subprocess.Process
    url: str
    output: list[str]
    reader: asyncio.Task[None]

    async def readyz(self) -> tuple[int, dict[str, Any]]:
        async with aiohttp.ClientSession() as http, http.get(f"{self.url}/readyz") as response:
            body: dict[str, Any] = await response.json()
            return response.status, body

    async def kill(self) -> int:
        """SIGKILL: no shutdown path runs, exactly like a crash."""
        self.process.send_signal(signal.SIGKILL)
        return await asyncio.wait_for(self.process.wait(), STOP_DEADLINE_S)

    async def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), STOP_DEADLINE_S)


StartBot = Callable[[Path, dict[str, str]], Awaitable[BotProcess]]


@dataclass
class _Started:
    bots: list[BotProcess] = field(default_factory=list)


async def _start_bot(config: Path, env: dict[str, str]) -> BotProcess:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "run",
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT,
        env=env,
    )
    assert process.stdout is not None
    stdout = process.stdout
    output: list[str] = []
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def read() -> None:
        # Drained for the process's whole life: a full pipe would block the bot's logging.
        async for raw in stdout:
            line = raw.decode(errors="replace").rstrip()
            output.append(line)
            if line.startswith(READY_LINE) and not ready.done():
                ready.set_result(line.split()[-1])
        if not ready.done():
            ready.set_exception(
                AssertionError("the bot exited before it was ready:\n" + "\n".join(output[-40:]))
            )

    reader = asyncio.create_task(read())
    try:
        url = await asyncio.wait_for(ready, START_DEADLINE_S)
    except BaseException:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await reader
        raise
    return BotProcess(process, url, output, reader)


@contextlib.asynccontextmanager
async def bot_processes() -> AsyncIterator[StartBot]:
    """Start bot processes; whatever is still running at the end is killed (shown on failure)."""
    started = _Started()

    async def start(config: Path, env: dict[str, str]) -> BotProcess:
        bot = await _start_bot(config, env)
        started.bots.append(bot)
        return bot

    try:
        yield start
    except BaseException:
        for index, bot in enumerate(started.bots):
            print(f"--- bot process {index} (last lines) ---\n" + "\n".join(bot.output[-60:]))
        raise
    finally:
        for bot in started.bots:
            if bot.process.returncode is None:
                bot.process.kill()
                await bot.process.wait()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(bot.reader, 5)


# -- a sandbox without an in-process bot --------------------------------------------------------


@dataclass
class Lark:
    app: SandboxApp
    state: SandboxState
    http: aiohttp.ClientSession

    async def control(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        url = f"{self.app.base_url}/sandbox/api{path}"
        async with self.http.request(method, url, json=body) as response:
            return response.status, await response.json()

    async def say(self, text: str, sender: str = "ou_alice", chat: str = "oc_ops") -> str:
        status, sent = await self.control(
            "POST", f"/chats/{chat}/messages", {"sender": sender, "text": text, "mention_bot": True}
        )
        assert status == 201, sent
        message_id: str = sent["message_id"]
        return message_id

    def replies_to(self, message_id: str) -> list[str]:
        return [
            json.loads(m.content)["text"]
            for m in self.state.messages.values()
            if m.parent_id == message_id
            and m.sender_type == "app"
            and m.sender_id == self.app.app_id
        ]


@contextlib.asynccontextmanager
async def sandbox_alone() -> AsyncIterator[Lark]:
    state = default_state()
    options = SandboxOptions(
        client_config=ClientConfig(reconnect_nonce_s=0, reconnect_interval_s=1)
    )
    server = TestServer(build_sandbox(state, options), host="127.0.0.1")
    await server.start_server()
    app = state.apps[DEFAULT_APP_ID]
    sandbox = SandboxApp(
        f"http://127.0.0.1:{server.port}",
        app.app_id,
        app.app_secret,
        app.encrypt_key,
        app.verification_token,
        app.tenant_key,
    )
    try:
        async with aiohttp.ClientSession() as http:
            yield Lark(sandbox, state, http)
    finally:
        await server.close()


# -- the test -----------------------------------------------------------------------------------


async def test_a_text_stored_but_not_answered_is_answered_once_after_a_kill(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    inbox = Inbox(store)
    async with sandbox_alone() as lark, bot_processes() as start:
        config = write_config(tmp_path / "bot.toml", backend, lark.app, free_port(), "webhook")
        env = bot_env(lark.app)
        first = await start(config, env)
        await point_webhooks(lark.app, first.url)

        # Lark's OpenAPI now answers after 30 s: the reply will be in flight when we kill.
        # The (generous) app rate limit makes the sandbox note each authorized call as it
        # arrives, before the latency: proof that the reply request has reached "Lark".
        status, _ = await lark.control(
            "POST", "/faults", {"latency_ms": 30_000, "app_rate_limit_per_s": 1000}
        )
        assert status == 200
        message_id = await lark.say("help")

        async def reply_in_flight() -> bool:
            entry = await inbox.get(INBOX_KIND, message_id)
            calls = lark.state.app_call_times.get(lark.app.app_id, ())
            return entry is not None and entry.tries == 1 and len(calls) == 1

        await eventually(reply_in_flight)
        assert await first.kill() == -signal.SIGKILL
        stored = await inbox.get(INBOX_KIND, message_id)
        assert stored is not None and stored.status == RECEIVED and stored.answer is None
        assert lark.replies_to(message_id) == []

        status, _ = await lark.control(
            "POST", "/faults", {"latency_ms": 0, "app_rate_limit_per_s": 0}
        )
        assert status == 200
        second = await start(config, env)  # same port: the sandbox's webhook URLs still hold

        await until(lark.state, lambda: bool(lark.replies_to(message_id)), deadline_s=20)

        async def answered() -> bool:
            entry = await inbox.get(INBOX_KIND, message_id)
            return entry is not None and entry.status == ANSWERED

        await eventually(answered)
        [reply] = lark.replies_to(message_id)
        assert "help" in reply and "never by text" in reply
        assert await second.terminate() == 0

        # A third run finds nothing to recover: still one reply once it has answered new text.
        third = await start(config, env)
        status, ready = await third.readyz()
        assert status == 200, ready
        marker = await lark.say("help", sender="ou_bob")
        await until(lark.state, lambda: bool(lark.replies_to(marker)), deadline_s=20)
        assert len(lark.replies_to(message_id)) == 1
        final = await inbox.get(INBOX_KIND, message_id)
        assert final is not None and final.status == ANSWERED and final.tries == 2
        assert await third.terminate() == 0
