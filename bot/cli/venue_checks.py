"""What `countersign venue qualify` concludes from an account's reads: one `Check` per line.

Pure: the command reads the venue (capabilities, a fresh observation, the account state) and
hands them here; nothing in this module talks to a venue or changes anything. Each check says
ok or NO, why, and for a NO what to change (in config, on the venue, or the account's funds).
countersign never changes leverage, margin mode or balances itself, so every fix for those is
made on the venue by a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, localcontext
from typing import Any

from workers.domains.finance.preflight import SUPPORTED_MODES, observed_exposure
from workers.domains.finance.settings import FinanceAccount
from workers.domains.finance.sim.decimals import plain, text
from workers.domains.finance.venues.contract import AccountState, Profile
from workers.domains.finance.venues.model import Capabilities, Instrument, Observation

# Comparisons of budgets, balances and margins: wide enough that no bounded amount rounds.
WIDE = Context(prec=80)
CENT = Decimal("0.01")
# what the exposure check assumes a margin account is in (a venue that reports none is fine)
CROSS = "cross"


@dataclass(frozen=True)
class Check:
    """One line of the answer: `subject` (what was checked), ok or not, why, and the fix."""

    subject: str
    ok: bool
    reason: str
    fix: str | None = None

    def line(self) -> str:
        mark = "ok" if self.ok else "NO"
        fix = f" — fix: {self.fix}" if self.fix and not self.ok else ""
        return f"{mark:<3}{self.subject}: {self.reason}{fix}"

    def as_json(self) -> dict[str, Any]:
        fix = None if self.ok else self.fix  # a fix is for what says NO
        return {"subject": self.subject, "ok": self.ok, "reason": self.reason, "fix": fix}


def up(value: Decimal) -> str:
    """An amount someone needs, for people: cents, rounded up (never understated)."""
    return text(plain(value.quantize(CENT, rounding=ROUND_CEILING)))


def down(value: Decimal) -> str:
    """An amount someone has, for people: cents, rounded down (never overstated)."""
    return text(plain(value.quantize(CENT, rounding=ROUND_FLOOR)))


def times(value: Decimal) -> str:
    return f"{text(plain(value))}x"


def smallest_order(instrument: Instrument) -> Decimal:
    """The smallest quantity the venue takes at the mark: whole lots, at least the minimum
    quantity, and at least the minimum notional at the mark."""
    quantity = instrument.min_qty
    if instrument.min_notional is not None:
        lots = (instrument.min_notional / (instrument.lot * instrument.mark)).to_integral_value(
            rounding=ROUND_CEILING
        )
        quantity = max(quantity, lots * instrument.lot)
    return quantity


def account_leverage(observation: Observation, state: AccountState) -> Mapping[str, Decimal]:
    """The leverage the account is set to per instrument, as either read reports it."""
    reported = {name: value for name, value in state.leverage.items() if value is not None}
    return {**reported, **observation.leverage}


def qualify(
    account: FinanceAccount,
    profile: Profile,
    capabilities: Capabilities,
    observation: Observation,
    state: AccountState,
) -> list[Check]:
    """Every check, in the order people read them: the account, its modes, money, each
    instrument, then what the venue itself reports (agent wallet, rate limits)."""
    with localcontext(WIDE):
        checks = [*_account(account, profile, capabilities, observation, state)]
        checks += _money(account, observation, state)
        checks += _instruments(account, observation, state)
        checks += [_fact(name, value, ok) for name, value, ok in state.facts]
        checks.append(
            Check(
                "open orders",
                True,
                f"{state.open_orders} on the venue (their notional counts against the budget)",
            )
        )
    return checks


def _account(
    account: FinanceAccount,
    profile: Profile,
    capabilities: Capabilities,
    observation: Observation,
    state: AccountState,
) -> list[Check]:
    held = account.name in capabilities.accounts
    checks = [
        Check(
            "account",
            held,
            f"{profile.name} holds {account.name}"
            if held
            else f"{profile.name} does not hold {account.name}",
            "configure the account's address on this venue (docs/venues.md)",
        ),
        Check(
            "observation",
            observation.complete,
            "the venue reported the whole account"
            if observation.complete
            else "part of the account could not be read; preflight would refuse every order",
            "try again once the venue answers fully (network, URL, rate limit)",
        ),
    ]
    mode = state.account_mode
    mode_ok = mode in profile.account_modes and mode in SUPPORTED_MODES
    checks.append(
        Check(
            "account mode",
            mode_ok,
            f"{mode}" + ("" if mode_ok else ", which countersign cannot trade"),
            f"switch the account to {', '.join(sorted(profile.account_modes))} on the venue",
        )
    )
    margin = state.margin_mode
    if margin is None:
        checks.append(Check("margin mode", True, "not a margin account"))
    else:
        checks.append(
            Check(
                "margin mode",
                margin == CROSS,
                margin
                if margin == CROSS
                else f"{margin}: countersign's exposure check assumes cross margin",
                "set the account to cross margin on the venue (countersign never changes it)",
            )
        )
    return checks


def _money(account: FinanceAccount, observation: Observation, state: AccountState) -> list[Check]:
    currency = account.currency
    balance = next((b for b in state.balances if b.currency == currency), None)
    if balance is None:
        reported = ", ".join(b.currency for b in state.balances) or "none"
        return [
            Check(
                "balance",
                False,
                f"the venue reports no {currency} balance (it reports: {reported})",
                f"fund the account in {currency}, or set the account's currency to the one "
                "it holds",
            )
        ]
    budget = Decimal(account.budget)  # a decimal string in config
    in_use = observed_exposure(observation)
    left = max(budget - in_use, Decimal(0))
    leverage = min(account_leverage(observation, state).values(), default=Decimal(1))
    carried = balance.available * leverage
    return [
        Check(
            "balance",
            balance.available > 0,
            f"{down(balance.available)} {currency} available of {down(balance.total)}",
            f"fund the account in {currency}",
        ),
        Check(
            "exposure",
            in_use < budget,
            f"{up(in_use)} {currency} in use (positions and open orders) of the budget "
            f"{account.budget}",
            "reduce positions or open orders on the venue, or raise the account's budget in config",
        ),
        Check(
            "budget",
            left <= carried,
            f"the {down(left)} {currency} left of the budget "
            + ("fits" if left <= carried else "is more than")
            + f" what {down(balance.available)} available carries at {times(leverage)} "
            f"({down(carried)})",
            f"lower the account's budget in config to at most {down(in_use + carried)}, or "
            "fund the account",
        ),
    ]


def _instruments(
    account: FinanceAccount, observation: Observation, state: AccountState
) -> list[Check]:
    balance = next((b for b in state.balances if b.currency == account.currency), None)
    available = balance.available if balance is not None else Decimal(0)
    left = max(Decimal(account.budget) - observed_exposure(observation), Decimal(0))
    leverages = account_leverage(observation, state)
    checks = []
    for name in sorted(observation.instruments):
        instrument = observation.instruments[name]
        checks.append(_instrument(instrument, leverages.get(name), available, left, account))
    if not checks:
        checks.append(
            Check("instruments", False, "the venue lists none", "check the venue's network")
        )
    return checks


def _instrument(
    instrument: Instrument,
    leverage: Decimal | None,
    available: Decimal,
    left: Decimal,
    account: FinanceAccount,
) -> Check:
    currency = account.currency
    subject = instrument.name
    maximum = instrument.max_leverage
    if leverage is not None and leverage > maximum:
        return Check(
            subject,
            False,
            f"leverage set to {times(leverage)}, above the venue's maximum {times(maximum)}",
            f"set it to at most {times(maximum)} on the venue",
        )
    quantity = smallest_order(instrument)
    value = quantity * instrument.mark
    at = leverage if leverage is not None else Decimal(1)
    margin = value / at
    smallest = (
        f"smallest order {text(plain(quantity))} ({up(value)} {currency} at the mark "
        f"{text(plain(instrument.mark))})"
    )
    set_to = (
        f"leverage {times(leverage)} (max {times(maximum)}): orders must use it"
        if leverage is not None
        else f"leverage not set on the venue (max {times(maximum)})"
    )
    if value > left:
        return Check(
            subject,
            False,
            f"{smallest} is above the {down(left)} {currency} left of the budget",
            "raise the account's budget in config, or reduce positions and open orders",
        )
    if margin > available:
        return Check(
            subject,
            False,
            f"{smallest} needs {up(margin)} {currency} margin at {times(at)}; "
            f"{down(available)} available",
            f"fund the account with at least {up(margin - available)} {currency} more",
        )
    return Check(subject, True, f"{smallest} fits; {set_to}")


# What to do about a fact the venue reports that is not ok, by the fact's name (the adapter's
# words); any other fact gets the general line.
FACT_FIXES = {
    "agent wallet": "approve this agent wallet for the account's address on this network (the "
    "venue app's API page, or approveAgent signed with the master key), or export the key of "
    "one that is; then qualify again",
    "rate-limit budget": "wait for the venue's budget to refill (its trading volume raises it): "
    "orders and their lookups both need it",
}


def _fact(name: str, value: str, ok: bool) -> Check:
    fix = FACT_FIXES.get(name, "correct it on the venue (docs/venues.md), then qualify again")
    return Check(name, ok, value, fix)
