"""The one place the bot meets the local Lark (`larksandbox`): `countersign sandbox`, and
`countersign run --sandbox` / `demo` wired to a sandbox (in-process or running).

Nothing else in bot/, cards/, store/ or workers/ imports `larksandbox`
(tests/test_layout.py holds that); it is imported here only when a dev command runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import aiohttp
from aiohttp import web

from bot.config import Config, resolve
from bot.heap import startup_heap_frozen
from bot.profiles import DEV_ENVIRON, dev_settings

APP_SECRET_ENV = "COUNTERSIGN_LARK_APP_SECRET"
ENCRYPT_KEY_ENV = "COUNTERSIGN_LARK_ENCRYPT_KEY"
VERIFICATION_TOKEN_ENV = "COUNTERSIGN_LARK_VERIFICATION_TOKEN"


@dataclass(frozen=True)
class SandboxApp:
    base_url: str
    app_id: str
    app_secret: str
    encrypt_key: str
    verification_token: str
    tenant_key: str


@contextlib.asynccontextmanager
async def listening_sandbox(host: str, port: int, state_file: Path | None) -> AsyncIterator[Any]:
    """A sandbox answering on host:port on this loop until the block ends; yields its state."""
    from larksandbox.app import SandboxOptions, build_sandbox

    state = await asyncio.to_thread(sandbox_state, state_file)
    runner = web.AppRunner(
        build_sandbox(state, SandboxOptions(state_file=state_file)), access_log=None
    )
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        yield state
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def embedded_sandbox(
    host: str, port: int, state_file: Path | None
) -> AsyncIterator[SandboxApp]:
    """A sandbox on this process's loop (the bot's ws client runs in its own thread)."""
    from larksandbox.state import DEFAULT_APP_ID

    async with listening_sandbox(host, port, state_file) as state:
        app = state.apps[DEFAULT_APP_ID]
        yield SandboxApp(
            f"http://{host}:{port}",
            app.app_id,
            app.app_secret,
            app.encrypt_key,
            app.verification_token,
            app.tenant_key,
        )


async def running_sandbox(url: str) -> SandboxApp:
    """Credentials of the first app of a sandbox that is already running."""
    base = url.rstrip("/")
    async with aiohttp.ClientSession() as http, http.get(f"{base}/sandbox/api/apps") as response:
        response.raise_for_status()
        app = (await response.json())["items"][0]
    return SandboxApp(
        base,
        app["app_id"],
        app["app_secret"],
        app["encrypt_key"],
        app["verification_token"],
        app["tenant_key"],
    )


def sandbox_config(
    data_dir: Path,
    port: int,
    sandbox: SandboxApp,
    mode: Literal["ws", "webhook"],
    host: str = "127.0.0.1",
) -> Config:
    settings = dev_settings(data_dir, port, host)
    # Sign in with Lark against the sandbox: its authorize page, token endpoint and user info;
    # http is fine on this machine only, so a wildcard bind is reached on 127.0.0.1
    local = host if host in ("127.0.0.1", "localhost") else "127.0.0.1"
    web_settings = settings.web.model_copy(
        update={
            "sign_in": True,
            "public_url": f"http://{local}:{port}",
            "lark_authorize_url": f"{sandbox.base_url}/open-apis/authen/v1/authorize",
        }
    )
    lark = settings.lark.model_copy(
        update={
            "mode": mode,
            "app_id": sandbox.app_id,
            "tenant_keys": [sandbox.tenant_key],
            "base_url": sandbox.base_url,
            "app_secret_env": APP_SECRET_ENV,
            "encrypt_key_env": ENCRYPT_KEY_ENV,
            "verification_token_env": VERIFICATION_TOKEN_ENV,
        }
    )
    settings = settings.model_copy(update={"lark": lark, "web": web_settings})
    return resolve(
        settings,
        {
            **DEV_ENVIRON,
            APP_SECRET_ENV: sandbox.app_secret,
            ENCRYPT_KEY_ENV: sandbox.encrypt_key,
            VERIFICATION_TOKEN_ENV: sandbox.verification_token,
        },
    )


async def point_webhooks(sandbox: SandboxApp, bot_url: str, attempts: int = 3) -> None:
    """Save the bot's webhook URLs in the sandbox (it runs the url_verification challenge).

    A challenge the bot did not echo in time is tried again, as someone saving the URL in
    Lark's console would: a bot that has just started may be slow to its first answer."""
    body = {"event_url": f"{bot_url}/lark/events", "card_url": f"{bot_url}/lark/card"}
    refusal = ""
    async with aiohttp.ClientSession() as http:
        for _ in range(attempts):
            async with http.patch(
                f"{sandbox.base_url}/sandbox/api/apps/{sandbox.app_id}", json=body
            ) as response:
                if response.status == 200:
                    return
                refusal = await response.text()
                if response.status != 422 or "url_verification_failed" not in refusal:
                    break
    raise RuntimeError(f"the sandbox refused the webhook URLs: {refusal}")


async def register_sign_in(sandbox: SandboxApp, config: Config) -> None:
    """Register the bot's sign-in redirect URL with the sandbox app (Lark: Security Settings >
    Redirect URLs), so its authorize page sends the browser back to this bot."""
    body = {"redirect_urls": [config.settings.web.redirect_uri]}
    async with (
        aiohttp.ClientSession() as http,
        http.patch(f"{sandbox.base_url}/sandbox/api/apps/{sandbox.app_id}", json=body) as response,
    ):
        if response.status != 200:
            raise RuntimeError(f"the sandbox refused the redirect URL: {await response.text()}")


class SandboxStateUnreadable(ValueError):
    """`--state` names a file that is not a sandbox state."""


def sandbox_state(state_file: Path | None) -> Any:
    """The sandbox's state from `state_file`, or the default one if there is none yet."""
    from larksandbox.state import SandboxState, default_state

    if state_file is None or not state_file.exists():
        return default_state()
    try:
        return SandboxState.load(state_file)
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise SandboxStateUnreadable(
            f"cannot load {state_file} ({error}): fix or remove it"
        ) from error


async def serve_sandbox(host: str, port: int, state_file: Path | None) -> None:
    """`countersign sandbox`: a local Lark on host:port until SIGINT or SIGTERM."""
    async with listening_sandbox(host, port, state_file) as state:
        print(sandbox_banner(state, f"http://{host}:{port}"), flush=True)  # only once it answers
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        with startup_heap_frozen():
            await stop.wait()


def sandbox_banner(state: Any, base: str) -> str:
    lines = [f"countersign sandbox (a local Lark) on {base}", f"  web UI:      {base}/sandbox"]
    for app in state.apps.values():
        lines += [
            f"  app:         {app.app_id} (tenant {app.tenant_key})",
            f"  app secret:  {app.app_secret}",
            f"  encrypt key: {app.encrypt_key}",
            f"  verification token: {app.verification_token}",
        ]
    users = ", ".join(f"{u.open_id} ({u.name}, {u.tenant_key})" for u in state.users.values())
    chats = ", ".join(
        f"{c.chat_id} ({c.name}: {', '.join(c.members)})" for c in state.chats.values()
    )
    lines += [f"  users:       {users}", f"  chats:       {chats}"]
    lines.append(f"  OpenAPI domain for lark-oapi: {base}")
    return "\n".join(lines)
