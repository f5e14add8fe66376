"""finance.order plugged in: `FinanceDomain`, the registration that names its payload
(`schema.py`), settings, runner, venues, checks, words, examples and demo."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kernel.problems import FieldProblem
from store import World
from workers.domains.base import (
    Amount,
    DemoSetup,
    Domain,
    Projection,
    RunnerContext,
    SecretEnv,
    terms,
)
from workers.domains.finance.capability import VenueReadings, capability_problems
from workers.domains.finance.config_checks import account_problems
from workers.domains.finance.demo import demo_setup
from workers.domains.finance.demo import dev_table as demo_table
from workers.domains.finance.examples import EXAMPLES
from workers.domains.finance.runner import FinanceRunner
from workers.domains.finance.schema import (
    EXECUTOR_NAME,
    EXECUTOR_REVISION,
    EXECUTORS,
    KIND,
    MAX_NOTIONAL,
    NETWORK_WORLDS,
    FinanceOrderV1,
)
from workers.domains.finance.settings import FinanceSettings, HyperliquidSettings
from workers.domains.finance.sim.listing import venue_orders_text
from workers.domains.finance.venues.model import LOCAL_WORLDS, Capabilities
from workers.domains.finance.venues.opening import open_venues, venue_names
from workers.domains.finance.words import OUTCOMES, WORDS
from workers.domains.finance.worst_case import worst_case_notional


def _hyperliquid(settings: FinanceSettings) -> HyperliquidSettings:
    # without its table the venue cannot open (config_problems): its default network
    return settings.hyperliquid or HyperliquidSettings()


def _venue_capabilities(order: FinanceOrderV1, capabilities: object) -> object:
    """The order's own venue's capabilities (None: not known)."""
    if isinstance(capabilities, VenueReadings):
        return capabilities.read.get(order.venue)
    return capabilities


def _mark(order: FinanceOrderV1, capabilities: object) -> Decimal | None:
    """The instrument's mark as the order's venue reported it for this proposal (None: not
    known)."""
    marks = getattr(_venue_capabilities(order, capabilities), "marks", None) or {}
    mark = marks.get(order.instrument)
    return None if mark is None else Decimal(mark)


class FinanceDomain(Domain[FinanceOrderV1, FinanceSettings]):
    kind = KIND
    config_table = "finance"
    settings_model = FinanceSettings
    payload_models = MappingProxyType({1: FinanceOrderV1})
    executor_name = EXECUTOR_NAME
    executor_revision = EXECUTOR_REVISION
    simulated = True
    words = WORDS
    outcomes = OUTCOMES
    examples = EXAMPLES
    needs_capabilities = True
    moves_amount = True

    def project(self, payload: FinanceOrderV1) -> Projection:
        protective = payload.protective
        return {
            "title": f"{payload.side.upper()} {payload.quantity} {payload.instrument}",
            "terms": terms(
                {
                    "venue": payload.venue,
                    "account": payload.account,
                    "instrument": payload.instrument,
                    "side": payload.side,
                    "quantity": payload.quantity,
                    "order_type": payload.order_type,
                    "limit_price": payload.limit_price,
                    "max_slippage_bps": payload.max_slippage_bps,
                    "time_in_force": payload.time_in_force,
                    "reduce_only": payload.reduce_only,
                    "leverage": payload.leverage,
                    "max_fee": f"{payload.max_fee} {payload.fee_currency}",
                    "stop_loss": protective.stop_loss if protective else None,
                    "take_profit": protective.take_profit if protective else None,
                }
            ),
            # a real venue's order: `preconditions` sets it from its network
            "simulated": payload.venue == "sim",
        }

    def world(self, payload: FinanceOrderV1, settings: FinanceSettings) -> World | None:
        if payload.venue == "sim":
            return World.SIMULATED
        if payload.venue == "hyperliquid":
            return NETWORK_WORLDS[_hyperliquid(settings).network]
        return None  # no such venue: the capability check refuses it

    def worlds(self, settings: FinanceSettings) -> Sequence[World]:
        """The worlds of the venues the configured accounts are on (the simulated venue's
        when none is configured: it opens with its default account)."""
        found = []
        for name in venue_names(settings):
            if name == "sim":
                found.append(World.SIMULATED)
            elif name == "hyperliquid":
                found.append(NETWORK_WORLDS[_hyperliquid(settings).network])
        return list(dict.fromkeys(found))

    def executor(self, payload: FinanceOrderV1, settings: FinanceSettings) -> tuple[str, str]:
        return EXECUTORS.get(payload.venue, (payload.venue, "1"))

    def preconditions(
        self, payload: FinanceOrderV1, settings: FinanceSettings, reading: object
    ) -> Projection:
        """A real venue's order shows its network beside the terms (bound into the digest)
        and is "simulated" only if nothing leaves this machine (the emulator)."""
        if payload.venue != "hyperliquid":
            return {}
        network = _hyperliquid(settings).network
        world = NETWORK_WORLDS[network]
        return {"terms": terms({"network": network}), "simulated": world in LOCAL_WORLDS}

    def target_ref(self, payload: FinanceOrderV1) -> str:
        return f"account:{payload.venue}/{payload.account}"

    async def open_runner(
        self, settings: FinanceSettings, context: RunnerContext
    ) -> FinanceRunner | None:
        """The runner and every venue the accounts name (venues/opening.py). It opens even
        with finance disabled: orders claimed before are still reconciled, on the venues
        that have state; disabled, it creates none (no simulated venue file appears)."""
        enabled = self.enabled(settings)
        venues = await open_venues(
            settings, context.environ, context.clock, create=enabled, absent_ok=not enabled
        )
        if not venues:  # disabled, and no venue ever held an order here: nothing to run
            return None
        try:
            return FinanceRunner(
                venues,
                settings,
                clock=context.clock,
                on_dispatched=context.on_dispatched,
                wake=context.wake,
                tick_s=context.tick_s,
                record_evidence=context.record_evidence,
                evidence_of=context.evidence_of,
            )
        except BaseException:
            for venue in venues.values():
                await venue.close()
            raise

    def admit(self, payload: FinanceOrderV1, settings: FinanceSettings) -> list[FieldProblem]:
        account = settings.account(payload.account)
        if account is None:
            known = ", ".join(a.name for a in settings.accounts) or "none configured"
            return [
                FieldProblem(
                    "payload.account",
                    f"no finance account {payload.account!r}",
                    f"use a configured account ({known})",
                )
            ]
        problems = []
        if account.venue != payload.venue:
            problems.append(
                FieldProblem(
                    "payload.venue",
                    f"account {account.name!r} is on venue {account.venue!r}",
                    f'set venue to "{account.venue}"',
                )
            )
        return problems

    def capability_problems(
        self, payload: FinanceOrderV1, capabilities: object
    ) -> list[FieldProblem]:
        # the runner's, read for this proposal: per venue (VenueReadings.of raises
        # ReadingUnavailable when this order's venue could not be read)
        if not isinstance(capabilities, Capabilities | VenueReadings):
            raise TypeError(f"{type(capabilities).__name__} is not the venue's capabilities")
        problems = capability_problems(payload, capabilities)
        value = worst_case_notional(payload, _mark(payload, capabilities))
        if value is not None and value >= MAX_NOTIONAL:
            problems.append(
                FieldProblem(
                    "payload.quantity",
                    f"the order's worst-case notional ({value:.3e}) is at or above the "
                    f"largest amount countersign takes ({MAX_NOTIONAL:.0e})",
                    "propose a smaller quantity (or a lower limit price)",
                )
            )
        return problems

    def notional(
        self, payload: FinanceOrderV1, settings: FinanceSettings, capabilities: object
    ) -> Amount | None:
        """Quantity times the highest price the order can fill at (worst_case.py, for every
        side and type), at the venue's mark read for this proposal, in the account's
        currency; unknown when that price needs a mark the venue did not report."""
        account = settings.account(payload.account)
        currency = account.currency if account is not None else payload.fee_currency
        return Amount(worst_case_notional(payload, _mark(payload, capabilities)), currency)

    def policy(self, settings: FinanceSettings) -> dict[str, Any]:
        """The accounts (their budgets and where they trade) and whether real money may be
        reached; not the venue's file, faults or timings, which decide nobody's rights."""
        hyperliquid = settings.hyperliquid
        return {
            "enabled": settings.enabled,
            "accounts": {
                account.name: account.model_dump(mode="json", exclude={"name", "agent_key_env"})
                for account in settings.accounts
            },
            "hyperliquid": None
            if hyperliquid is None
            else {"network": hyperliquid.network, "allow_mainnet": hyperliquid.allow_mainnet},
        }

    def secret_envs(self, settings: FinanceSettings) -> Sequence[SecretEnv]:
        """Each Hyperliquid account's agent key, by the variable it names: `config check`
        and `run` refuse to start while one is unset; its value is scrubbed from logs."""
        return [
            SecretEnv(
                f"accounts[{i}].agent_key_env",
                account.agent_key_env,
                f"export {account.agent_key_env}=<the private key of the agent wallet approved "
                f"for {account.address or 'the account'}>",
            )
            for i, account in enumerate(settings.accounts)
            if account.venue == "hyperliquid" and account.agent_key_env is not None
        ]

    def config_problems(self, settings: FinanceSettings) -> list[FieldProblem]:
        names = [account.name for account in settings.accounts]
        return [
            FieldProblem("accounts", f"account {name!r} twice", "rename one")
            for name in sorted({name for name in names if names.count(name) > 1})
        ] + account_problems(settings)

    def demo(self, chats: Mapping[str, str], workdir: Path) -> DemoSetup:
        return demo_setup(workdir)

    def dev_table(self, chats: Mapping[str, str], data_dir: Path) -> Mapping[str, object]:
        return demo_table(data_dir)

    async def venue_orders(
        self, settings: FinanceSettings, *, as_json: bool, account: str | None
    ) -> str:
        """The orders the simulated venue holds, as `countersign venue orders` prints them
        (FileNotFoundError: the bot never ran, so there is no venue state yet)."""
        path = Path(settings.venue_path)
        return await venue_orders_text(path, as_json=as_json, account=account)
