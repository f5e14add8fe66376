"""`countersign venue profile` and `countersign venue qualify`: what a venue declares, and
whether an account on it can carry what countersign would ask of it.

Both are read only. `profile` opens nothing (each venue declares its profile without I/O or
a key). `qualify` opens the venue the account names exactly as the bot would
(`venues.opening.open_venues`, the simulated venue's file never created), reads its
capabilities, a fresh observation and the account state, and never submits, cancels or
changes anything: the checks themselves are pure (`venue_checks`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.cli.common import environ_for, settings_and_source
from bot.cli.errors import EXIT_API, EXIT_USAGE, CommandError
from store import World

if TYPE_CHECKING:
    from bot.cli.venue_checks import Check
    from workers.domains.finance.settings import FinanceAccount, FinanceSettings
    from workers.domains.finance.venues.contract import Profile

FINANCE_KIND = "finance.order"


def finance_settings(args: argparse.Namespace) -> tuple[FinanceSettings, Mapping[str, str]]:
    """The [domains.finance] table of the config the bot would run with, and where its
    secrets are read (the dev profile's own, or the environment)."""
    from workers.domains.finance.settings import FinanceSettings

    settings, dev = settings_and_source(args)
    finance = settings.domains.for_kind(FINANCE_KIND)
    if not isinstance(finance, FinanceSettings):  # the registry's model for the kind
        raise CommandError(f"{FINANCE_KIND} is not configured by its own settings here")
    return finance, environ_for(dev)


def world_of(name: str, finance: FinanceSettings) -> World | None:
    """The world a venue's orders are from under this config (None: not configured)."""
    from workers.domains.finance.schema import NETWORK_WORLDS

    if name == "sim":
        return World.SIMULATED
    if name == "hyperliquid" and finance.hyperliquid is not None:
        return NETWORK_WORLDS[finance.hyperliquid.network]
    return None


def where(name: str, finance: FinanceSettings) -> str:
    """Where the venue's orders go, in words (the URL a real venue is reached at)."""
    if name == "hyperliquid" and finance.hyperliquid is not None:
        table = finance.hyperliquid
        return f"network {table.network}, {table.base_url()}"
    if name == "sim":
        return f"its own file {finance.venue_path}"
    return "not configured"


def tag(world: World | None) -> str:
    return world.value.upper() if world is not None else "NOT CONFIGURED"


# -- venue profile ---------------------------------------------------------------------------


def cmd_venue_profile(args: argparse.Namespace) -> int:
    from workers.domains.finance.venues.opening import declared_profile, venue_names

    finance, _ = finance_settings(args)
    names = [args.venue] if args.venue else venue_names(finance)
    profiles: list[Profile] = []
    for name in names:
        try:
            profiles.append(declared_profile(name, finance))
        except ValueError as error:
            raise CommandError(str(error), EXIT_USAGE) from None
        except ImportError as error:  # the venue's optional SDK is not installed
            raise CommandError(f"venue {name!r}: {error}") from None
    if args.json:
        described = [
            {
                **profile.as_json(),
                "world": (w.value if (w := world_of(profile.name, finance)) else None),
                "where": where(profile.name, finance),
            }
            for profile in profiles
        ]
        print(json.dumps(described, indent=2))
        return 0
    for number, profile in enumerate(profiles):
        if number:
            print()
        print(profile_text(profile, world_of(profile.name, finance), where(profile.name, finance)))
    return 0


def profile_text(profile: Profile, world: World | None, place: str) -> str:
    data = profile.as_json()
    lines = [f"{profile.name} · {tag(world)} ({place}) · executor {data['executor']}"]
    for key in (
        "products",
        "order_types",
        "time_in_force",
        "protective",
        "reduce_only",
        "account_modes",
        "market_as_bounded_limit",
        "precision",
        "minimum",
        "fees",
        "authentication",
        "client_ids",
        "reconciliation",
    ):
        value = data.get(key)
        if value is None:
            continue
        shown = ", ".join(value) if isinstance(value, list) else value
        if isinstance(value, bool):
            shown = "yes" if value else "no"
        lines.append(f"  {key.replace('_', ' ')}: {shown}")
    for note in profile.notes:
        lines.append(f"  - {note}")
    return "\n".join(lines)


# -- venue qualify ---------------------------------------------------------------------------


def cmd_venue_qualify(args: argparse.Namespace) -> int:
    finance, environ = finance_settings(args)
    account = finance.account(args.account)
    if account is None:
        known = ", ".join(a.name for a in finance.accounts) or "none configured"
        raise CommandError(
            f"no finance account {args.account!r}: use one of {known} "
            "([[domains.finance.accounts]] in the config)",
            EXIT_USAGE,
        )
    world = world_of(account.venue, finance)
    checks = asyncio.run(_read_and_check(account, finance, environ))
    ok = all(check.ok for check in checks)
    if args.json:
        print(
            json.dumps(
                {
                    "account": account.name,
                    "venue": account.venue,
                    "world": world.value if world is not None else None,
                    "where": where(account.venue, finance),
                    "ok": ok,
                    "checks": [check.as_json() for check in checks],
                },
                indent=2,
            )
        )
    else:
        print(
            f"{account.name} on {account.venue} · {tag(world)} ({where(account.venue, finance)})"
            " — read only: nothing was sent"
        )
        for check in checks:
            print(check.line())
        failed = sum(1 for check in checks if not check.ok)
        print(
            f"all {len(checks)} checks ok"
            if ok
            else f"{failed} of {len(checks)} checks say NO: fix them and qualify again"
        )
    return 0 if ok else EXIT_API


async def _read_and_check(
    account: FinanceAccount, finance: FinanceSettings, environ: Mapping[str, str]
) -> list[Check]:
    from bot.cli.venue_checks import Check, qualify
    from workers.domains.finance.sim.errors import VenueError
    from workers.domains.finance.venues.contract import VenueAmbiguous, VenueUnavailable
    from workers.domains.finance.venues.opening import open_venues

    try:
        venues = await open_venues(
            finance, environ, lambda: datetime.now(UTC), names=[account.venue], create=False
        )
    except FileNotFoundError:
        raise CommandError(
            f"the simulated venue has no state at {finance.venue_path} yet: it is created "
            "when the bot first runs (countersign run), then qualify again"
        ) from None
    except (ValueError, ImportError, RuntimeError) as error:  # config, key or SDK: one line
        raise CommandError(f"cannot open venue {account.venue!r}: {error}") from None
    venue = venues[account.venue]
    try:
        try:
            capabilities = await venue.capabilities()
            observation = await venue.observe(account.name)
            state = await venue.account_state(account.name)
        except (VenueUnavailable, VenueAmbiguous, VenueError, OSError, TimeoutError) as error:
            # a read the venue did not answer is the answer; anything else is a bug: raised
            return [
                Check(
                    "read",
                    False,
                    f"the venue did not answer: {_said(error)}",
                    "check that the venue is reachable (network, URL) and the account's "
                    "address, then qualify again",
                )
            ]
        return qualify(account, venue.profile, capabilities, observation, state)
    finally:
        await venue.close()


def _said(error: Exception) -> str:
    """An error in one line: its class, and its message if it has one."""
    message = " ".join(str(error).split())
    name = type(error).__name__
    return f"{name}: {message}" if message else name
