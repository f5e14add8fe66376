"""Pure checks of an order against a fresh venue observation, and its exposure.

Nothing here changes an order: anything that would need a value outside what the operator
confirmed (a price off tick or too precise, a quantity off lot, below the minimum quantity or
notional, a leverage the account is not set to) refuses it, with a hint to propose anew.
Quantities and prices are never rounded, leverage is never changed as a side effect. The same terms check runs twice: at filing
(`filing_refusal`, so nothing confirmable can never run) and after the claim (`preflight`,
which adds the account's state and is the last check before anything is sent). Prices are
weighed at their worst case (worst_case.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, localcontext

from kernel.display import money
from kernel.problems import FieldProblem
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.venues.model import Instrument, Observation
from workers.domains.finance.venues.pricing import BPS, bounded_market_price, too_precise
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
    bounded_market: bool = False,
) -> PreflightRejection | None:
    """The first reason this order cannot run exactly as confirmed, or None.
    `bounded_market`: the venue sends a market order as an IOC limit at its slippage bound
    (its profile's `market_as_bounded_limit`)."""
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
    if (refused := terms_refusal(order, instrument, bounded_market=bounded_market)) is not None:
        return refused
    set_to = observation.leverage.get(order.instrument)
    if set_to is not None and set_to != Decimal(order.leverage):
        return PreflightRejection(
            "leverage_mismatch",
            f"the account is set to {set_to}x on {order.instrument}, not the confirmed "
            f"{order.leverage}x; countersign never changes leverage as a side effect",
            f"change the leverage to {order.leverage}x on the venue, or propose the order "
            f"at {set_to}x",
        )
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


def filing_refusal(
    order: FinanceOrderV1, observation: Observation, *, bounded_market: bool = False
) -> PreflightRejection | None:
    """What the pre-check refuses at filing, against a fresh observation: the terms alone
    (`terms_refusal`). The account's state (the budget, a reduce-only order's position, its
    leverage) is left to the claim: it may change before anyone confirms, and only then is
    it known."""
    instrument = observation.instruments.get(order.instrument)
    if instrument is None:
        return unlisted(order)
    return terms_refusal(order, instrument, bounded_market=bounded_market)


def terms_refusal(
    order: FinanceOrderV1, instrument: Instrument, *, bounded_market: bool = False
) -> PreflightRejection | None:
    """The first reason the venue could never take this order as confirmed (lot, minimum
    quantity, tick, significant figures, minimum notional, leverage, fee currency, the fee
    cap at the instrument's mark), or None. Pure."""
    with localcontext(WIDE):  # a remainder of bounded terms and venue steps is exact here
        return _terms_refusal(order, instrument) or _price_refusal(
            order, instrument, bounded_market
        )


def _lowest_price(order: FinanceOrderV1, instrument: Instrument) -> Decimal:
    """The lowest price per unit the order can be sent at: its limit, or for a market order
    the mark (a buy) or the mark less its slippage bound (a sell)."""
    if order.limit_price is not None:
        return Decimal(order.limit_price)
    if order.side == "buy":
        return instrument.mark
    return instrument.mark * (BPS - Decimal(order.max_slippage_bps or 0)) / BPS


def _price_refusal(
    order: FinanceOrderV1, instrument: Instrument, bounded_market: bool
) -> PreflightRejection | None:
    """The rules of a venue whose prices are more than a tick (significant figures, a
    minimum notional, market orders sent as bounded limits)."""
    if order.limit_price is not None and too_precise(Decimal(order.limit_price), instrument):
        return PreflightRejection(
            "price_too_precise",
            f"limit price {order.limit_price} has more than {instrument.sig_figs} significant "
            "figures, which the venue refuses (a whole number is always taken); it is never "
            "rounded",
            "propose a new order at a price the venue takes",
        )
    if order.protective is not None:
        for name in ("stop_loss", "take_profit"):
            price = getattr(order.protective, name)
            if price is not None and too_precise(Decimal(price), instrument):
                return PreflightRejection(
                    "protective_too_precise",
                    f"{name} {price} has more than {instrument.sig_figs} significant figures, "
                    "which the venue refuses; it is never rounded",
                    "propose a new order with protective prices the venue takes",
                )
    lowest = _lowest_price(order, instrument)
    if bounded_market and order.order_type == "market":
        bps = Decimal(order.max_slippage_bps or 0)
        sent = bounded_market_price(order.side, instrument.mark, bps, instrument)
        if sent is None:
            return PreflightRejection(
                "market_unpriceable",
                f"no price the venue takes lies within {bps} bps of the mark "
                f"{instrument.mark}, so the market order cannot be sent inside its bound",
                "propose a limit order, or a wider slippage bound",
            )
        lowest = min(lowest, sent)  # the venue weighs the limit it is sent at
    if instrument.min_notional is not None and Decimal(order.quantity) * lowest < (
        instrument.min_notional
    ):
        return PreflightRejection(
            "below_minimum_notional",
            f"quantity {order.quantity} at {lowest} is worth less than the venue's minimum "
            f"of {instrument.min_notional} per order; it is never rounded up",
            "propose a new order worth at least the minimum",
        )
    return None


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
            # as a person reads an amount: "27.00 USDC", not "27.0000000" (kernel/display.py)
            f"the fee could reach {money(worst_case_fee(order, instrument), instrument.fee_currency)}"
            f", above the confirmed cap {money(order.max_fee, instrument.fee_currency)}",
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
    "price_too_precise": "payload.limit_price",
    "protective_off_tick": "payload.protective",
    "protective_too_precise": "payload.protective",
    "below_minimum_notional": "payload.quantity",
    "market_unpriceable": "payload.max_slippage_bps",
    "leverage_mismatch": "payload.leverage",
    "leverage_above_max": "payload.leverage",
    "fee_currency_mismatch": "payload.fee_currency",
    "fee_cap_too_low": "payload.max_fee",
    "reduce_only_would_increase": "payload.reduce_only",
}


def refusal_problem(rejection: PreflightRejection) -> FieldProblem:
    """A pre-check refusal as the API names a field problem (`$` when no field is at fault)."""
    field = REFUSAL_FIELDS.get(rejection.code, "$")
    return FieldProblem(field, f"{rejection.code}: {rejection.reason}", rejection.hint)
