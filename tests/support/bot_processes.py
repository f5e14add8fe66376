"""The bot as a real process (`countersign run --config FILE`) against an in-process sandbox.

A TOML written from the in-process harness's own settings (tests/support/stack.py), a bot
subprocess whose output is drained and shown on failure, a sandbox without an in-process
bot, and the crash suite's timings and steps (propose, wait for the card, wait for /readyz).
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

from bot.app.devstack import (
    APP_SECRET_ENV,
    ENCRYPT_KEY_ENV,
    VERIFICATION_TOKEN_ENV,
    SandboxApp,
)
from larksandbox import (
    DEFAULT_APP_ID,
    ClientConfig,
    SandboxOptions,
    SandboxState,
    build_sandbox,
    default_state,
)
from store import Store
from tests.support.backends import Backend
from tests.support.processes import ENV, ROOT, free_port
from tests.support.sandbox import TEST_URL_VERIFY_TIMEOUT_S
from tests.support.stack import CALLBACK_SECRET, DEV_TOKEN, OTHER_TOKEN, bot_config
from tests.support.waiting import eventually

READY_LINE = "countersign API listening on "
START_DEADLINE_S = 30.0
# past the bot's own bound on a signalled stop (bot/app/workers_serving.py STOP_BOUND_S), so a
# hung stop ends in the bot's dump of where it hung, not in this harness's timeout
STOP_DEADLINE_S = 35.0

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
            print(f"--- bot process {index} (last lines) ---\n" + "\n".join(bot.output[-150:]))
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
        client_config=ClientConfig(reconnect_nonce_s=0, reconnect_interval_s=1),
        url_verify_timeout_s=TEST_URL_VERIFY_TIMEOUT_S,
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


# -- the crash suite: a bot process with short timings, and its first steps ---------------


# Short timeouts keep a crashed pass's lease (2 x submit timeout + 3 s) short.
CRASH_EXECUTION = {
    "poll_s": 0.2,
    "submit_timeout_s": 1.0,
    "not_found_after_s": 2.0,
    "track_max_s": 1.0,
    "venue_tick_s": 0.2,
}
RECOVERY_DEADLINE_S = 60.0


async def api(bot: BotProcess, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(
            method,
            f"{bot.url}{path}",
            data=None if body is None else json.dumps(body),
            headers={"Authorization": f"Bearer {DEV_TOKEN}"},
        ) as response,
    ):
        return response.status, await response.json()


def card_of(lark: Lark, operation_id: str) -> str | None:
    for message in lark.state.messages.values():
        if message.msg_type == "interactive" and operation_id in message.content:
            return message.message_id
    return None


async def offer(bot: BotProcess, lark: Lark, store: Store, body: dict[str, Any]) -> tuple[Any, str]:
    """Propose through `bot`; wait until its card is in the chat and recorded as offered."""
    status, view = await api(bot, "POST", "/api/v1/operations", body)
    assert status == 201, view
    await eventually(
        lambda: card_of(lark, view["id"]) is not None, deadline_s=20, woken_by=lark.state
    )
    message_id = card_of(lark, view["id"])
    assert message_id is not None

    async def offered() -> bool:
        op = await store.get(view["id"])
        return op is not None and op.card_message_id == message_id

    await eventually(offered)
    return view, message_id


async def connected(bot: BotProcess) -> bool:
    status, _ = await bot.readyz()
    return status == 200


async def first_bot(
    start: StartBot, lark: Lark, backend: Backend, tmp_path: Path
) -> tuple[Path, dict[str, str], BotProcess]:
    """A ws-mode bot process with crash-suite timings, connected: (config, env, process)."""
    config = write_config(
        tmp_path / "bot.toml", backend, lark.app, free_port(), "ws", execution=CRASH_EXECUTION
    )
    env = bot_env(lark.app)
    bot = await start(config, env)
    await eventually(lambda: connected(bot), deadline_s=30)
    return config, env, bot
