"""finance.order against the simulated venue: preflight, exposure, submit, look up.

Every answer carries what the card and the ledger need: status, fills (quantity, average
price, fees or unknown fee), the reason of a rejection or cancellation, and the results
of the protective stop-loss / take-profit orders, each on its own.

The runner owns its venue (`open_venue`, from the settings): it answers the capabilities and
the filing pre-check from it, runs its matching clock beside the executor, and closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from store.problems import FieldProblem
from store.records import Operation
from workers.domains.base import Background, ReadingUnavailable
from workers.domains.execution import (
    Hold,
    Observed,
    Refusal,
    Runner,
    SubmissionUnknown,
    operation_of,
)
from workers.domains.finance.preflight import (
    filing_refusal,
    observed_exposure,
    preflight,
    refusal_problem,
)
from workers.domains.finance.schema import FinanceDomain, FinanceOrderV1
from workers.domains.finance.settings import FinanceSettings
from workers.domains.finance.sim.decimals import text
from workers.domains.finance.sim.errors import UnknownAccount, VenueError
from workers.domains.finance.sim.faults import Faults
from workers.domains.finance.sim.model import (
    TERMINAL,
    Capabilities,
    Role,
    VenueOrder,
    VenueOrderState,
)
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.worst_case import order_exposure

log = logging.getLogger("countersign.workers")

CLOCK_SKEW_ALLOWANCE = timedelta(seconds=5)
FAULTS_ENV = "COUNTERSIGN_SIM_FAULTS"
Wake = Callable[[Sequence[str]], Awaitable[None]]
PROTECTIVE_ROLES: tuple[Role, ...] = ("stop_loss", "take_profit")


def _opt(value: Decimal | None) -> str | None:
    return None if value is None else text(value)


def observed(state: VenueOrderState) -> Observed:
    """The venue's order (and its protective children) as an outcome."""
    detail: dict[str, Any] = {
        "client_id": state.client_id,
        "filled_qty": text(state.filled_qty),
        "remaining_qty": text(state.remaining_qty),
        "avg_price": _opt(state.avg_price),
        "fee_currency": state.fee_currency,
        "reason": state.reason,
    }
    if state.filled_qty > 0:
        detail["fees"] = _opt(state.fees)  # None: the venue reported no fee (unknown, not 0)
    children = [
        {
            "role": child.role,
            "client_id": child.client_id,
            "status": child.status,
            "trigger_price": _opt(child.trigger_price),
            "filled_qty": text(child.filled_qty),
            "avg_price": _opt(child.avg_price),
            "reason": child.reason,
        }
        for role in PROTECTIVE_ROLES
        if (child := state.child(role)) is not None
    ]
    if children:
        detail["protective"] = children
    working = state.status not in TERMINAL or any(
        child["status"] not in TERMINAL for child in children
    )
    return Observed(
        status=state.status,
        detail=detail,
        working=working,
        holds_exposure=state.filled_qty > 0 or state.status not in TERMINAL,
        concludes=state.status in TERMINAL,
    )


async def open_venue(
    settings: FinanceSettings, environ: Mapping[str, str], clock: Callable[[], datetime]
) -> SimVenue:
    """The simulated venue at `settings.venue_path` (created if new), with the faults the
    environment (COUNTERSIGN_SIM_FAULTS) or the settings ask for, and the accounts."""
    path = Path(settings.venue_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    faults = Faults.from_env(environ, default=settings.sim_faults)
    if faults.active:
        log.warning("simulated venue faults on: %s", faults)
    return await SimVenue.open(
        path,
        accounts=[account.name for account in settings.accounts] or None,
        faults=faults,
        clock=clock,
    )


class FinanceRunner(Runner):
    kind = FinanceDomain.kind
    executor_name = FinanceDomain.executor_name
    executor_revision = FinanceDomain.executor_revision

    def __init__(
        self,
        venue: SimVenue,
        settings: FinanceSettings,
        *,
        clock: Callable[[], datetime],
        on_dispatched: Callable[[str], None] | None = None,
        wake: Wake | None = None,
        tick_s: float = 1.0,
    ) -> None:
        self.venue = venue
        self.settings = settings
        self.enabled = settings.enabled
        self.clock = clock
        venue.after_commit = on_dispatched
        self.wake = wake  # None: no matching clock (a test drives the venue itself)
        self.tick_s = tick_s
        self._precheck = precheck_reader(venue)

    async def capabilities(self) -> Capabilities:
        return await self.venue.capabilities()

    async def precheck(self, payload: Mapping[str, Any]) -> list[FieldProblem]:
        return await self._precheck(payload)

    def background(self) -> Sequence[Background]:
        return () if self.wake is None else (self.run_clock,)

    async def run_clock(self, stop: asyncio.Event) -> None:
        """The venue's matching, once per tick; the operations whose orders changed are
        looked at at once (`wake`)."""
        assert self.wake is not None
        while not stop.is_set():
            try:
                changed = await self.venue.tick()
                ids = sorted({o for s in changed if (o := operation_of(s.client_id)) is not None})
                if ids:
                    await self.wake(ids)
            except Exception:
                log.exception("venue tick failed; retrying")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.tick_s)

    async def close(self) -> None:
        await self.venue.close()

    @staticmethod
    def order(op: Operation) -> FinanceOrderV1:
        return FinanceOrderV1.model_validate(op.payload)

    async def prepare(self, op: Operation) -> Refusal | Hold | None:
        order = self.order(op)
        account = self.settings.account(order.account)
        if account is None:
            return Refusal(
                "account_not_configured",
                f"account {order.account!r} is no longer configured",
                "configure the account again, or propose on a configured one",
            )
        # an order converted this long before the observation may still be missing from it
        # when the replicas' clocks differ a little: count it (more caution, never less)
        observed_at = self.clock() - CLOCK_SKEW_ALLOWANCE
        try:
            observation = await self.venue.observe(order.account)
        except UnknownAccount as error:
            return Refusal("unknown_account", str(error))
        rejection = preflight(order, observation, now=self.clock())
        if rejection is not None:
            return Refusal(rejection.code, rejection.reason, rejection.hint)
        instrument = observation.instruments[order.instrument]
        return Hold(
            account=order.account,
            amount=order_exposure(order, instrument),
            budget=Decimal(account.budget),
            observed=observed_exposure(observation),
            observed_at=observed_at,
        )

    async def submit(self, op: Operation, client_id: str) -> Observed:
        order = VenueOrder.from_payload(client_id, self.order(op))
        try:
            submission = await self.venue.submit(order)
        except VenueError as error:  # timeout, response lost: it may or may not be placed
            raise SubmissionUnknown(str(error)) from error
        if not submission.matches:
            # one client id, two different orders: never act on the other one's result
            raise SubmissionUnknown(f"client id {client_id} already names different terms")
        return observed(submission.order)

    async def lookup(
        self, op: Operation, client_id: str, dispatched_at: datetime | None
    ) -> Observed | None:
        state = await self.venue.lookup(client_id)
        return None if state is None else observed(state)


def precheck_reader(
    venue: SimVenue,
) -> Callable[[Mapping[str, Any]], Awaitable[list[FieldProblem]]]:
    """The pre-check an order meets at filing (and in the API's dry run), against a fresh
    observation: its problems, [] if it passes. Reads, never sends.

    Only the read may fail for want of the venue (ReadingUnavailable: retry); the check of
    the terms is pure and bounded (preflight.filing_refusal), so an error there is ours, and
    is not dressed up as the venue's."""

    async def precheck(payload: Mapping[str, Any]) -> list[FieldProblem]:
        order = FinanceOrderV1.model_validate(payload)
        try:
            observation = await venue.observe(order.account)
        except Exception as error:
            raise ReadingUnavailable(f"the venue could not be observed: {error}") from error
        rejection = filing_refusal(order, observation)
        return [] if rejection is None else [refusal_problem(rejection)]

    return precheck
