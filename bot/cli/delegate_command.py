"""`countersign delegate grant|revoke|list`: an admin hands an operator's approval right in an
audience to another person for a bounded window, ends it, or lists what is in force. The
config says whether the audience allows it and for how long (bot/config/delegation.py);
every grant and revocation is an audit entry (store/delegation/ledger.py)."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from bot.cli.common import settings_of, with_store
from bot.cli.errors import EXIT_USAGE, CommandError
from bot.config.delegation import grant_problems
from kernel.timeutil import given_utc, iso_utc, utc_now

if TYPE_CHECKING:  # the store loads only when a command runs (bot/cli/lazy.py)
    from store import Delegation, Store

ADMIN = "admin:cli"


def _until(args: argparse.Namespace, now: datetime) -> datetime:
    if (args.until is None) == (args.days is None):
        raise CommandError(
            "delegate grant: give --until TIME or --days N (one of them)", EXIT_USAGE
        )
    if args.days is not None:
        return now + timedelta(days=args.days)
    try:
        return given_utc(args.until)
    except ValueError as error:
        raise CommandError(
            f"delegate grant: --until {args.until!r} is not an ISO-8601 date or time "
            "(e.g. 2026-12-10 or 2026-12-10T18:00+08:00)",
            EXIT_USAGE,
        ) from error


def describe(delegation: Delegation) -> str:
    state = "revoked" if delegation.revoked_at is not None else "in force"
    return (
        f"{delegation.id}  {delegation.audience}: {delegation.delegate} for "
        f"{delegation.delegator} until {iso_utc(delegation.ends_at)} ({state}; granted by "
        f"{delegation.created_by})"
    )


def cmd_delegate_grant(args: argparse.Namespace) -> int:
    from store import DelegationLedger

    settings = settings_of(args)
    now = utc_now()
    ends = _until(args, now)
    problems = grant_problems(settings, args.audience, args.giver, args.to, ends, now)
    if problems:
        raise CommandError(
            "delegate grant: " + "; ".join(problem.line() for problem in problems), EXIT_USAGE
        )

    async def granted(store: Store) -> Delegation:
        ledger = DelegationLedger(store)
        return await ledger.grant(args.audience, args.giver, args.to, ends_at=ends, by=ADMIN)

    print("granted " + describe(with_store(args, granted)))
    return 0


def cmd_delegate_revoke(args: argparse.Namespace) -> int:
    from store import DelegationLedger

    async def revoked(store: Store) -> Delegation | None:
        return await DelegationLedger(store).revoke(args.id, ADMIN)

    done = with_store(args, revoked)
    if done is None:
        raise CommandError(
            f"delegate revoke: no delegation {args.id!r} in force (unknown, revoked or ended); "
            "`countersign delegate list --all` shows them",
        )
    print("revoked " + describe(done))
    return 0


def cmd_delegate_list(args: argparse.Namespace) -> int:
    from store import DelegationLedger

    async def listed(store: Store) -> list[Delegation]:
        return await DelegationLedger(store).listed(args.audience, ended=args.all)

    found = with_store(args, listed)
    if not found:
        print("no delegations" + ("" if args.all else " in force"))
    for delegation in found:
        print(describe(delegation))
    return 0
