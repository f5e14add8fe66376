"""finance.order against its venues: preflight, exposure, submit, look up.

Every answer carries what the card and the ledger need: status, fills (quantity, average
price, fees or unknown fee), the reason of a rejection or cancellation, the results of the
protective stop-loss / take-profit orders, each on its own, and the venue and world it
comes from (no surface can show a mock's fill as live).

The runner holds every venue the accounts name (venues/opening.py), each behind the one
`Venue` contract, and sends each call to the order's own venue, never to another: it
answers the capabilities and the filing pre-check per venue, runs each venue's `watch()`
beside the executor, and closes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any

from kernel.problems import FieldProblem
from store import World
from workers.domains.base import ReadingUnavailable
from workers.domains.execution import (
    NOT_SUBMITTED,
    Background,
    Hold,
    Observed,
    Refusal,
    Runner,
    SubmissionUnknown,
    operation_of,
)
from workers.domains.finance.capability import VenueReadings
from workers.domains.finance.preflight import (
    filing_refusal,
    observed_exposure,
    preflight,
    refusal_problem,
)
from workers.domains.finance.schema import EXECUTOR_NAME, EXECUTOR_REVISION, KIND, FinanceOrderV1
from workers.domains.finance.settings import FinanceSettings
from workers.domains.finance.sim.decimals import text
from workers.domains.finance.sim.errors import UnknownAccount, VenueError
from workers.domains.finance.venues.contract import (
    Evidence,
    NeverLanded,
    RecordEvidence,
    Venue,
    VenueAmbiguous,
    VenueUnavailable,
)
from workers.domains.finance.venues.model import (
    TERMINAL,
    Capabilities,
    Role,
    VenueOrder,
    VenueOrderState,
)
from workers.domains.finance.worst_case import order_exposure

if TYPE_CHECKING:  # annotations only: the registry loads no SQLAlchemy (countersign mcp)
    from store import Operation

log = logging.getLogger("countersign.workers")

CLOCK_SKEW_ALLOWANCE = timedelta(seconds=5)
# the filing pre-check weighs the terms alone (precision, minimums, fees), which change
# rarely: a venue may share those reads this long (preflight reads them fresh again)
FILING_OBSERVATION_MAX_AGE = timedelta(seconds=60)
Wake = Callable[[Sequence[str]], Awaitable[None]]
EvidenceOf = Callable[[str], Awaitable[Evidence | None]]
PROTECTIVE_ROLES: tuple[Role, ...] = ("stop_loss", "take_profit")


def _opt(value: Decimal | None) -> str | None:
    return None if value is None else text(value)


def observed(state: VenueOrderState, venue: str) -> Observed:
    """The venue's order (and its protective children) as an outcome."""
    detail: dict[str, Any] = {
        "client_id": state.client_id,
        "filled_qty": text(state.filled_qty),
        "remaining_qty": text(state.remaining_qty),
        "avg_price": _opt(state.avg_price),
        "fee_currency": state.fee_currency,
        "reason": state.reason,
        "venue": venue,
        "world": state.world.value,
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


def never_landed(client_id: str, name: str, world: World, error: NeverLanded) -> Observed:
    """The venue proved the order can never be placed: decisive, nothing to hold."""
    return Observed(
        NOT_SUBMITTED,
        {
            "client_id": client_id,
            "reason": str(error) or "the venue proved the order can never land",
            # nothing is ever re-sent on its own: only a person confirming anew may try again
            "hint": "nothing was placed; propose the order again for a new confirmation",
            "venue": name,
            "world": world.value,
        },
    )


async def _nothing_to_record(client_id: str, evidence: Evidence) -> None:
    """The simulated venue's evidence needs no keeping: its own file is the whole truth."""


async def _no_evidence(client_id: str) -> Evidence | None:
    return None


class FinanceRunner(Runner):
    kind = KIND
    # the sim's, for messages only: which executors run is `runs` (one per open venue)
    executor_name = EXECUTOR_NAME
    executor_revision = EXECUTOR_REVISION

    def __init__(
        self,
        venues: Mapping[str, Venue],
        settings: FinanceSettings,
        *,
        clock: Callable[[], datetime],
        on_dispatched: Callable[[str], None] | None = None,
        wake: Wake | None = None,
        tick_s: float = 1.0,
        record_evidence: RecordEvidence | None = None,
        evidence_of: EvidenceOf | None = None,
    ) -> None:
        if not venues:
            raise ValueError("a finance runner needs at least one venue")
        for name, venue in venues.items():
            if venue.world is not World.SIMULATED and None in (record_evidence, evidence_of):
                # a real venue's request is reconciled from its evidence: unkept, a crash
                # after the request left could be read as "never sent"
                raise ValueError(f"venue {name!r} needs durable evidence (record_evidence)")
        self.venues = dict(venues)
        self.settings = settings
        self.enabled = settings.enabled
        self.clock = clock
        for venue in self.venues.values():
            venue.after_commit = on_dispatched
        self.wake = wake  # None: no venue clock (a test drives the venues itself)
        self.tick_s = tick_s
        self.record_evidence = record_evidence or _nothing_to_record
        self.evidence_of = evidence_of or _no_evidence
        self._prechecks = {name: precheck_reader(venue) for name, venue in self.venues.items()}

    def runs(self, executor_name: str, executor_revision: str) -> bool:
        return any(
            venue.profile.executor == (executor_name, executor_revision)
            for venue in self.venues.values()
        )

    async def capabilities(self) -> VenueReadings:
        """Each venue's capabilities; one that cannot be read holds up only its own
        proposals (VenueReadings.of)."""
        names = list(self.venues)
        results = await asyncio.gather(
            *(self.venues[name].capabilities() for name in names), return_exceptions=True
        )
        read: dict[str, Capabilities] = {}
        failed: dict[str, str] = {}
        for name, result in zip(names, results, strict=True):
            if isinstance(result, Capabilities):
                read[name] = result
            elif isinstance(result, Exception):
                log.warning("reading venue %s's capabilities failed: %s", name, result)
                failed[name] = str(result) or type(result).__name__
            else:  # a BaseException (cancellation) is not a failed read
                raise result
        return VenueReadings(read, failed)

    async def precheck(self, payload: Mapping[str, Any]) -> list[FieldProblem]:
        venue = payload.get("venue")
        check = self._prechecks.get(venue) if isinstance(venue, str) else None
        if check is None:  # intake's capability check refuses it first, by name
            return [
                FieldProblem(
                    "payload.venue",
                    f"venue {venue!r} is not open in this process",
                    f"use one of {', '.join(sorted(self.venues))}",
                )
            ]
        return await check(payload)

    def background(self) -> Sequence[Background]:
        """One clock per venue, so a venue slow to answer never holds up another's."""
        if self.wake is None:
            return ()
        return tuple(partial(self.run_clock, name) for name in self.venues)

    async def run_clock(self, name: str, stop: asyncio.Event) -> None:
        """Venue `name`'s `watch()` once per tick (the sim's matching, a real venue's poll of
        working orders); the operations whose orders changed are looked at at once."""
        assert self.wake is not None
        venue = self.venues[name]
        while not stop.is_set():
            try:
                changed = await venue.watch()
                ids = sorted({o for c in changed if (o := operation_of(c)) is not None})
                if ids:
                    await self.wake(ids)
            except Exception:
                log.exception("watching venue %s failed; retrying", name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.tick_s)

    async def close(self) -> None:
        """Close every venue, even when one fails to (the first failure is raised)."""
        failures: list[BaseException] = []
        for venue in self.venues.values():
            try:
                await venue.close()
            except Exception as error:
                failures.append(error)
        if failures:
            raise failures[0]

    @staticmethod
    def order(op: Operation) -> FinanceOrderV1:
        return FinanceOrderV1.model_validate(op.payload)

    def venue_of(self, order: FinanceOrderV1) -> Venue | None:
        return self.venues.get(order.venue)

    async def prepare(self, op: Operation) -> Refusal | Hold | None:
        order = self.order(op)
        account = self.settings.account(order.account)
        if account is None:
            return Refusal(
                "account_not_configured",
                f"account {order.account!r} is no longer configured",
                "configure the account again, or propose on a configured one",
            )
        venue = self.venue_of(order)
        if venue is None:
            return Refusal(
                "venue_not_open",
                f"venue {order.venue!r} is not open in this process; nothing was sent",
                "configure an account on that venue again, or propose on an open one",
            )
        if (changed := venue_changed(op, order.venue, venue)) is not None:
            return changed
        # an order converted this long before the observation may still be missing from it
        # when the replicas' clocks differ a little: count it (more caution, never less)
        observed_at = self.clock() - CLOCK_SKEW_ALLOWANCE
        try:
            observation = await venue.observe(order.account, [order.instrument])
        except UnknownAccount as error:
            return Refusal("unknown_account", str(error))
        bounded = venue.profile.market_as_bounded_limit
        rejection = preflight(order, observation, now=self.clock(), bounded_market=bounded)
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

    def _venue(self, op: Operation) -> Venue:
        """The venue of a claimed operation: prepare refused any other, so a missing one
        now (the config changed while it was dispatched) is left unknown, never guessed."""
        order = self.order(op)
        venue = self.venue_of(order)
        if venue is None:
            raise SubmissionUnknown(f"venue {order.venue!r} is not open in this process")
        return venue

    async def submit(self, op: Operation, client_id: str) -> Observed:
        venue = self._venue(op)
        order = VenueOrder.from_payload(client_id, self.order(op))
        try:
            submission = await venue.submit(order, self.record_evidence)
        except (VenueError, VenueAmbiguous, VenueUnavailable) as error:
            # it may or may not be placed (a read that failed before anything was recorded or
            # sent is settled by the lookup: no evidence, so it never left)
            raise SubmissionUnknown(str(error)) from error
        if not submission.matches:
            # one client id, two different orders: never act on the other one's result
            raise SubmissionUnknown(f"client id {client_id} already names different terms")
        return observed(submission.order, self.order(op).venue)

    async def lookup(
        self, op: Operation, client_id: str, dispatched_at: datetime | None
    ) -> Observed | None:
        venue, name = self._venue(op), self.order(op).venue
        try:
            state = await venue.lookup(client_id, await self.evidence_of(client_id))
        except NeverLanded as error:
            return never_landed(client_id, name, venue.world, error)
        except (VenueAmbiguous, VenueUnavailable, VenueError) as error:
            raise SubmissionUnknown(f"still unknown: {error}") from error
        return None if state is None else observed(state, name)


def venue_changed(op: Operation, name: str, venue: Venue) -> Refusal | None:
    """The operation was confirmed for another executor or world than venue `name` opened
    now is (the config moved, say, from the emulator to testnet after the click): nothing is
    sent. An operation filed before worlds were recorded has the world its `simulated` flag
    implies."""
    envelope = op.envelope
    confirmed = (envelope.executor_name, envelope.executor_revision)
    world = envelope.world
    if confirmed == venue.profile.executor and world == venue.world:
        return None
    was = f"{confirmed[0]} r{confirmed[1]} · {world.value if world else 'no world'}"
    now = "{} r{}".format(*venue.profile.executor) + f" · {venue.world.value}"
    return Refusal(
        "venue_changed",
        f"confirmed for {was}, but venue {name!r} is now {now}; nothing was sent",
        "propose it again so operators confirm where it will really go",
    )


def precheck_reader(
    venue: Venue,
) -> Callable[[Mapping[str, Any]], Awaitable[list[FieldProblem]]]:
    """The pre-check an order meets at filing (and in the API's dry run), against a fresh
    observation: its problems, [] if it passes. Reads, never sends.

    Only the read may fail for want of the venue (ReadingUnavailable: retry); the check of
    the terms is pure and bounded (preflight.filing_refusal), so an error there is ours, and
    is not dressed up as the venue's."""

    async def precheck(payload: Mapping[str, Any]) -> list[FieldProblem]:
        order = FinanceOrderV1.model_validate(payload)
        try:
            observation = await venue.observe(
                order.account, [order.instrument], max_age=FILING_OBSERVATION_MAX_AGE
            )
        except Exception as error:
            raise ReadingUnavailable(f"the venue could not be observed: {error}") from error
        bounded = venue.profile.market_as_bounded_limit
        rejection = filing_refusal(order, observation, bounded_market=bounded)
        return [] if rejection is None else [refusal_problem(rejection)]

    return precheck
