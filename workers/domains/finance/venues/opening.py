"""Which venues a finance configuration names, and opening them: one function for the bot's
runner and for the read-only tools (`venue qualify`, `venue profile`), so both open exactly
the same venues.

An account names its venue. "sim" is the simulated venue in its own file; "hyperliquid" is
opened by its adapter (`finance.hyperliquid.open_venue`), imported only here and only when an
account names it, so an install without the Hyperliquid SDK never imports it. Any other name
is a config problem (`FinanceDomain.config_problems`), never a fallback to another venue.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from workers.domains.finance.settings import FinanceSettings
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.profile import PROFILE as SIM_PROFILE
from workers.domains.finance.sim.profile import VENUE_NAME
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.contract import Profile, Venue

log = logging.getLogger("countersign.workers")

SIM: Final = VENUE_NAME
HYPERLIQUID: Final = "hyperliquid"
KNOWN_VENUES: Final = (SIM, HYPERLIQUID)
Clock = Callable[[], datetime]


def venue_names(settings: FinanceSettings) -> list[str]:
    """The venues the accounts name, in first-named order; the simulated venue when no
    account is configured (its default account, as before there was more than one)."""
    names = list(dict.fromkeys(account.venue for account in settings.accounts))
    return names or [SIM]


def declared_profile(name: str, settings: FinanceSettings) -> Profile:
    """What venue `name` declares, without opening it (no I/O, no key)."""
    if name == SIM:
        return SIM_PROFILE
    if name == HYPERLIQUID:
        profile: Profile = _hyperliquid_package().PROFILE
        return profile
    raise ValueError(f"no venue named {name!r}; countersign knows {', '.join(KNOWN_VENUES)}")


async def open_sim(
    settings: FinanceSettings, environ: Mapping[str, str], clock: Clock, *, create: bool = True
) -> Venue:
    """The simulated venue at `settings.venue_path` (created if new unless `create` is
    False), with the faults the environment (COUNTERSIGN_SIM_FAULTS) or the settings ask
    for, its accounts, and each account's budget as the balance it reports."""
    path = Path(settings.venue_path)
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    faults = Faults.from_env(environ, default=settings.sim_faults)
    if faults.active:
        log.info("simulated venue faults on: %s", faults)  # asked for: no cause for alarm
    accounts = [account for account in settings.accounts if account.venue == SIM]
    venue = await SimVenue.open(
        path,
        accounts=[account.name for account in accounts] or None,
        faults=faults,
        clock=clock,
        create=create,
    )
    venue.funds = {a.name: (a.currency, Decimal(a.budget)) for a in accounts}
    return venue


async def open_venues(
    settings: FinanceSettings,
    environ: Mapping[str, str],
    clock: Clock,
    *,
    names: Collection[str] | None = None,
    create: bool = True,
    absent_ok: bool = False,
) -> dict[str, Venue]:
    """Every venue the accounts name (or only `names`), opened; the caller closes each. A
    venue that fails to open closes the ones opened before it and raises (a missing agent
    key is one line naming its variable). `create=False`: the simulated venue's file is
    never created (read-only tools); with `absent_ok`, a simulated venue without one is left
    out (it holds no order to reconcile) instead of refused."""
    wanted = venue_names(settings) if names is None else list(names)
    opened: dict[str, Venue] = {}
    try:
        for name in wanted:
            if name == SIM and not create and absent_ok and not await _exists(settings):
                continue
            if name == SIM:
                opened[name] = await open_sim(settings, environ, clock, create=create)
            elif name == HYPERLIQUID:
                opened[name] = await _open_hyperliquid(settings, environ, clock)
            else:
                raise ValueError(
                    f"an account names venue {name!r}, which countersign does not know; "
                    f"use one of {', '.join(KNOWN_VENUES)}"
                )
    except BaseException:
        for venue in opened.values():
            await venue.close()
        raise
    return opened


async def _exists(settings: FinanceSettings) -> bool:
    return await asyncio.to_thread(Path(settings.venue_path).exists)


async def _open_hyperliquid(
    settings: FinanceSettings, environ: Mapping[str, str], clock: Clock
) -> Venue:
    if settings.hyperliquid is None:
        raise ValueError(
            "an account is on venue 'hyperliquid' but [domains.finance.hyperliquid] is not "
            'configured; add the table (network = "emulator" to start)'
        )
    accounts = [account for account in settings.accounts if account.venue == HYPERLIQUID]
    opened = await _hyperliquid_package().open_venue(settings.hyperliquid, accounts, environ, clock)
    if not isinstance(opened, Venue):
        raise TypeError(f"the Hyperliquid adapter opened a {type(opened).__name__}, not a Venue")
    return opened


def _hyperliquid_package() -> Any:
    """The adapter's package, imported only when an account names it: it imports the SDK
    (countersign[hyperliquid]), which a non-finance install does not have."""
    return importlib.import_module("workers.domains.finance.hyperliquid")
