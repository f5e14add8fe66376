"""finance.order payload, schema version 1."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, StringConstraints, model_validator

from store.problems import FieldProblem
from workers.domains.base import Amount, Notice, terms
from workers.domains.finance.capability import capability_problems
from workers.domains.finance.settings import FinanceSettings
from workers.domains.finance.worst_case import worst_case_notional
from workers.domains.types import Name, NonNegativeDecimal, PositiveDecimal, StrictModel

Instrument = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{1,20}(-[A-Z0-9]{1,20}){0,3}$")]
Currency = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{2,12}$")]
MAX_SLIPPAGE_BPS = Decimal(10_000)  # 100 %: a market sell bounded further would fill at <= 0
# The largest worst-case notional an order may have (in its account's currency): far above
# any budget, and small enough that its amounts print and store exactly (Amount.text).
MAX_NOTIONAL = Decimal(10) ** 18


def _within_slippage_bound(value: str) -> str:
    if Decimal(value) > MAX_SLIPPAGE_BPS:
        raise ValueError(f"is above {MAX_SLIPPAGE_BPS} (100 %); send a bound of at most 10000")
    return value


SlippageBps = Annotated[NonNegativeDecimal, AfterValidator(_within_slippage_bound)]


class Protective(StrictModel):
    stop_loss: PositiveDecimal | None = None
    take_profit: PositiveDecimal | None = None

    @model_validator(mode="after")
    def _at_least_one(self) -> Self:
        if self.stop_loss is None and self.take_profit is None:
            raise ValueError("protective needs stop_loss, take_profit or both; or leave it out")
        return self


class FinanceOrderV1(StrictModel):
    venue: Name
    account: Name
    instrument: Instrument
    side: Literal["buy", "sell"]
    quantity: PositiveDecimal
    order_type: Literal["limit", "market"]
    limit_price: PositiveDecimal | None = None
    max_slippage_bps: SlippageBps | None = None
    time_in_force: Literal["GTC", "IOC", "FOK", "POST_ONLY"]
    reduce_only: bool = False
    leverage: PositiveDecimal
    max_fee: NonNegativeDecimal
    fee_currency: Currency
    protective: Protective | None = None

    @model_validator(mode="after")
    def _price_matches_type(self) -> Self:
        if self.order_type == "limit":
            if self.limit_price is None:
                raise ValueError("a limit order needs limit_price")
            if self.max_slippage_bps is not None:
                raise ValueError("max_slippage_bps is for market orders; remove it or use market")
        else:
            if self.max_slippage_bps is None:
                raise ValueError("a market order needs max_slippage_bps (its slippage bound)")
            if self.limit_price is not None:
                raise ValueError("limit_price is for limit orders; remove it or use limit")
            if self.time_in_force == "POST_ONLY":
                raise ValueError("POST_ONLY needs a limit order")
        return self


def _mark(order: FinanceOrderV1, capabilities: Any) -> Decimal | None:
    """The instrument's mark as the adapter reported it for this proposal (None: not known)."""
    marks = getattr(capabilities, "marks", None) or {}
    mark = marks.get(order.instrument)
    return None if mark is None else Decimal(mark)


class FinanceDomain:
    kind = "finance.order"
    executor_name = "sim-venue"
    executor_revision = "1"
    simulated = True
    supersedes_open_drafts = False
    free_text_fields: frozenset[str] = frozenset()
    needs_capabilities = True

    def schema(self, version: int) -> type[BaseModel] | None:
        return FinanceOrderV1 if version == 1 else None

    def project(self, payload: BaseModel) -> dict[str, Any]:
        assert isinstance(payload, FinanceOrderV1)
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
            "simulated": self.simulated,
        }

    def target_ref(self, payload: BaseModel) -> str:
        assert isinstance(payload, FinanceOrderV1)
        return f"account:{payload.venue}/{payload.account}"

    def admit(self, payload: BaseModel, settings: Any) -> list[FieldProblem]:
        assert isinstance(payload, FinanceOrderV1) and isinstance(settings, FinanceSettings)
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

    def capability_problems(self, payload: BaseModel, capabilities: Any) -> list[FieldProblem]:
        assert isinstance(payload, FinanceOrderV1)
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

    def notional(self, payload: BaseModel, settings: Any, capabilities: Any) -> Amount | None:
        """Quantity times the highest price the order can fill at (worst_case.py, for every
        side and type), at the venue's mark read for this proposal, in the account's
        currency; unknown when that price needs a mark the venue did not report."""
        assert isinstance(payload, FinanceOrderV1) and isinstance(settings, FinanceSettings)
        account = settings.account(payload.account)
        currency = account.currency if account is not None else payload.fee_currency
        return Amount(worst_case_notional(payload, _mark(payload, capabilities)), currency)

    def filing_receipt(self, payload: BaseModel, settings: Any) -> Notice | None:
        return None  # the card in the audience's chat is the only word of an order

    def preconditions(self, payload: BaseModel, settings: Any, reading: Any) -> dict[str, Any]:
        return {}  # an order is checked against capabilities instead

    def auto_send_after_s(self, payload: BaseModel) -> int | None:
        return None  # an order always waits for a person
