"""Problems of the finance accounts' venue settings ([domains.finance]), found at start and by
`countersign config check`: an account on a venue countersign does not know, a Hyperliquid
account without its address, its agent key's variable or the venue's table, and the
Hyperliquid-only fields set on a simulated account. The agent key's variable is only named
here, never read: opening the venue refuses a missing key, in one line naming it."""

from __future__ import annotations

from kernel.problems import FieldProblem
from workers.domains.finance.settings import FinanceSettings
from workers.domains.finance.venues.opening import HYPERLIQUID, KNOWN_VENUES
from workers.domains.finance.venues.opening import SIM as SIM_VENUE


def account_problems(settings: FinanceSettings) -> list[FieldProblem]:
    problems: list[FieldProblem] = []
    for i, account in enumerate(settings.accounts):
        where = f"accounts[{i}]"
        if account.venue not in KNOWN_VENUES:
            problems.append(
                FieldProblem(
                    f"{where}.venue",
                    f"account {account.name!r} names venue {account.venue!r}, which countersign "
                    "does not know",
                    f"use one of {', '.join(KNOWN_VENUES)}",
                )
            )
        elif account.venue == SIM_VENUE:
            for name in ("address", "agent_key_env"):
                if getattr(account, name) is not None:
                    problems.append(
                        FieldProblem(
                            f"{where}.{name}",
                            f"account {account.name!r} is on the simulated venue, which takes "
                            f"no {name}",
                            f'remove {name}, or set venue = "{HYPERLIQUID}"',
                        )
                    )
        else:
            problems += _hyperliquid_problems(settings, i)
    on_hyperliquid = [a.name for a in settings.accounts if a.venue == HYPERLIQUID]
    if on_hyperliquid and settings.hyperliquid is None:
        problems.append(
            FieldProblem(
                "hyperliquid",
                f"account(s) {', '.join(on_hyperliquid)} are on venue {HYPERLIQUID!r}, whose "
                "table [domains.finance.hyperliquid] is missing",
                'add [domains.finance.hyperliquid] with network = "emulator" (or "testnet")',
            )
        )
    return problems


def _hyperliquid_problems(settings: FinanceSettings, i: int) -> list[FieldProblem]:
    account = settings.accounts[i]
    where = f"accounts[{i}]"
    problems: list[FieldProblem] = []
    if account.address is None:
        problems.append(
            FieldProblem(
                f"{where}.address",
                f"Hyperliquid account {account.name!r} has no address",
                'set address = "0x…": the master account the agent wallet is approved for '
                "(not a subaccount: orders are never routed to one)",
            )
        )
    if account.agent_key_env is None:
        problems.append(
            FieldProblem(
                f"{where}.agent_key_env",
                f"Hyperliquid account {account.name!r} names no variable for its agent key",
                'set agent_key_env = "NAME" and export NAME=<the agent wallet\'s private key> '
                "(the key itself never goes in the config)",
            )
        )
    return problems
