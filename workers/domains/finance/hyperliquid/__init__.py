"""The Hyperliquid venue: the `Venue` contract through the official `hyperliquid-python-sdk`.

`open_venue(settings, accounts, environ, clock)` opens it for the accounts that name it.
Importing this package (and its declared `PROFILE`) needs nothing beyond countersign;
opening the venue needs the SDK (`pip install 'countersign[hyperliquid]'`), and says so in
one line (`HyperliquidUnavailable`, a RuntimeError) when it is missing.

Modules: `precision` (price and size rules), `wire` (orders as the SDK's wires), `signer`
(agent key, nonces, signing), `transport` (the SDK's API in a thread pool; `economy` its
weight budget and read ages, `sharing` identical reads shared), `observing` (the
observation, from shared reads), `answers`
(answers read into states), `orders` (order reads), `reads` (account reads), `memory`,
`profile`, `venue` (the contract).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from workers.domains.finance.hyperliquid.profile import PROFILE

if TYPE_CHECKING:
    from workers.domains.finance.settings import FinanceAccount, HyperliquidSettings
    from workers.domains.finance.venues.contract import Venue

VENUE_NAME = "hyperliquid"
MISSING_SDK = (
    "the Hyperliquid venue needs the official SDK: install countersign[hyperliquid] "
    "(pip install 'countersign[hyperliquid]')"
)


class HyperliquidUnavailable(RuntimeError):
    """The venue cannot be opened as configured (the message is one line, with the fix)."""


async def open_venue(
    settings: HyperliquidSettings | None,
    accounts: Sequence[FinanceAccount],
    environ: Mapping[str, str],
    clock: Callable[[], datetime],
) -> Venue:
    """The Hyperliquid venue for the `accounts` whose venue is "hyperliquid".

    Each account's agent key is read from the environment variable it names; the key is
    wrapped at once and never logged, repr'd or returned. Mainnet opens only with
    `allow_mainnet` (the settings refuse it otherwise; checked here again).
    """
    if importlib.util.find_spec("hyperliquid") is None:
        raise HyperliquidUnavailable(MISSING_SDK)
    from workers.domains.finance.hyperliquid.profile import WORLDS
    from workers.domains.finance.hyperliquid.signer import AgentKey
    from workers.domains.finance.hyperliquid.transport import Transport
    from workers.domains.finance.hyperliquid.venue import HlAccount, HyperliquidVenue

    if settings is None:
        raise HyperliquidUnavailable(
            'an account names venue "hyperliquid" but [domains.finance.hyperliquid] is not '
            'configured; add the table (network = "emulator" for the local one)'
        )
    if settings.network == "mainnet" and not settings.allow_mainnet:
        raise HyperliquidUnavailable(
            'network "mainnet" trades real money; set allow_mainnet = true to switch it on'
        )
    opened: dict[str, HlAccount] = {}
    for account in accounts:
        if account.venue != VENUE_NAME:
            continue
        if account.address is None or account.agent_key_env is None:
            raise HyperliquidUnavailable(
                f"account {account.name!r} on hyperliquid needs address and agent_key_env"
            )
        secret = environ.get(account.agent_key_env, "")
        if not secret.strip():
            raise HyperliquidUnavailable(
                f"environment variable {account.agent_key_env} (the agent key of account "
                f"{account.name!r}) is not set; export it with the agent wallet's private key"
            )
        try:
            key = AgentKey(secret)
        except ValueError as error:
            raise HyperliquidUnavailable(
                f"environment variable {account.agent_key_env} (account {account.name!r}): {error}"
            ) from None
        opened[account.name] = HlAccount(account.name, account.address, key)
    # the weight this process allows itself per minute (Hyperliquid's per-IP limit unless
    # the settings raise it for an emulator whose limit is raised)
    weight = settings.ip_weight_per_min
    transport = Transport(settings.base_url(), settings.request_timeout_s, weight)
    return HyperliquidVenue(settings, opened, transport, clock, WORLDS[settings.network])


__all__ = ["MISSING_SDK", "PROFILE", "VENUE_NAME", "HyperliquidUnavailable", "open_venue"]
