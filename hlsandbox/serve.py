"""Serve the sandbox until stopped (`countersign hl-sandbox`), with the demo account if asked.

The demo account and agent keys are throwaway test keys derived from fixed strings: they are
printed so a person can point the SDK (or countersign's config) at the sandbox; they hold
nothing anywhere and must never be used on a real network.
"""

from __future__ import annotations

import asyncio
import hashlib
import signal
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import eth_account
from aiohttp import web

from hlsandbox.app import build_app
from hlsandbox.state import Venue
from hlsandbox.universe import Seed, demo_seed

DEMO_USDC = Decimal(100000)


@dataclass(frozen=True)
class DemoWallet:
    address: str
    key: str


def throwaway(label: str) -> DemoWallet:
    key = "0x" + hashlib.sha256(f"hlsandbox demo {label}".encode()).hexdigest()
    return DemoWallet(str(eth_account.Account.from_key(key).address), key)


def banner(host: str, port: int, venue: Venue, demo: tuple[DemoWallet, DemoWallet] | None) -> str:
    url = f"http://{host}:{port}"
    marks = ", ".join(f"{coin} {px}" for coin, px in venue.marks.items())
    lines = [
        f"hl-sandbox: a local Hyperliquid at {url} (POST /info, POST /exchange)",
        f"  control API: {url}/hlsandbox/api/state (hlsandbox/README.md)",
        f"  universe: {marks}",
    ]
    if demo is not None:
        account, agent = demo
        lines += [
            f"  demo account: {account.address} ({DEMO_USDC} USDC)",
            f"  demo agent:   {agent.address} (approved for the account)",
            f"  agent key:    {agent.key}",
            "  (a throwaway test key: it holds nothing and must never be used on a real network)",
            f"  SDK: Exchange(Account.from_key(<agent key>), {url!r}, "
            f"account_address={account.address!r})",
        ]
    return "\n".join(lines)


async def serve(
    host: str,
    port: int,
    *,
    seed: Seed | None = None,
    demo: bool = False,
    say: Callable[[str], None] | None = None,
) -> None:
    venue = Venue(seed or demo_seed())
    wallets = None
    if demo:
        wallets = (throwaway("account"), throwaway("agent"))
        venue.add_account(wallets[0].address, DEMO_USDC)
        venue.approve_agent(wallets[0].address, wallets[1].address)
    runner = web.AppRunner(build_app(venue), shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        # flushed: whoever reads a piped stdout learns the sandbox is up
        (say or (lambda text: print(text, flush=True)))(banner(host, port, venue, wallets))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()
