"""Sign in with Lark on the dashboard, in tests: the bot's app (sign-in on, the sandbox as
Lark, a dashboard token so a loopback client is not let in by itself) on a loopback port, and
a browser's steps through the flow with a cookie jar of its own.

The consent page is read and posted as tests/support/lark_oauth.py does; redirects are read
from `Location`, never followed, so each step's answer can be looked at.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Protocol

import aiohttp
from aiohttp.test_utils import TestServer
from pydantic import SecretStr

from bot.api.app import create_app
from bot.app.devstack import SandboxApp, register_sign_in, sandbox_config
from bot.config import Config
from kernel.timeutil import utc_now
from store import Store
from tests.support.lark_oauth import decide, open_page
from tests.support.processes import free_port
from tests.support.sandbox import Sandbox

DASHBOARD_TOKEN = "dashboard-token-for-tests"


class Clock:
    """The store's clock, moved by hand: session lifetimes without sleeping."""

    def __init__(self) -> None:
        self.now = utc_now()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class SignInBot:
    url: str
    config: Config
    sandbox: Sandbox
    clock: Clock

    def browser(self) -> Browser:
        return Browser(self)


def sandbox_app(sandbox: Sandbox) -> SandboxApp:
    app = sandbox.app
    return SandboxApp(
        sandbox.base_url,
        app.app_id,
        app.app_secret,
        app.encrypt_key,
        app.verification_token,
        app.tenant_key,
    )


def config_for(sandbox: Sandbox, data_dir: Path, port: int) -> Config:
    """The `run --sandbox` profile (sign-in on, the sandbox as Lark) with a dashboard token."""
    config = sandbox_config(data_dir, port, sandbox_app(sandbox), "ws")
    return dataclasses.replace(config, dashboard_token=SecretStr(DASHBOARD_TOKEN))


@asynccontextmanager
async def sign_in_bot(
    sandbox: Sandbox, store: Store, data_dir: Path, public_url: str | None = None
) -> AsyncIterator[SignInBot]:
    """The bot's HTTP app with sign-in on, its redirect URL registered with the sandbox
    (`public_url`: where it says it is reached, e.g. behind an https proxy)."""
    port = free_port()
    config = config_for(sandbox, data_dir, port)
    if public_url is not None:
        web = config.settings.web.model_copy(update={"public_url": public_url})
        settings = config.settings.model_copy(update={"web": web})
        config = dataclasses.replace(config, settings=settings)
    clock = Clock()
    store.clock = clock
    server = TestServer(create_app(config, store), host="127.0.0.1", port=port)
    await server.start_server()
    try:
        bot = SignInBot(f"http://127.0.0.1:{port}", config, sandbox, clock)
        await register_sign_in(sandbox_app(sandbox), config)
        yield bot
    finally:
        await server.close()


@dataclass
class Answer:
    status: int
    location: str
    html: str
    set_cookies: SimpleCookie


class Site(Protocol):
    """Where a browser signs in: the bot's URL and the sandbox that plays Lark."""

    @property
    def url(self) -> str: ...

    @property
    def sandbox(self) -> Sandbox: ...


class Browser:
    """One browser: its own cookies (loopback addresses allowed, as browsers do); `address`:
    the loopback address it connects from (127.0.0.2 is another client than 127.0.0.1)."""

    def __init__(self, bot: Site, address: str | None = None) -> None:
        self.bot = bot
        connector = aiohttp.TCPConnector(local_addr=(address, 0)) if address else None
        self.http = aiohttp.ClientSession(
            cookie_jar=aiohttp.CookieJar(unsafe=True), connector=connector
        )

    async def close(self) -> None:
        await self.http.close()

    async def request(self, method: str, url: str, data: dict[str, str] | None = None) -> Answer:
        if url.startswith("/"):
            url = self.bot.url + url
        async with self.http.request(method, url, data=data, allow_redirects=False) as response:
            cookies: SimpleCookie = SimpleCookie()
            for header in response.headers.getall("Set-Cookie", []):
                cookies.load(header)
            return Answer(
                response.status,
                response.headers.get("Location", ""),
                await response.text(),
                cookies,
            )

    async def get(self, url: str) -> Answer:
        return await self.request("GET", url)

    async def start(self) -> str:
        """Press "Sign in with Lark": the authorize URL the bot sends the browser to."""
        sent = await self.get("/ops/auth/sign-in")
        assert sent.status == 302, sent.html
        return sent.location

    async def approve(self, authorize_url: str, user: str) -> str:
        """Pick `user` on the sandbox's consent page and approve: the callback URL."""
        page = await open_page(self.bot.sandbox, authorize_url)
        sent = await decide(page, self.bot.sandbox, user)
        assert sent.status == 302 and sent.location, sent.html
        return sent.location

    async def sign_in(self, user: str) -> Answer:
        """The whole flow; the bot's answer to the callback."""
        return await self.get(await self.approve(await self.start(), user))

    def cookie(self, name: str) -> str | None:
        for each in self.http.cookie_jar:
            if each.key == name:
                return each.value
        return None


@asynccontextmanager
async def browsing(bot: Site, address: str | None = None) -> AsyncIterator[Browser]:
    browser = Browser(bot, address)
    try:
        yield browser
    finally:
        await browser.close()
