"""Pure checks of an order against a fresh venue observation, and its exposure.

Nothing here changes an order: anything that would need a value outside what the operator
confirmed (a price off tick, a quantity off lot, below the minimum) refuses it, with a hint
to propose anew. Quantities are never rounded. The same terms check runs twice: at filing
(`filing_refusal`, so nothing confirmable can never run) and after the claim (`preflight`,
which adds the account's state and is the last check before anything is sent). Prices are
weighed at their worst case (worst_case.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, localcontext

from store.problems import FieldProblem
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.sim.model import Instrument, Observation
from workers.domains.finance.worst_case import WIDE, worst_case_fee

OBSERVATION_MAX_AGE = timedelta(seconds=5)
SUPPORTED_MODES = frozenset({"one_way"})


@dataclass(frozen=True)
class PreflightRejection:
    code: str
    reason: str
    hint: str = "propose a new order with corrected terms"


def _multiple(value: Decimal, step: Decimal) -> bool:
    return value % step == 0


def preflight(
    order: FinanceOrderV1,
    observation: Observation,
    *,
    now: datetime,
    max_age: timedelta = OBSERVATION_MAX_AGE,
) -> PreflightRejection | None:
    """The first reason this order cannot run exactly as confirmed, or None."""
    if not observation.complete:
        return PreflightRejection(
            "observation_incomplete",
            "the venue could not report the whole account",
            "try again once the venue answers fully; nothing was sent",
        )
    if now - observation.observed_at > max_age:
        return PreflightRejection(
            "observation_stale", "the account observation is too old", "retry"
        )
    if observation.account_mode not in SUPPORTED_MODES:
        return PreflightRejection(
            "unsupported_mode", f"account mode {observation.account_mode!r} is not supported"
        )
    instrument = observation.instruments.get(order.instrument)
    if instrument is None:
        return unlisted(order)
    if (refused := terms_refusal(order, instrument)) is not None:
        return refused
    if order.reduce_only:
        quantity = Decimal(order.quantity)
        position = observation.positions.get(order.instrument)
        held = position.qty if position else Decimal(0)
        reduces = (order.side == "sell" and held >= quantity) or (
            order.side == "buy" and -held >= quantity
        )
        if not reduces:
            return PreflightRejection(
                "reduce_only_would_increase",
                "a reduce-only order larger than the position it reduces",
            )
    return None


def unlisted(order: FinanceOrderV1) -> PreflightRejection:
    return PreflightRejection(
        "unknown_instrument", f"{order.instrument} is not listed on the venue"
    )


def filing_refusal(order: FinanceOrderV1, observation: Observation) -> PreflightRejection | None:
    """What the pre-check refuses at filing, against a fresh observation: the terms alone
    (`terms_refusal`). The account's state (the budget, a reduce-only order's position) is
    left to the claim: it may change before anyone confirms, and only then is it known."""
    instrument = observation.instruments.get(order.instrument)
    return unlisted(order) if instrument is None else terms_refusal(order, instrument)


def terms_refusal(order: FinanceOrderV1, instrument: Instrument) -> PreflightRejection | None:
    """The first reason the venue could never take this order as confirmed (lot, minimum,
    tick, leverage, fee currency, the fee cap at the instrument's mark), or None. Pure."""
    with localcontext(WIDE):  # a remainder of bounded terms and venue steps is exact here
        return _terms_refusal(order, instrument)


def _terms_refusal(order: FinanceOrderV1, instrument: Instrument) -> PreflightRejection | None:
    quantity = Decimal(order.quantity)
    if not _multiple(quantity, instrument.lot):
        return PreflightRejection(
            "quantity_off_lot",
            f"quantity {order.quantity} is not a multiple of the lot {instrument.lot}",
        )
    if quantity < instrument.min_qty:
        return PreflightRejection(
            "below_minimum",
            f"quantity {order.quantity} is below the minimum {instrument.min_qty}",
            "propose at least the minimum; the quantity is never rounded up",
        )
    if order.limit_price is not None and not _multiple(Decimal(order.limit_price), instrument.tick):
        return PreflightRejection(
            "price_off_tick",
            f"limit price {order.limit_price} is not a multiple of the tick {instrument.tick}",
        )
    if order.protective is not None:
        for name in ("stop_loss", "take_profit"):
            price = getattr(order.protective, name)
            if price is not None and not _multiple(Decimal(price), instrument.tick):
                return PreflightRejection(
                    "protective_off_tick",
                    f"{name} {price} is not a multiple of the tick {instrument.tick}",
                )
    if Decimal(order.leverage) > instrument.max_leverage:
        return PreflightRejection(
            "leverage_above_max",
            f"leverage {order.leverage} is above the venue's {instrument.max_leverage}",
        )
    if order.fee_currency != instrument.fee_currency:
        return PreflightRejection(
            "fee_currency_mismatch",
            f"fees are charged in {instrument.fee_currency}, not {order.fee_currency}",
        )
    if worst_case_fee(order, instrument) > Decimal(order.max_fee):
        return PreflightRejection(
            "fee_cap_too_low",
            f"the fee could reach {worst_case_fee(order, instrument)} {instrument.fee_currency}, "
            f"above the confirmed cap {order.max_fee}",
            "propose with a higher max_fee or a smaller quantity",
        )
    return None


def observed_exposure(observation: Observation) -> Decimal:
    """Positions at the mark plus the remaining notional of open (non-protective) orders."""
    total = Decimal(0)
    for position in observation.positions.values():
        instrument = observation.instruments.get(position.instrument)
        mark = instrument.mark if instrument else position.avg_price
        total += abs(position.qty) * mark
    for order in observation.open_orders:
        if order.role != "order":
            continue  # protective children only ever reduce
        instrument = observation.instruments.get(order.instrument)
        price = (
            order.price
            if order.price is not None
            else (instrument.mark if instrument else Decimal(0))
        )
        total += order.remaining_qty * price
    return total


# The payload field each refusal is about: what a proposer changes to pass it. Refusals of
# the venue's own state (an observation incomplete or stale, an unsupported mode) have none.
REFUSAL_FIELDS = {
    "unknown_instrument": "payload.instrument",
    "quantity_off_lot": "payload.quantity",
    "below_minimum": "payload.quantity",
    "price_off_tick": "payload.limit_price",
    "protective_off_tick": "payload.protective",
    "leverage_above_max": "payload.leverage",
    "fee_currency_mismatch": "payload.fee_currency",
    "fee_cap_too_low": "payload.max_fee",
    "reduce_only_would_increase": "payload.reduce_only",
}


def refusal_problem(rejection: PreflightRejection) -> FieldProblem:
    """A pre-check refusal as the API names a field problem (`$` when no field is at fault)."""
    field = REFUSAL_FIELDS.get(rejection.code, "$")
    return FieldProblem(field, f"{rejection.code}: {rejection.reason}", rejection.hint)
