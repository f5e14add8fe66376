"""The one place the bot meets the local Lark (`larksandbox`): `countersign sandbox`, and
`countersign run --sandbox` / `demo` wired to a sandbox (in-process or running); and the
local Hyperliquid (`hlsandbox`) for `demo --venue hyperliquid` / `run --dev --venue
hyperliquid`.

Nothing else in bot/, cards/, store/ or workers/ imports `larksandbox` or `hlsandbox`
(tests/test_layout.py holds that); they are imported here only when a dev command runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import aiohttp
from aiohttp import web

from bot.app.heap import startup_heap_frozen
from bot.config import Config, DomainSettings, resolve, secrets_environ
from bot.config.profiles import DEV_ENVIRON, dev_settings
from bot.config.settings import ApprovalRule
from workers.domains.base import DemoSetup
from workers.domains.execution import Background
from workers.domains.finance.demo import (
    HL_ACCOUNT,
    HL_AGENT_KEY_ENV,
    HL_LEVERAGE,
    RESTING_MARK,
    RESTING_SHOWN_S,
    hyperliquid_setup,
    hyperliquid_table,
)

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


DEFAULT_HL_PORT = 3001  # `countersign hl-sandbox`'s
HL_COIN = "BTC"  # the demo's instrument BTC-PERP on Hyperliquid
# the resting order fills this much per match event (0.010: 0.004, 0.004, 0.002), one
# event per HL_TICK_S, slower than the adapter reads it, so the card shows each part
HL_PART = "0.004"
HL_TICK_S = 2.0
HL_LOOK_S = 0.2


@dataclass(frozen=True)
class EmulatedHyperliquid:
    """The local Hyperliquid in this process: a funded account and its approved agent."""

    base_url: str
    account: str  # the master account's address
    agent: str  # the agent wallet's address
    agent_key: str = field(repr=False)  # a throwaway key; to the bot through the env only

    def banner(self) -> str:
        return "\n".join(
            [
                f"hl-sandbox (a local Hyperliquid, world EMULATOR) on {self.base_url}",
                f"  account {self.account} (funded), agent {self.agent} (approved)",
                f"  finance account {HL_ACCOUNT!r}: venue hyperliquid, network emulator, "
                f"leverage {HL_LEVERAGE}",
                "  throwaway test keys: they hold nothing and never touch a real network;",
                f"  the agent key goes to the bot in ${HL_AGENT_KEY_ENV} (not printed)",
            ]
        )


class HlPortUnavailable(RuntimeError):
    """The local Hyperliquid cannot listen on the port asked for (--hl-port)."""


@contextlib.asynccontextmanager
async def emulated_hyperliquid(host: str, port: int) -> AsyncIterator[EmulatedHyperliquid]:
    """hlsandbox on host:port on this loop, with the demo universe, a funded account and an
    approved agent (throwaway keys, as `countersign hl-sandbox --demo` makes them)."""
    from hlsandbox.app import build_app
    from hlsandbox.serve import DEMO_USDC, throwaway
    from hlsandbox.state import Venue
    from hlsandbox.universe import demo_seed

    venue = Venue(demo_seed())
    account, agent = throwaway("account"), throwaway("agent")
    venue.add_account(account.address, DEMO_USDC)
    venue.approve_agent(account.address, agent.address)
    # no access log: the adapter reads the venue every poll, which would bury the bot's log
    runner = web.AppRunner(build_app(venue), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as error:
            raise HlPortUnavailable(f"--hl-port {port}: {error}; name a free port") from None
        base_url = f"http://{host}:{port}"
        yield EmulatedHyperliquid(base_url, account.address, agent.address, agent.key)
    finally:
        await runner.cleanup()


def emulator_domains(emulated: EmulatedHyperliquid, workdir: Path) -> dict[str, DemoSetup]:
    """The demo's finance story on the emulator (by config table), with its hand on the mark."""
    hand = emulator_hand(emulated.base_url, emulated.account)
    setup = hyperliquid_setup(
        workdir, emulated.base_url, emulated.account, emulated.agent_key, hand
    )
    return {"finance": setup}


def with_emulated_finance(
    config: Config, emulated: EmulatedHyperliquid, data_dir: Path
) -> tuple[Config, dict[str, str]]:
    """`config` trading on the emulator (its finance table replaced), and the environment
    its table names (the agent key), for this process and the worker it starts."""
    tables = config.settings.domains.model_dump(mode="json", exclude_none=True)
    # the profile's own accounts stay (examples/order.json still files on sim-main)
    earlier = tables.get("finance", {}).get("accounts", [])
    tables["finance"] = hyperliquid_table(data_dir, emulated.base_url, emulated.account, earlier)
    environ = {HL_AGENT_KEY_ENV: emulated.agent_key}
    return with_domains(config, tables, environ), environ


def with_domains(
    config: Config,
    tables: Mapping[str, Any],
    environ: Mapping[str, str],
    approval_rules: Sequence[Mapping[str, object]] = (),
) -> Config:
    """`config` with these [domains] tables and these [[approval_rules]] added, resolved
    again with the secrets the tables name (`environ`), so the worker process is handed
    them too."""
    rules = [ApprovalRule.model_validate(dict(rule)) for rule in approval_rules]
    settings = config.settings.model_copy(
        update={
            "domains": DomainSettings.model_validate(dict(tables)),
            "approval_rules": [*config.settings.approval_rules, *rules],
        }
    )
    return resolve(settings, {**secrets_environ(config), **environ})


def emulator_hand(base_url: str, account: str) -> Background:
    """Once the demo's order rests on the emulator (long enough for its card to say so),
    move the mark through its limit with thin liquidity and tick until it has filled in
    parts: the emulator's matching moves only when told (control API)."""

    async def hand(stop: asyncio.Event) -> None:
        from hlsandbox.testing import HlSandboxClient

        sandbox = HlSandboxClient(base_url)
        try:
            while not await stopped(stop, HL_LOOK_S):
                if await resting(sandbox, account):
                    break
            else:
                return
            if await stopped(stop, RESTING_SHOWN_S):
                return
            await sandbox.set_liquidity(HL_COIN, HL_PART)
            await sandbox.set_mark(HL_COIN, RESTING_MARK)
            while await resting(sandbox, account) and not await stopped(stop, HL_TICK_S):
                await sandbox.tick()
            await sandbox.set_liquidity(HL_COIN, None)
        finally:
            await sandbox.close()

    return hand


async def resting(sandbox: Any, account: str) -> bool:
    """Whether the account has a plain order resting (a waiting stop-loss is no such order)."""
    orders = await sandbox.call("GET", "/orders", {"user": account})
    return any(o["status"] == "open" and not o["order"]["isTrigger"] for o in orders)


async def stopped(stop: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds`; True if `stop` was set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()
