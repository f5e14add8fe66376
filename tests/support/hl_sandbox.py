"""A real hlsandbox on a loopback port, and the unmodified hyperliquid SDK pointed at it.

The SDK is synchronous (requests): every call runs in a thread (`sdk(...)`), so the sandbox,
served by the test's own event loop, can answer it. The keys here are throwaway test keys,
derived from fixed strings; they hold nothing anywhere.

The fixtures are exposed by the conftest.py of each test directory that uses them.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import eth_account
import pytest
from eth_account.signers.local import LocalAccount
from hyperliquid.exchange import Exchange  # type: ignore[import-untyped]
from hyperliquid.info import Info  # type: ignore[import-untyped]
from hyperliquid.utils.signing import (  # type: ignore[import-untyped]
    order_request_to_order_wire,
    order_wires_to_order_action,
    sign_l1_action,
)
from hyperliquid.utils.types import Cloid  # type: ignore[import-untyped]

from hlsandbox.testing import RunningSandbox, start
from tests.support.processes import free_port

T = TypeVar("T")
FUNDS = "100000"


def throwaway_key(label: str) -> LocalAccount:
    """A test key derived from `label`: deterministic, never funded outside the sandbox."""
    account: LocalAccount = eth_account.Account.from_key(
        "0x" + hashlib.sha256(f"hlsandbox throwaway {label}".encode()).hexdigest()
    )
    return account


@dataclass
class HlWallets:
    """A funded account and the agent wallet approved to sign for it."""

    account: LocalAccount
    agent: LocalAccount

    @property
    def address(self) -> str:
        return str(self.account.address)


async def sdk(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking SDK call off the event loop that serves the sandbox."""
    return await asyncio.to_thread(call, *args, **kwargs)


async def exchange_for(
    sandbox: RunningSandbox, wallets: HlWallets, http_timeout_s: float | None = 30.0
) -> Any:
    """`Exchange` signing with the agent for the account (it queries meta at construction)."""
    return await sdk(
        Exchange,
        wallets.agent,
        sandbox.base_url,
        account_address=wallets.address,
        timeout=http_timeout_s,
    )


async def info_for(sandbox: RunningSandbox) -> Any:
    return await sdk(Info, sandbox.base_url, True, timeout=30.0)


@pytest.fixture
async def hl_sandbox() -> AsyncIterator[RunningSandbox]:
    running = await start(free_port())
    try:
        yield running
    finally:
        await running.stop()


@pytest.fixture
async def hl_wallets(hl_sandbox: RunningSandbox) -> HlWallets:
    wallets = HlWallets(throwaway_key("account"), throwaway_key("agent"))
    await hl_sandbox.add_account(wallets.address, FUNDS)
    await hl_sandbox.approve_agent(wallets.address, wallets.agent.address)
    return wallets


def order_action(
    asset: int,
    is_buy: bool,
    sz: float,
    px: float,
    cloid: str | None = None,
    tif: str = "Gtc",
) -> dict[str, Any]:
    """An `order` action built with the SDK's own wire helpers, as an adapter that signs
    itself (to know its nonce) builds it."""
    request: dict[str, Any] = {
        "coin": "",
        "is_buy": is_buy,
        "sz": sz,
        "limit_px": px,
        "order_type": {"limit": {"tif": tif}},
        "reduce_only": False,
    }
    if cloid is not None:
        request["cloid"] = Cloid.from_str(cloid)
    action: dict[str, Any] = order_wires_to_order_action(
        [order_request_to_order_wire(request, asset)]
    )
    return action


def signed_payload(
    wallet: LocalAccount,
    action: dict[str, Any],
    nonce: int,
    expires_after: int | None = None,
) -> dict[str, Any]:
    """The /exchange body the SDK would post, signed for testnet (as against any non-mainnet URL)."""
    signature = sign_l1_action(wallet, action, None, nonce, expires_after, False)
    return {
        "action": action,
        "nonce": nonce,
        "signature": signature,
        "vaultAddress": None,
        "expiresAfter": expires_after,
    }
